#!/usr/bin/env bash
# bench/nuttx-linux.sh - a second RTOS against Linux on one emulated board:
# NuttX and GNU/Linux on QEMU's virt machine (Cortex-A7/A15, virtio-net on
# virtio-mmio), both with the C responder, and the board's path floor, as
# a Markdown report on stdout.
#
# Why this exists: bench/embox-linux.sh compares Embox with Linux on an
# emulated Cortex-A9 with a LAN9118; this is the same comparison for
# NuttX on a board whose NIC is virtio-net, built by `make -C c-responder
# nuttx linux-virt virt-floor virt-floor-irq` (c-responder/virt/README.md).
# It brings both systems up with `stackmeter lab up nuttx linux-virt`, and
# boots the floors itself, one at a time, on a TAP device of their own:
#   1. the round-trip table: every target and floor measured in turn,
#      REPEAT rounds of COUNT 64-byte echoes (every payload checked, slow
#      answers over 100 us counted); per target the median over rounds of
#      each figure (min the least, max the most, slow answers summed);
#   2. each system above the floors;
#   3. TCP: rr 1:1K, 64:64, 1K:1 and 64K:64K, crr, udp-burst against
#      NuttX, Linux and Linux under SCHED_FIFO (linux-virt-rt, port 24681);
#   4. where a round trip goes: `ping --timestamps` against NuttX (its
#      virtio-net driver stamps the responder's frames, c-responder/virt/
#      nuttx/stamps) and Linux (SO_TIMESTAMPING in the guest);
#   5. run until decided: Linux against NuttX (the built-in plan
#      nuttx-linux, budget BUDGET);
#   6. build times, image sizes, RAM, boot times.
# Every QEMU is pinned to SERVER_CPU, the client to CLIENT_CPU. A report,
# not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo STACKMETER_NUTTX_SRC=... bash bench/nuttx-linux.sh > bench/results/DAY-nuttx-linux.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   COUNT        round trips per ping measurement (5000)
#   REPEAT       rounds over every target and floor (3)
#   RR_N         transactions per rr size and crr (1000)
#   BUDGET       budget of the run until decided (2m)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
#   KEEP_LOGS    1: keep the work directory (0)
# TAP devices: the lab's for NuttX and Linux; smfl6 198.18.22.0/24 for the
# floors (made here, removed at the end).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
COUNT=${COUNT:-5000}
REPEAT=${REPEAT:-3}
RR_N=${RR_N:-1000}
BUDGET=${BUDGET:-2m}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
KEEP_LOGS=${KEEP_LOGS:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP devices"
[[ -n ${STACKMETER_NUTTX_SRC:-} ]] || die "STACKMETER_NUTTX_SRC is not set (c-responder/virt/README.md)"

C=$REPO_ROOT/c-responder
B=$C/virt/build
PIDS=()
TAPS=()
LAB_CLEANUP=boards_down # every QEMU and TAP device this script made
lab_work nuttx-linux

# boot NAME TAP MAC READY ARGS...: QEMU's virt with ARGS and a virtio-net
# NIC on TAP, waited for until READY appears on its console (90 s at most).
boot() {
    local name=$1 tapname=$2 mac=$3 ready=$4
    shift 4
    board_qemu "$name" "$ready" 90 -M virt,highmem=off -m 256M "$@" \
        -netdev "tap,id=n0,ifname=$tapname,script=no,downscript=no" -device "virtio-net-device,netdev=n0,mac=$mac"
}

# floor NAME ELF: a floor on smfl6 at 198.18.22.2, for one measurement.
floor_up() {
    boot "$1" smfl6 02:53:4d:00:00:0b "ready" -cpu cortex-a7 -kernel "$2" \
        -device loader,addr=0x40100000,data=0xC6121602,data-len=4
    FLOOR_PID=$LAST_PID
}
floor_down() {
    kill "$FLOOR_PID" 2>/dev/null || true
    wait "$FLOOR_PID" 2>/dev/null || true
}

note "building NuttX, Linux and the board's floors"
make -s -C "$C" nuttx linux-virt virt-floor virt-floor-irq >"$WORK/build.log" 2>&1 ||
    die "make: $(tail -3 "$WORK/build.log")"
board_tap smfl6 22
note "lab up nuttx linux-virt (NuttX 198.18.20.2, Linux 198.18.21.2)"
"$STACKMETER" lab up nuttx linux-virt --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" ||
    die "lab up nuttx linux-virt: $(cat "$WORK/up.err")"
for sys in nuttx linux-virt; do cp "$STACKMETER_LAB_DIR/$sys.console" "$WORK/$sys.console"; done
declare -A ADDR=([nuttx]=198.18.20.2:24680 [linux-virt]=198.18.21.2:24680 [linux-virt-rt]=198.18.21.2:24681
    [floor-virt]=198.18.22.2:24680 [floor-virt-irq]=198.18.22.2:24680)
declare -A FLOOR_ELF=([floor-virt]=$B/stackmeter-virt-floor.elf [floor-virt-irq]=$B/stackmeter-virt-floor-irq.elf)

client() { taskset -c "$CLIENT_CPU" "$STACKMETER" "$@" --json --no-store; }

note "1. the round-trip table: $REPEAT rounds of $COUNT echoes per target"
for ((r = 1; r <= REPEAT; r++)); do
    for t in nuttx linux-virt linux-virt-rt floor-virt-irq floor-virt; do
        [[ -z ${FLOOR_ELF[$t]:-} ]] || floor_up "$t" "${FLOOR_ELF[$t]}"
        rtos_round "$t" "${ADDR[$t]}"
        [[ -z ${FLOOR_ELF[$t]:-} ]] || floor_down
    done
done

note "3. TCP and bursts: rr, crr, udp-burst ($RR_N transactions)"
for t in nuttx linux-virt linux-virt-rt; do
    client rr "${ADDR[$t]}" --sizes 1:1K,64:64,1K:1,64K:64K -n "$RR_N" >"$WORK/rr-$t.json" 2>"$WORK/rr-$t.err" ||
        note "rr $t failed: $(tail -1 "$WORK/rr-$t.err")"
    client crr "${ADDR[$t]}" -n "$RR_N" >"$WORK/crr-$t.json" 2>"$WORK/crr-$t.err" ||
        note "crr $t failed: $(tail -1 "$WORK/crr-$t.err")"
    client udp-burst "${ADDR[$t]}" >"$WORK/burst-$t.json" 2>"$WORK/burst-$t.err" ||
        note "udp-burst $t failed: $(tail -1 "$WORK/burst-$t.err")"
done

note "4. where the round trip goes (ping --timestamps, 128 bytes)"
for t in nuttx linux-virt; do rtos_split "$t" "${ADDR[$t]}"; done

note "5. until decided: Linux against NuttX (budget $BUDGET)"
taskset -c "$CLIENT_CPU" "$STACKMETER" suite nuttx-linux --budget "$BUDGET" --no-store --format md \
    --target "linux-virt=${ADDR[linux-virt]}" --target "nuttx=${ADDR[nuttx]}" >"$WORK/decided.md" 2>"$WORK/decided.err" ||
    note "suite nuttx-linux exited $? (its output is still reported)"

# tcp_table: section 3's table, from $WORK/{rr,crr,burst}-TARGET.json.
tcp_table() {
    python3 - "$WORK" <<'EOF'
import json, os, sys
work = sys.argv[1]
def load(name):
    p = os.path.join(work, name)
    try:
        return json.load(open(p))["results"]
    except Exception:
        return None
print("| target | rr 1:1K | rr 64:64 | rr 1K:1 | rr 64K:64K | crr connect | crr transaction | largest burst answered whole |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for t in ["nuttx", "linux-virt", "linux-virt-rt"]:
    rr, crr, burst = load(f"rr-{t}.json"), load(f"crr-{t}.json"), load(f"burst-{t}.json")
    cells = []
    for i in range(4):
        cells.append(f"{rr[i]['rtt_us']['p50']:.0f} / {rr[i]['rtt_us']['p99']:.0f}" if rr and len(rr) > i else "failed")
    if crr:
        cells += [f"{crr[0]['connect_us']['p50']:.0f} / {crr[0]['connect_us']['p99']:.0f}",
                  f"{crr[0]['transaction_us']['p50']:.0f} / {crr[0]['transaction_us']['p99']:.0f}"]
    else:
        cells += ["failed", "failed"]
    whole = 0
    for b in sorted(burst or [], key=lambda b: b["burst"]):
        if b["whole_rounds"] != b["rounds"]:
            break
        whole = b["burst"]
    cells.append(str(whole) if burst else "failed")
    print(f"| {t} | " + " | ".join(cells) + " |")
EOF
}

echo "# NuttX against Linux on one emulated board (QEMU virt, virtio-net)"
echo
echo "$(machine_line); every QEMU on CPU $SERVER_CPU, the client on CPU $CLIENT_CPU; \`sudo bash bench/nuttx-linux.sh\` (COUNT=$COUNT, REPEAT=$REPEAT, RR_N=$RR_N)."
echo
echo "## 1. Round trips of 64-byte UDP echoes"
echo
rtos_report table nuttx linux-virt linux-virt-rt floor-virt-irq floor-virt
rtos_report ratio linux-virt nuttx "Linux / NuttX"
echo
echo "## 2. Above the board's floor"
echo
echo "A floor answers the same echo on the same emulated board, virtio-net device and TAP device with no stack at all (c-responder/virt/floor): \`floor-virt\` polls the used ring, \`floor-virt-irq\` sleeps in WFI until the device's interrupt wakes it, as both systems do."
echo
rtos_report floors floor-virt-irq floor-virt nuttx linux-virt linux-virt-rt
echo
echo "## 3. TCP and bursts"
echo
echo "\`stackmeter rr --sizes 1:1K,64:64,1K:1,64K:64K -n $RR_N\`, \`crr -n $RR_N\` (1:1), \`udp-burst\` (64-byte datagrams, bursts of 1 to 64): p50 / p99 in us."
echo
tcp_table
echo
echo "## 4. Where a round trip goes"
echo
echo "\`stackmeter ping --timestamps --size 128\`: the client's kernel stamps and the responder's stamp block. On NuttX the block's kernel times are our virtio-net driver hooks' (the frame handed to the stack, the frame handed to the driver: c-responder/virt/nuttx/stamps); on Linux they are the guest kernel's software stamps (SO_TIMESTAMPING). p50 per part, us."
echo
rtos_report split nuttx linux-virt
rtos_report board nuttx linux-virt
echo
echo "## 5. Run until decided"
echo
echo "\`stackmeter suite nuttx-linux --budget $BUDGET --target linux-virt=... --target nuttx=...\`: B = NuttX against A = Linux."
echo
sed 's/^#/##/' "$WORK/decided.md"
echo
echo "## 6. Builds, sizes, RAM, boot"
echo
echo '```'
size_files "$B" nuttx-size.txt linux-virt/size.txt
console_lines "KiB of.*ready" "$WORK/nuttx.console" "$WORK/linux-virt.console"
echo '```'
