#!/usr/bin/env bash
# The firmware's footprint from its link map (make mcu-size): flash
# (.text, .rodata, .ARM.exidx and .data's initial values) and RAM (.data,
# .bss and the main stack), each split by the part it belongs to:
#   engine    the engine's files (flags.mk's SMR_ENGINE_SRC: the protocol
#             and admission), and the engine's context and admission table
#             (struct smr_ctx and struct smr_admit, which live inside the
#             raw backend's state; sizes from the object's debug
#             information)
#   backend   the raw API backend (the rest of its state: pcbs, held
#             input, peers, the UDP buffer) and the netif glue
#   driver    the MAC's driver
#   board     vectors, reset, and main (clock, console, provisioning)
#   lwIP      lwIP 2.1.3's core, IPv4 and Ethernet (pools and heap included)
#   libc      picolibc and libgcc (memcpy, 64-bit division)
#   padding   alignment gaps between the parts
#   stack     the main stack (lm3s6965.ld)
# and fails (exit 1) when flash or RAM is past the budget. Which files
# make each part comes from the environment, as mcu/mcu.mk passes
# flags.mk's lists: SMR_PART_ENGINE, SMR_PART_BACKEND, SMR_PART_DRIVER,
# SMR_PART_BOARD, each a list of C file names.
# Usage: mcu/size.sh MAP FLASH-BYTES RAM-BYTES
set -euo pipefail
map=$1 flash_max=$2 ram_max=$3
# A part's files as an awk pattern of their objects: "a.c b.c" -> "/(a|b)\.o$".
objects() {
    local names=${1//.c/}
    [ -n "$names" ] || { echo "mcu-size: SMR_PART_$2 is not set (run it through make mcu-size)" >&2; exit 2; }
    echo "/(${names// /|})\\\\.o\$"
}
engine_re=$(objects "${SMR_PART_ENGINE:-}" ENGINE)
backend_re=$(objects "${SMR_PART_BACKEND:-}" BACKEND)
driver_re=$(objects "${SMR_PART_DRIVER:-}" DRIVER)
board_re=$(objects "${SMR_PART_BOARD:-}" BOARD)
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
awk -v flash_max="$flash_max" -v ram_max="$ram_max" -v engine_state=$((ctx + adm)) \
    -v engine_re="$engine_re" -v backend_re="$backend_re" -v driver_re="$driver_re" -v board_re="$board_re" '
function hex(h,   i, v) {
    v = 0
    h = tolower(substr(h, 3))
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v
}
function part(f) {
    if (f == "fill") return "padding"
    if (f ~ /\/obj\/lwip\//) return "lwIP"
    if (f ~ engine_re) return "engine"
    if (f ~ backend_re) return "backend"
    if (f ~ driver_re) return "driver"
    if (f ~ board_re) return "board"
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
