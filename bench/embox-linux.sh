#!/usr/bin/env bash
# bench/embox-linux.sh - the UDP echo write-up's table again: Embox RTOS
# against GNU/Linux on one (emulated) Cortex-A9 board, as a Markdown
# report on stdout.
#
# Why this exists: the write-up measured a 64-byte UDP echo on a
# DE0-Nano-SoC board, Embox at 0.08 ms and Linux at 0.77 ms on average,
# about 9x; then the effect of real-time priority, and the stack's time
# against the application's from timestamps its driver wrote. This runs
# the same experiment on QEMU's vexpress-a9 (a Cortex-A9 with a LAN9118),
# with the C responder on each system (`stackmeter lab up embox
# linux-a9`: Embox with the responder as a command; Debian's Linux with it
# as a program, at the default priority and, as linux-a9-rt, under
# SCHED_FIFO with its memory locked), and the board's path floor (no
# stack: c-responder/a9/floor, polling, and woken by the NIC's interrupt
# as the two systems are):
#   1. the round-trip table: every target and floor measured in turn,
#      REPEAT rounds of COUNT 64-byte echoes (every payload checked, slow
#      answers over 100 us counted); per target the median over rounds of
#      each figure (min the least, max the most, slow answers summed);
#   2. each system above the floors;
#   3. run until decided: Linux against Embox, and Linux against itself
#      under SCHED_FIFO (the built-in plan embox-linux);
#   4. where a round trip goes: `ping --timestamps` against Embox (its
#      LAN9118 driver stamps the responder's frames, c-responder/a9/embox/
#      stamps) and Linux (SO_TIMESTAMPING in the guest);
#   5. build times, image sizes, RAM.
# Every QEMU is pinned to SERVER_CPU, the client to CLIENT_CPU. A report,
# not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo STACKMETER_EMBOX_SRC=... bash bench/embox-linux.sh > bench/results/DAY-embox-linux.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   COUNT        round trips per measurement (5000)
#   REPEAT       rounds over every target and floor (5)
#   BUDGET       budget of each run until decided (2m)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
#   KEEP_LOGS    1: keep the work directory (0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
COUNT=${COUNT:-5000}
REPEAT=${REPEAT:-5}
BUDGET=${BUDGET:-2m}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
KEEP_LOGS=${KEEP_LOGS:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP devices"
[[ -n ${STACKMETER_EMBOX_SRC:-} ]] || die "STACKMETER_EMBOX_SRC is not set (docs/lab.md, \"Embox and Linux on one Cortex-A9\")"

PIDS=()
TAPS=()
LAB_CLEANUP=boards_down # the floors' QEMUs and TAP devices (lab_done takes the lab down)
lab_work embox-linux

C=$REPO_ROOT/c-responder
note "building Embox, Linux and the board's floors"
make -s -C "$C" embox linux-a9 a9-floor a9-floor-irq >"$WORK/build.log" 2>&1 || die "make: $(tail -3 "$WORK/build.log")"

# floor NAME ELF TAP NET: a floor on its own TAP device, 198.18.NET.2,
# its QEMU stopped (SIGSTOP) until it is measured: the polling floor spins
# its vCPU, and would take the CPU every other target shares.
declare -A FLOOR_PID
floor() {
    local name=$1 elf=$2 tap=$3 net=$4
    board_tap "$tap" "$net"
    ip neigh replace "198.18.$net.2" lladdr "02:53:4d:00:00:$net" dev "$tap" nud permanent
    board_qemu "$name" ready 10 -M vexpress-a9 -m 128M -audiodev none,id=snd0 -kernel "$elf" \
        -device "loader,addr=0x60000000,data=$(printf '0x%02X%02X%02X%02X' 198 18 "$net" 2),data-len=4" \
        -nic "tap,ifname=$tap,script=no,downscript=no,model=lan9118,mac=02:53:4d:00:00:$net"
    FLOOR_PID[$name]=$LAST_PID
    kill -STOP "$LAST_PID"
}
note "the floors (198.18.24.2 polling, 198.18.25.2 woken by interrupts) and lab up embox linux-a9"
floor floor-a9 "$C/a9/build/stackmeter-a9-floor.elf" smfl4 24
floor floor-a9-irq "$C/a9/build/stackmeter-a9-floor-irq.elf" smfl5 25
"$STACKMETER" lab up embox linux-a9 --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" ||
    die "lab up embox linux-a9: $(cat "$WORK/up.err")"
mapfile -t TARGETS <"$WORK/targets"
TARGETS+=(floor-a9=198.18.24.2:24680 floor-a9-irq=198.18.25.2:24680)
addr() { sed -n "s/^$1=//p" "$WORK/targets"; }

note "1. the round-trip table: $REPEAT rounds of $COUNT echoes per target"
for ((r = 1; r <= REPEAT; r++)); do
    for t in "${TARGETS[@]}"; do
        pid=${FLOOR_PID[${t%%=*}]:-}
        [[ -z $pid ]] || { kill -CONT "$pid" && sleep 0.2; }
        rtos_round "${t%%=*}" "${t#*=}"
        [[ -z $pid ]] || kill -STOP "$pid"
    done
done

note "3. until decided: Linux against Embox, then Linux against Linux under SCHED_FIFO (budget $BUDGET each)"
decide() { # NAME A B
    taskset -c "$CLIENT_CPU" "$STACKMETER" suite embox-linux --budget "$BUDGET" \
        --target "$2=$(addr "$2")" --target "$3=$(addr "$3")" --format md >"$WORK/$1.md" 2>"$WORK/$1.err" ||
        note "suite $2 against $3 exited $? (its output is still reported)"
}
decide linux-embox linux-a9 embox
decide linux-rt linux-a9 linux-a9-rt

note "4. where the round trip goes (ping --timestamps, 128 bytes)"
for t in embox linux-a9; do rtos_split "$t" "$(addr "$t")"; done

echo "# Embox against Linux on one emulated Cortex-A9 (QEMU vexpress-a9, LAN9118)"
echo
echo "$(machine_line); every QEMU on CPU $SERVER_CPU, the client on CPU $CLIENT_CPU; \`sudo bash bench/embox-linux.sh\` (COUNT=$COUNT, REPEAT=$REPEAT)."
echo
echo "## 1. Round trips of 64-byte UDP echoes"
echo
rtos_report table embox linux-a9 linux-a9-rt floor-a9-irq floor-a9
rtos_report ratio linux-a9 embox "Linux / Embox" " (the write-up: 0.77 / 0.08 ms = 9.6x on the mean, on the board)"
echo
echo "## 2. Above the board's floor"
echo
echo "A floor answers the same echo on the same emulated board, LAN9118 and TAP device with no stack at all: \`floor-a9\` polls the NIC, \`floor-a9-irq\` sleeps in WFI until the NIC's interrupt wakes it, as both systems do. What a system takes above the floor is its stack, its responder and its scheduler as QEMU executes them."
echo
rtos_report floors floor-a9-irq floor-a9 embox linux-a9 linux-a9-rt
rtos_report above linux-a9 embox floor-a9-irq "Linux / Embox"
echo
echo "## 3. Run until decided (\`stackmeter suite embox-linux\`)"
echo
for run in "linux-embox=Linux (A) against Embox (B)" "linux-rt=Linux (A) against Linux under SCHED_FIFO (B)"; do
    printf '### %s\n\n' "${run#*=}"
    if [[ -f $WORK/${run%%=*}.md ]]; then printf '%s\n\n' "$(sed 's/^#/###/' "$WORK/${run%%=*}.md")"; else printf '(no output)\n\n'; fi
done
echo "## 4. Where a round trip goes"
echo
echo "\`stackmeter ping --timestamps --size 128\`: the client's kernel stamps and the responder's stamp block. On Embox the block's kernel times are our LAN9118 driver's (the frame read from the MAC, the frame written to it: c-responder/a9/embox/stamps); on Linux they are the guest kernel's software stamps (SO_TIMESTAMPING: the receive stamp at the driver's hand-off to the stack, the send stamp at the driver). p50 per part, us."
echo
rtos_report split embox linux-a9
echo
rtos_report stamped embox linux-a9
rtos_report board embox linux-a9
echo
echo "## 5. Builds, sizes, RAM"
echo
echo '```'
size_files "$C/a9/build" embox-size.txt linux-a9/size.txt
console_lines "KiB of RAM in use" "$WORK/lab/linux-a9.console"
echo '```'
