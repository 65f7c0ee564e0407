#!/usr/bin/env bash
# The Rust firmware's footprint (make -C c-responder mcu-smoltcp-size):
# flash (vector table, .text, .rodata, .data's initial values) and RAM
# (.data, .bss, and what is left above them for the stack), each split by
# the crate its symbols belong to:
#   core      stackmeter_proto: the protocol's session machine, registry
#             (its RAM) and crypto (with sha2/hmac/digest, the secret's
#             HMAC-SHA256)
#   driver    stackmeter_smoltcp: the sockets, the rounds, the glue
#   smoltcp   the TCP/IP stack
#   board     this crate: main, the MAC's driver, console, clock (with
#             link-time optimisation most of the driver and some of
#             smoltcp are inlined into main and counted here)
#   payload   the 8 KiB responses are cut from (flash)
#   heap      the heap the sockets and sessions are made from (RAM)
#   runtime   core, alloc, compiler_builtins, cortex-m(-rt), the allocator
#   other     bytes no symbol names (padding, merged constants)
#   stack     SRAM left above .bss for the main stack
# and fails (exit 1) when flash is past the budget or the stack gets less
# than its floor (memory.x's STACK_MIN; the link already refuses that).
# Usage: firmware/mcu-smoltcp/size.sh ELF FLASH-BYTES RAM-BYTES
set -euo pipefail
elf=$1 flash_max=$2 ram_max=$3
stack_min=$((8 * 1024))
{
    arm-none-eabi-size -A "$elf"
    echo "--symbols--"
    arm-none-eabi-nm --print-size --radix=d -C "$elf"
} | awk -v flash_max="$flash_max" -v ram_max="$ram_max" -v stack_min="$stack_min" '
function part(name,   n) {
    n = name
    sub(/^(<|&|mut |dyn |\(|_<)+/, "", n)
    if (n ~ /^stackmeter_mcu_smoltcp::__cortex_m_rt_main::MEMORY/) return "heap"
    if (n ~ /^stackmeter_mcu_smoltcp::PAYLOAD$/) return "payload"
    if (n ~ /^stackmeter_mcu_smoltcp::REGISTRY$/) return "core"
    if (n ~ /^stackmeter_proto::|^sha2::|^hmac::|^digest::|^block_buffer::/) return "core"
    if (n ~ /^stackmeter_smoltcp::/) return "driver"
    if (n ~ /^smoltcp::/) return "smoltcp"
    if (n ~ /^stackmeter_mcu_smoltcp::/) return "board"
    return "runtime"
}
/^--symbols--$/ { syms = 1; next }
!syms && $1 ~ /^\.(vector_table|text|rodata)$/ { total_flash += $2; next }
!syms && $1 == ".data" { total_flash += $2; total_ram += $2; next }
!syms && ($1 == ".bss" || $1 == ".uninit") { total_ram += $2; next }
syms && NF >= 4 && $2 ~ /^[0-9]+$/ {
    t = $3; size = $2 + 0
    name = $4; for (i = 5; i <= NF; i++) name = name " " $i
    p = part(name)
    if (t ~ /^[TtRr]$/) flash[p] += size
    else if (t ~ /^[Dd]$/) { flash[p] += size; ram[p] += size }
    else if (t ~ /^[Bb]$/) ram[p] += size
}
END {
    n = split("core driver smoltcp board payload heap runtime", order, " ")
    printf "%-8s %10s %10s\n", "part", "flash", "RAM"
    for (i = 1; i <= n; i++) {
        p = order[i]
        printf "%-8s %10d %10d\n", p, flash[p], ram[p]
        tf += flash[p]; tr += ram[p]
    }
    printf "%-8s %10d %10d\n", "other", total_flash - tf, total_ram - tr
    stack = ram_max - total_ram
    printf "%-8s %10d %10d\n", "stack", 0, stack
    printf "%-8s %10d %10d\n", "total", total_flash, ram_max
    printf "%-8s %10d %10d\n", "budget", flash_max, ram_max
    if (total_flash > flash_max || stack < stack_min) {
        printf "mcu-smoltcp-size: over budget (flash %d of %d bytes; %d bytes of SRAM left for the stack, at least %d wanted)\n", total_flash, flash_max, stack, stack_min > "/dev/stderr"
        exit 1
    }
}'
