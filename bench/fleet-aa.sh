#!/usr/bin/env bash
# bench/fleet-aa.sh - how often `fleet compare` flags a pair when nothing
# changed but the load (a benchmark, not a test; about 5 minutes).
#
# Each trial: a fleet of NODES responders on loopback (one `serve` each,
# on CPU 0), every node a client of every other (rr 1 B:1 KiB, 200
# transactions, 5 repetitions), the NODES clients running at once as on a
# real fleet; run "a" on a quiet machine, run "b" with a busy loop beside
# it (BUSY=switching, the default: on and off at random for 0.5-3 s, which
# loads some rounds and not others; BUSY=steady: on all along); then
# `fleet compare a b --tolerance 50` (each figure of every pair by the
# moderated t, each repetition a block, the false discovery rate held at
# 5% over all of them). A trial that flags any pair is a false alarm: the
# goal is at most 5% of trials. ORDER=rounds (the default: each
# repetition a round of every pair, the clients waiting for each other) or
# ORDER=fixed (pairs in file order, no waiting: runs made before rounds).
# Prints a Markdown report.
#
# CLIENTS=sequential (with ORDER=fixed only) runs the clients one after
# another, as this bench did before rounds (bench/results/2026-11-27-fleet-aa.md).
#
# Environment: TRIALS (40), NODES (4), BUSY (switching), ORDER (rounds),
# CLIENTS (concurrent), SM (target/release/stackmeter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
TRIALS=${TRIALS:-40}
BUSY=${BUSY:-switching}
ORDER=${ORDER:-rounds}
NODES=${NODES:-4}
CLIENTS=${CLIENTS:-concurrent}
[[ $CLIENTS == concurrent || ($CLIENTS == sequential && $ORDER == fixed) ]] ||
    { echo "bench/fleet-aa.sh: CLIENTS=$CLIENTS: concurrent, or sequential with ORDER=fixed (in rounds a client waits for the others)" >&2; exit 2; }
[[ -x $SM ]] || { echo "bench/fleet-aa.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
source "$ROOT/bench/lib.sh"
WORK=$(mktemp -d)
PIDS=()
TOGGLER=""
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    [[ -z $TOGGLER ]] || kill "$TOGGLER" 2>/dev/null || true
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK

fleet=$WORK/fleet.toml
printf 'name = "aa"\nrepeat = 5\n[[step]]\nname = "lat"\ntest = "rr"\nsizes = "1:1K"\niterations = 200\n' >"$fleet"
for i in $(seq "$NODES"); do
    taskset -c 0 "$SM" serve --listen 127.0.0.1:0 2>"$WORK/serve$i.log" &
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$WORK/serve$i.log" && break; sleep 0.05; done
    port=$(sed -n 's/.*listening on tcp 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/serve$i.log" | head -n 1)
    printf '\n[[node]]\nname = "n%s"\naddress = "127.0.0.1"\nport = %s\n' "$i" "$port" >>"$fleet"
done
: >"$WORK/trials"
for t in $(seq "$TRIALS"); do
    db=$WORK/t$t.db
    for run in a b; do
        if [[ $run == b ]]; then
            RANDOM=$t
            if [[ $BUSY == steady ]]; then
                sh -c 'while :; do :; done' &
            else
                busy_toggler &
            fi
            TOGGLER=$!
        fi
        clients=()
        for i in $(seq "$NODES"); do
            taskset -c 1 "$SM" fleet run "$fleet" --node "n$i" --run "$run" --db "$db" --order "$ORDER" \
                --lock-dir "$WORK/locks" >/dev/null 2>>"$WORK/err" &
            clients+=("$!")
            [[ $CLIENTS == concurrent ]] || wait "$!" || true
        done
        for c in "${clients[@]}"; do wait "$c" 2>/dev/null || true; done
        if [[ $run == b ]]; then
            kill "$TOGGLER" 2>/dev/null || true
            wait "$TOGGLER" 2>/dev/null || true
            TOGGLER=""
        fi
    done
    "$SM" fleet compare a b --tolerance 50 --db "$db" --json >"$WORK/cmp.json" 2>>"$WORK/err" || true
    python3 - "$WORK/cmp.json" >>"$WORK/trials" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
print(len(c["flagged"]), c["compared"], sum(1 for x in c["changes"] if x["stats"]["verdict"] in ("slower", "faster")))
EOF
    note "trial $t: flagged, judged, significant either way: $(tail -n 1 "$WORK/trials")"
done
echo "# fleet compare when nothing changed but the load"
echo
echo "$(machine_line); $NODES nodes on loopback (responders on CPU 0, the $NODES clients on CPU 1, $CLIENTS), rr 1 B:1 KiB x 5 repetitions per pair, order $ORDER; run b with a busy loop beside it ($BUSY); \`fleet compare a b --tolerance 50\`."
echo
python3 - "$WORK/trials" <<'EOF'
import math, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
n = len(rows)
alarms = sum(1 for r in rows if r[0] > 0)
p = alarms / n
z = 1.96
c = (p + z * z / (2 * n)) / (1 + z * z / n)
h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
print("| trials | figures judged per trial | trials with a pair flagged (95% CI) | pairs significantly different either way, all trials |")
print("|---|---|---|---|")
print(f"| {n} | {rows[0][1] if rows else 0} | {alarms}/{n} = {p:.0%} ({max(0, c - h):.0%}-{min(1, c + h):.0%}) | {sum(r[2] for r in rows)} |")
EOF
