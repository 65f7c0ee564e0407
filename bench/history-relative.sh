#!/usr/bin/env bash
# bench/history-relative.sh - does `history --relative-to` find a 10% shift
# within 5 runs on this busy machine (a benchmark, not a test: root, a
# network namespace and tbf; about 10 minutes).
#
# Each trial is a store of 15 runs of one job: `suite` measuring a
# reference path and the target path interleaved (rr 1 B:16 KiB, 3
# repetitions each), responses through tbf at 40 Mbit/s on both; from run
# 11 on, the target's path is 10% slower (36.4 Mbit/s). A busy loop
# switches on and off at random (0.5-3 s) under all of it. A trial finds
# the shift when `history b --relative-to ref --figure "rtt p50"` reports a
# change point at run 11 (a regression); the same series judged without the
# reference (`history b`) is the contrast. Prints a Markdown report.
#
# Environment: TRIALS (20), SM (target/release/stackmeter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
TRIALS=${TRIALS:-20}
[[ -x $SM ]] || { echo "bench/history-relative.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench/history-relative.sh: needs root (a network namespace and tbf)" >&2; exit 1; }
source "$ROOT/bench/lib.sh"
NS=smhrel
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    two_paths_down "$NS" smr
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK

two_paths "$NS" smr 198.18.63 198.18.64 24751 "$SM" "$WORK/serve.log"
RANDOM=4321
busy_toggler &
PIDS+=("$!")
plan=$WORK/plan.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "1:16K"\niterations = 40\n' >"$plan"
: >"$WORK/trials"
for t in $(seq "$TRIALS"); do
    db=$WORK/t$t.db
    path_rate "$NS" smr-a1 40
    path_rate "$NS" smr-b1 40
    for run in $(seq 15); do
        [[ $run == 11 ]] && path_rate "$NS" smr-b1 36.4
        taskset -c 1 "$SM" suite "$plan" --repeat 3 --db "$db" \
            --target ref=198.18.63.2:24751 --target b=198.18.64.2:24751 >/dev/null 2>>"$WORK/err" || true
    done
    rel=$("$SM" history b --relative-to ref --figure "rtt p50" --db "$db" --json 2>/dev/null || true)
    plain=$("$SM" history b --figure "rtt p50" --db "$db" --json 2>/dev/null || true)
    python3 - "$rel" "$plain" >>"$WORK/trials" <<'EOF'
import json, sys

def found(text):
    try:
        s = json.loads(text)["series"][0]
    except Exception:
        return "error", 0
    runs = [r["run_id"] for r in s["runs"]]
    at = [runs.index(c["run_id"]) + 1 for c in s["changes"]]
    return ("yes" if 11 in at else "no"), len([a for a in at if a != 11])

r, rf = found(sys.argv[1])
p, pf = found(sys.argv[2])
print(r, rf, p, pf)
EOF
    note "trial $t: relative found/false, plain found/false: $(tail -n 1 "$WORK/trials")"
done
echo "# history --relative-to: a 10% shift found within 5 runs"
echo
echo "$(machine_line); a busy loop switching on and off at random (0.5-3 s) throughout; client on CPU 1, responder on CPU 0; tbf 40 Mbit/s on both paths, the target's stepped to 36.4 Mbit/s (10% slower) from run 11 of 15; each run a suite of rr 1 B:16 KiB, 3 repetitions each side."
echo
python3 - "$WORK/trials" <<'EOF'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = len(rows)

def wilson(k, n, z=1.96):
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)

print("| series | trials | shift found at run 11 (95% CI) | other change points reported |")
print("|---|---|---|---|")
for name, i in (("b / ref (--relative-to ref)", 0), ("b alone", 2)):
    k = sum(1 for r in rows if r[i] == "yes")
    lo, hi = wilson(k, n)
    other = sum(int(r[i + 1]) for r in rows)
    print(f"| {name} | {n} | {k}/{n} = {k / n:.0%} ({lo:.0%}-{hi:.0%}) | {other} |")
EOF
