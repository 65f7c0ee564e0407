#!/usr/bin/env bash
# The firmware's footprint from its link map (make mcu-size): flash
# (.text, .rodata, .ARM.exidx and .data's initial values) and RAM (.data,
# .bss and the main stack), each split by the part it belongs to:
#   engine    src/smr.c, smr_auth.c, smr_admit.c, and the engine's context
#             and admission table (struct smr_ctx and struct smr_admit,
#             which live inside the raw backend's state; sizes from the
#             object's debug information)
#   backend   src/smr_lwip_raw.c (the rest of its state: pcbs, held input,
#             peers, the UDP buffer) and src/smr_netif.c (the netif glue)
#   driver    mcu/smr_nic_stellaris.c
#   board     mcu/startup.c (vectors, reset) and mcu/smr_mcu.c (main,
#             clock, console, provisioning)
#   lwIP      lwIP 2.1.3's core, IPv4 and Ethernet (pools and heap included)
#   libc      picolibc and libgcc (memcpy, 64-bit division)
#   padding   alignment gaps between the parts
#   stack     the main stack (lm3s6965.ld)
# and fails (exit 1) when flash or RAM is past the budget.
# Usage: mcu/size.sh MAP FLASH-BYTES RAM-BYTES
set -euo pipefail
map=$1 flash_max=$2 ram_max=$3
obj=$(dirname "$map")/obj/smr/smr_lwip_raw.o
struct_size() {
    arm-none-eabi-objdump --dwarf=info "$obj" | awk -v want="$1" '
        /DW_TAG_structure_type/ { s = 1; next }
        s && /DW_AT_name/ { s = ($NF == want) ? 2 : 0; next }
        s == 2 && /DW_AT_byte_size/ && !done { print $NF; done = 1 }'
}
ctx=$(struct_size smr_ctx)
adm=$(struct_size smr_admit)
[ -n "$ctx" ] && [ -n "$adm" ] || { echo "mcu-size: no struct sizes in $obj" >&2; exit 1; }
awk -v flash_max="$flash_max" -v ram_max="$ram_max" -v engine_state=$((ctx + adm)) '
function hex(h,   i, v) {
    v = 0
    h = tolower(substr(h, 3))
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v
}
function part(f) {
    if (f == "fill") return "padding"
    if (f ~ /\/obj\/lwip\//) return "lwIP"
    if (f ~ /\/(smr|smr_auth|smr_admit)\.o$/) return "engine"
    if (f ~ /\/(smr_lwip_raw|smr_netif)\.o$/) return "backend"
    if (f ~ /\/smr_nic_stellaris\.o$/) return "driver"
    if (f ~ /\/(startup|smr_mcu)\.o$/) return "board"
    if (f ~ /lib(c|gcc)\.a/) return "libc"
    return "other"
}
function add(sec, size, f,   p) {
    p = part(f)
    if (sec == ".text" || sec == ".rodata" || sec == ".ARM.exidx") flash[p] += size
    else if (sec == ".data") { flash[p] += size; ram[p] += size }
    else if (sec == ".bss") {
        ram[p] += size
        if (name == ".bss.smr_r") { ram["backend"] -= engine_state; ram["engine"] += engine_state }
    }
}
/^\.[A-Za-z_.]+/ {
    out = $1; pending = ""
    if (NF >= 3 && $2 ~ /^0x/) {
        if (out == ".stack") ram["stack"] += hex($3)
        if (out ~ /^\.(text|rodata|ARM\.exidx|data)$/) total_flash += hex($3)
        if (out ~ /^\.(data|bss|stack)$/) total_ram += hex($3)
    }
    next
}
/^[^ ]/ { out = ""; next }
out ~ /^\.(text|rodata|ARM\.exidx|data|bss)$/ {
    if ($1 == "*fill*") { if (NF >= 3) add(out, hex($3), "fill"); next }
    if (NF == 1 && $1 ~ /^[.A-Za-z]/) { pending = $1; next }
    if (pending != "" && NF == 3 && $1 ~ /^0x/) { name = pending; add(out, hex($2), $3); pending = ""; next }
    if (NF == 4 && $2 ~ /^0x/) { name = $1; add(out, hex($3), $4) }
    pending = ""
}
END {
    n = split("engine backend driver board lwIP libc padding other stack", order, " ")
    printf "%-8s %10s %10s\n", "part", "flash", "RAM"
    for (i = 1; i <= n; i++) {
        p = order[i]
        if (p == "other" && !flash[p] && !ram[p]) continue
        printf "%-8s %10d %10d\n", p, flash[p], ram[p]
        tf += flash[p]; tr += ram[p]
    }
    # Identical strings of several objects are stored once (SHF_MERGE):
    # the map lists the strings of each object, so the parts add up to more.
    if (tf != total_flash || tr != total_ram) printf "%-8s %10d %10d\n", "merged", total_flash - tf, total_ram - tr
    tf = total_flash; tr = total_ram
    printf "%-8s %10d %10d\n", "total", tf, tr
    printf "%-8s %10d %10d\n", "budget", flash_max, ram_max
    if (tf > flash_max || tr > ram_max) {
        printf "mcu-size: over budget (flash %d of %d, RAM %d of %d bytes)\n", tf, flash_max, tr, ram_max > "/dev/stderr"
        exit 1
    }
}' "$map"
