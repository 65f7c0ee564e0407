#!/usr/bin/env bash
# bench/proxies.sh - the proxy write-up's table again, decided: the lab's
# file server with the write-up's ten files and the three proxies in front
# of it (`stackmeter lab up solidframe asio-2010 asio`), raced as the
# write-up raced them (50 clients, each listing the files and fetching
# every one twice), as a Markdown report on stdout.
#
# Why this exists: the write-up (SolidFrame 70.9 s against boost::asio
# 74.3 s, 62,767 against 60,368 KB/s) compared a SolidFrame aio proxy with
# a boost::asio one; here the same load runs through SolidFrame 12.3's
# relay, the write-up's own 2010 asio proxy and our asio proxy designed as
# the relay is, until decided:
#   1. solidframe against asio-2010 (the write-up's pair, as written);
#   2. solidframe against asio (the fair pair: the two libraries);
#   3. the direct runs (the file server alone: the floor), ROUNDS of them;
# each race a `suite proxy` run until decided (budget BUDGET): per proxy
# the time of a whole 50-client run and its rate (the write-up's two
# figures), the fetch latency per file, its CPU seconds per GiB carried and
# its peak memory (/proc), and the verdict of each row with its interval.
# The file server and the proxies on SERVER_CPU, the client on CLIENT_CPU.
# A report, not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo STACKMETER_SOLIDFRAME_SRC=... STACKMETER_ASIO_2010_SRC=... \
#            bash bench/proxies.sh > bench/results/DAY-proxies.md
# Environment (default): STACKMETER (target/release/stackmeter), BUDGET
# (20m), RACES (writeup fair: which of the two races run), ROUNDS (3),
# SERVER_CPU/CLIENT_CPU (1/0), KEEP_LOGS (0).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
BUDGET=${BUDGET:-20m}
ROUNDS=${ROUNDS:-3}
RACES=${RACES:-writeup fair}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

[[ $(id -u) == 0 ]] || die "needs root (stackmeter lab)"
[[ -x $STACKMETER ]] || die "$STACKMETER not found (cargo build --release -p stackmeter)"
lab_work proxies
export STACKMETER_PROXIES_DIR=$REPO_ROOT/proxies/build

note "building the proxies (make -C proxies)"
t0=$(date +%s.%N)
make -s -C "$REPO_ROOT/proxies" >"$WORK/build.log" 2>&1 || die "make -C proxies: $(tail -n 3 "$WORK/build.log")"
built_s=$(echo "$(date +%s.%N) - $t0" | bc)
"$STACKMETER" lab up solidframe asio-2010 asio --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" ||
    die "lab up: $(cat "$WORK/up.err")"
addr() { sed -n "s/^$1=//p" "$WORK/targets"; }

race() { # NAME A B: a suite proxy run until decided, its JSON kept
    note "race $1: $2 against $3 until decided (budget $BUDGET)"
    taskset -c "$CLIENT_CPU" "$STACKMETER" suite proxy --budget "$BUDGET" --no-store --json \
        --target "$2=$(addr "$2")" --target "$3=$(addr "$3")" >"$WORK/$1.json" 2>"$WORK/$1.err" ||
        note "suite $2 against $3 exited $? (its output is still reported)"
}
started=$(date -u +%Y-%m-%dT%H:%MZ)
for r in $RACES; do
    case $r in
        writeup) race writeup solidframe asio-2010 ;;
        fair) race fair solidframe asio ;;
        *) die "RACES: unknown race '$r' (writeup, fair)" ;;
    esac
done
# Each proxy's peak resident memory since it started (VmHWM), after the
# races: a figure of the process, not of a block, so read once here.
for p in solidframe asio-2010 asio; do
    port=$(addr "$p")
    port=${port##*:}
    pid=$(ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
    [[ -n $pid ]] && awk '/^VmHWM:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$pid/status" >"$WORK/$p.hwm" || true
done

note "the floor: $ROUNDS direct runs"
for ((r = 1; r <= ROUNDS; r++)); do
    taskset -c "$CLIENT_CPU" "$STACKMETER" load "$(addr direct)" --clients 50 --fetch-each 2 --repeat 1 \
        --no-store --json >"$WORK/direct-$r.json" 2>"$WORK/direct.err" || die "load direct: $(tail -n 1 "$WORK/direct.err")"
done

echo "# The proxy write-up's race, decided"
echo
echo "$(machine_line); the file server and the proxies on CPU $SERVER_CPU, the 50 clients on CPU $CLIENT_CPU; races started $started, budget $BUDGET each."
echo
echo "Built by \`make -C proxies\` in $(printf %.1f "$built_s") s (nothing to do when already built; each build's own time below):"
echo
echo '```'
cat "$REPO_ROOT/proxies/build/sizes.txt"
echo '```'
echo
python3 - "$WORK" "$ROUNDS" "$RACES" <<'EOF'
import json, statistics, sys
work, rounds, ran = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def row(d, label):
    return next((r for r in d["rows"] if r["label"] == label), None)

direct = [json.load(open(f"{work}/direct-{r}.json"))["results"][0] for r in range(1, rounds + 1)]
print("| target | time of a run, s | KiB/s | CPU s per GiB carried | peak memory since it started, MiB |")
print("|---|---:|---:|---:|---:|")
print(f"| direct (the file server alone, median of {len(direct)} runs) | "
      f"{statistics.median(x['wall_s'] for x in direct):.2f} | {statistics.median(x['rate_kBps'] for x in direct):,.0f} | | |")
races = {}
for name in ran:
    try:
        races[name] = json.load(open(f"{work}/{name}.json"))["decision"]
    except (OSError, ValueError, KeyError) as e:
        print(f"| race {name} | no result ({e}) | | | |")
        continue
    d = races[name]
    for side, key in ((d["a"], "median_a"), (d["b"], "median_b")):
        cells = []
        for label in ("total time", "all objects", "target's CPU per GiB"):
            r = row(d, label)
            cells.append(f"{r[key]:,.2f}" if r else "-")
        try:
            cells.append(open(f"{work}/{side}.hwm").read().strip() or "-")
        except OSError:
            cells.append("-")
        print(f"| {side} (race {name}: median of its blocks) | " + " | ".join(cells) + " |")
print()
for name, title in (("writeup", "SolidFrame against the write-up's asio proxy (2010)"), ("fair", "SolidFrame against our asio proxy")):
    if name not in races:
        continue
    d = races[name]
    print(f"## {title}: B = {d['b']} against A = {d['a']}")
    print()
    print(f"Stopped: {d['stop']} after {d['pairs']} pairs.")
    print()
    print("| row | A | B | B/A (typical pair) | interval | verdict | pairs |")
    print("|---|---:|---:|---:|---|---|---:|")
    for r in d["rows"]:
        iv = r.get("interval")
        iv = f"{iv[0]:.3f}-{iv[1]:.3f}" if iv else "-"
        print(f"| {r['label']} ({r['stat']}, {r['unit']}) | {r['median_a']:,.2f} | {r['median_b']:,.2f} | "
              f"{r['ratio']:.3f} | {iv} | {r['verdict']} | {r['pairs']} |")
    print()
EOF
