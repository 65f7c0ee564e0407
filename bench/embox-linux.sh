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

[[ $(id -u) == 0 ]] || die "needs root (TAP devices)"
[[ -x $STACKMETER ]] || die "$STACKMETER not found (cargo build --release -p stackmeter)"
[[ -n ${STACKMETER_EMBOX_SRC:-} ]] || die "STACKMETER_EMBOX_SRC is not set (docs/lab.md, \"Embox and Linux on one Cortex-A9\")"

PIDS=()
floors_down() { # the floors' QEMUs and TAP devices (lab_done takes the lab down)
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    for d in smfl4 smfl5; do ip link del "$d" 2>/dev/null || true; done
}
LAB_CLEANUP=floors_down
lab_work embox-linux

C=$REPO_ROOT/c-responder
note "building Embox, Linux and the board's floors"
make -s -C "$C" embox linux-a9 a9-floor a9-floor-irq >"$WORK/build.log" 2>&1 || die "make: $(tail -3 "$WORK/build.log")"

# floor NAME ELF TAP NET: a floor on its own TAP device, 198.18.NET.2,
# its QEMU stopped (SIGSTOP) until it is measured: the polling floor spins
# its vCPU, and would take the CPU every other target shares.
declare -A FLOOR_PID
floor() {
    local name=$1 elf=$2 tap=$3 net=$4 word
    ip tuntap add dev "$tap" mode tap
    ip addr add "198.18.$net.1/24" dev "$tap"
    ip link set "$tap" mtu 1500 up
    ip neigh replace "198.18.$net.2" lladdr "02:53:4d:00:00:$net" dev "$tap" nud permanent
    word=$(printf '0x%02X%02X%02X%02X' 198 18 "$net" 2)
    taskset -c "$SERVER_CPU" qemu-system-arm -M vexpress-a9 -m 128M -display none -monitor none \
        -audiodev none,id=snd0 -serial "file:$WORK/$name.console" -kernel "$elf" \
        -device "loader,addr=0x60000000,data=$word,data-len=4" \
        -nic "tap,ifname=$tap,script=no,downscript=no,model=lan9118,mac=02:53:4d:00:00:$net" \
        2>>"$WORK/floors.log" &
    PIDS+=($!)
    FLOOR_PID[$name]=$!
    for _ in $(seq 100); do
        if grep -q "ready" "$WORK/$name.console" 2>/dev/null; then
            kill -STOP "${FLOOR_PID[$name]}"
            return 0
        fi
        sleep 0.1
    done
    die "$name did not start: $(cat "$WORK/$name.console" "$WORK/floors.log")"
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
        taskset -c "$CLIENT_CPU" "$STACKMETER" ping "${t#*=}" -c "$COUNT" --slow-us 100 --json --no-store \
            >"$WORK/ping.json" 2>"$WORK/ping.err" || die "ping ${t%%=*}: $(tail -1 "$WORK/ping.err")"
        [[ -z $pid ]] || kill -STOP "$pid"
        python3 - "${t%%=*}" "$WORK/ping.json" >>"$WORK/rounds" <<'EOF'
import json, sys
r = json.load(open(sys.argv[2]))["results"][0]
t = r["rtt_us"]
print(sys.argv[1], t["mean"], t["min"], t["max"], t["p50"], t["p99"], r["slow"], r["mismatched"], r["received"], r["sent"])
EOF
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
for t in embox linux-a9; do
    taskset -c "$CLIENT_CPU" "$STACKMETER" ping "$(addr "$t")" -c "$COUNT" --size 128 --timestamps --json --no-store \
        >"$WORK/split-$t.json" 2>"$WORK/split-$t.err" || die "ping --timestamps $t: $(tail -1 "$WORK/split-$t.err")"
done

A9_BUILD=$C/a9/build python3 - "$WORK" "$(machine_line)" "$COUNT" "$REPEAT" "$SERVER_CPU" "$CLIENT_CPU" <<'EOF'
import json, os, re, statistics, sys
work, machine, count, repeat, scpu, ccpu = sys.argv[1:7]
rows = {}
for line in open(os.path.join(work, "rounds")):
    label, *v = line.split()
    rows.setdefault(label, []).append([float(x) for x in v])
med = lambda xs: statistics.median(xs)
table = {}
for label, rs in rows.items():
    col = list(zip(*rs))
    table[label] = dict(mean=med(col[0]), min=min(col[1]), max=max(col[2]), p50=med(col[3]), p99=med(col[4]),
                        slow=int(sum(col[5])), mismatched=int(sum(col[6])), received=int(sum(col[7])), sent=int(sum(col[8])))
order = [l for l in ["embox", "linux-a9", "linux-a9-rt", "floor-a9-irq", "floor-a9"] if l in table]
print("# Embox against Linux on one emulated Cortex-A9 (QEMU vexpress-a9, LAN9118)\n")
print(f"{machine}; every QEMU on CPU {scpu}, the client on CPU {ccpu}; `sudo bash bench/embox-linux.sh` (COUNT={count}, REPEAT={repeat}).\n")
print("## 1. Round trips of 64-byte UDP echoes\n")
print(f"`stackmeter ping -c {count} --slow-us 100`, every target and floor in turn, {repeat} rounds: the median over rounds of mean, p50 and p99, the least min, the most max, slow answers (over 100 us) and mismatched payloads summed.\n")
print("| target | mean (us) | min (us) | max (us) | p50 (us) | p99 (us) | slow > 100 us | mismatched | received / sent |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for l in order:
    t = table[l]
    print(f"| {l} | {t['mean']:.1f} | {t['min']:.1f} | {t['max']:.1f} | {t['p50']:.1f} | {t['p99']:.1f} | {t['slow']} | {t['mismatched']} | {t['received']} / {t['sent']} |")
if "embox" in table and "linux-a9" in table:
    e, l = table["embox"], table["linux-a9"]
    print(f"\nLinux / Embox: {l['mean'] / e['mean']:.2f}x on the mean, {l['p50'] / e['p50']:.2f}x on the median (the write-up: 0.77 / 0.08 ms = 9.6x on the mean, on the board).")
print("\n## 2. Above the board's floor\n")
print("A floor answers the same echo on the same emulated board, LAN9118 and TAP device with no stack at all: `floor-a9` polls the NIC, `floor-a9-irq` sleeps in WFI until the NIC's interrupt wakes it, as both systems do. What a system takes above the floor is its stack, its responder and its scheduler as QEMU executes them.\n")
print("| target | p50 (us) | above floor-a9-irq (us) | above floor-a9 (us) |")
print("|---|---:|---:|---:|")
for l in ["embox", "linux-a9", "linux-a9-rt"]:
    if l in table:
        p = table[l]["p50"]
        fi = table.get("floor-a9-irq", {}).get("p50", float("nan"))
        fp = table.get("floor-a9", {}).get("p50", float("nan"))
        print(f"| {l} | {p:.1f} | {p - fi:.1f} | {p - fp:.1f} |")
if all(k in table for k in ["embox", "linux-a9", "floor-a9-irq"]):
    fi = table["floor-a9-irq"]["p50"]
    print(f"\nAbove the interrupt-driven floor, Linux / Embox: {(table['linux-a9']['p50'] - fi) / (table['embox']['p50'] - fi):.2f}x.")
print("\n## 3. Run until decided (`stackmeter suite embox-linux`)\n")
for name, what in [("linux-embox", "Linux (A) against Embox (B)"), ("linux-rt", "Linux (A) against Linux under SCHED_FIFO (B)")]:
    print(f"### {what}\n")
    text = open(os.path.join(work, name + ".md")).read().strip() if os.path.exists(os.path.join(work, name + ".md")) else "(no output)"
    print(text + "\n")
print("## 4. Where a round trip goes\n")
print("`stackmeter ping --timestamps --size 128`: the client's kernel stamps and the responder's stamp block. On Embox the block's kernel times are our LAN9118 driver's (the frame read from the MAC, the frame written to it: c-responder/a9/embox/stamps); on Linux they are the guest kernel's software stamps (SO_TIMESTAMPING: the receive stamp at the driver's hand-off to the stack, the send stamp at the driver). p50 per part, us.\n")
parts = ["client_send_stack", "out_path", "responder_stack_in", "responder_app", "back_path", "responder_stack_out", "client_recv_stack"]
print("| part | " + " | ".join(["embox", "linux-a9"]) + " |")
print("|---|---:|---:|")
splits = {t: json.load(open(os.path.join(work, f"split-{t}.json")))["results"][0] for t in ["embox", "linux-a9"]}
for p in parts:
    print(f"| {p} | " + " | ".join(f"{splits[t]['split_us'][p]['p50']:.1f}" for t in ["embox", "linux-a9"]) + " |")
print()
for t in ["embox", "linux-a9"]:
    r = splits[t]["rtt_us"]
    print(f"{t}: the round trip with stamps asked for, p50 {r['p50']:.1f} us (mean {r['mean']:.1f}), against {table[t]['p50']:.1f} without (table 1) (stamping adds work on the board, where Linux reads each send stamp back from the socket's error queue, and on the host; the two runs are also minutes apart, and a difference of a few microseconds either way is theirs).")
for t in ["embox", "linux-a9"]:
    s = splits[t]["split_us"]
    board = s["responder_stack_in"]["p50"] + s["responder_app"]["p50"] + s["responder_stack_out"]["p50"]
    print(f"\n{t}: on the board, stack in + application + stack out = {board:.1f} us at the medians, the application {100 * s['responder_app']['p50'] / board:.0f}% of it; {s['samples']} exchanges split, {s['incomplete']} without all stamps, {s['unbalanced']} not adding up.", end="")
print("\n\n## 5. Builds, sizes, RAM\n")
print("```")
for f in ["embox-size.txt", "linux-a9/size.txt"]:
    path = os.path.join(os.environ.get("A9_BUILD", ""), f)
    if os.path.exists(path):
        print(f"{f}:\n" + open(path).read().strip())
for c in ["linux-a9.console"]:
    path = os.path.join(work, "lab", c)
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            if "KiB of RAM in use" in line:
                print(line.strip())
print("```")
EOF
