#!/usr/bin/env bash
# bench/decide.sh - does `suite --until decided` hold its error rate, and how
# fast does it decide, on this machine with a busy loop switching on and off
# at random under it (a benchmark, not a test: it needs root for the
# namespace and tbf, and runs for about an hour).
#
#   aa      A against A: two `serve` processes on loopback, rr 1 B:1 KiB;
#           any "faster" or "slower" is an error (at most alpha = 5% of the
#           decisions may be).
#   diff5   B's responses through a tbf path 5% slower than A's (38 vs
#           40 Mbit/s, a 16 KiB response): should be decided "slower".
#   diff10  the same 10% slower (36.4 vs 40 Mbit/s).
#
# Each trial is one `stackmeter suite` (client on CPU 1, responders on CPU 0)
# with its own budget; the busy loop is a shell loop, unpinned, on for 0.5-3 s
# and off for 0.5-3 s at random. Prints a Markdown report on stdout (per
# scenario: the verdicts with the share and its 95% interval, the time to a
# decision); progress on stderr.
#
# Environment: TRIALS_AA (100), TRIALS_DIFF (30), BUDGET_AA (10s),
# BUDGET_5 (60s), BUDGET_10 (20s), SM (target/release/stackmeter).
# Usage: bench/decide.sh [SCENARIO...]   (default: aa diff5 diff10)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
TRIALS_AA=${TRIALS_AA:-100}
TRIALS_DIFF=${TRIALS_DIFF:-30}
[[ -x $SM ]] || { echo "bench/decide.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench/decide.sh: needs root (a network namespace and tbf)" >&2; exit 1; }
source "$ROOT/bench/lib.sh"
NS=smdec
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    two_paths_down "$NS" smd
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK STACKMETER_DB=$WORK/results.db

# trial SCENARIO N BUDGET PLAN A B: one decided suite; appends
# "scenario verdict seconds pairs" to $WORK/trials.
trial() {
    local scenario=$1 n=$2 budget=$3 plan=$4 a=$5 b=$6 start end
    start=$(date +%s.%N)
    taskset -c 1 "$SM" suite "$plan" --target "a=$a" --target "b=$b" --budget "$budget" \
        --seed "$n" --no-store --json >"$WORK/out.json" 2>"$WORK/err" || true
    end=$(date +%s.%N)
    python3 - "$scenario" "$start" "$end" "$WORK/out.json" >>"$WORK/trials" <<'EOF'
import json, sys
scenario, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
try:
    d = json.load(open(sys.argv[4]))["decision"]
    r = d["rows"][0]
    print(scenario, r["verdict"], f"{end - start:.2f}", r["pairs"], f"{r['ratio']:.4f}")
except Exception:  # a failed run is a trial too, and shows
    print(scenario, "error", f"{end - start:.2f}", 0, "nan")
EOF
    note "$scenario $n: $(tail -n 1 "$WORK/trials")"
}

scenarios=("$@")
((${#scenarios[@]})) || scenarios=(aa diff5 diff10)
plan_aa=$WORK/aa.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "1:1K"\niterations = 200\n' >"$plan_aa"
plan_diff=$WORK/diff.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "1:16K"\niterations = 40\n' >"$plan_diff"
: >"$WORK/trials"
RANDOM=1234
busy_toggler &
PIDS+=("$!")
for s in "${scenarios[@]}"; do
    case $s in
        aa)
            for side in 1 2; do
                taskset -c 0 "$SM" serve --listen 127.0.0.1:0 2>"$WORK/aa$side.log" &
                PIDS+=("$!")
                for _ in $(seq 100); do grep -q "listening on tcp" "$WORK/aa$side.log" && break; sleep 0.05; done
            done
            a=$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$WORK/aa1.log" | head -n 1)
            b=$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$WORK/aa2.log" | head -n 1)
            for n in $(seq "$TRIALS_AA"); do trial aa "$n" "${BUDGET_AA:-10s}" "$plan_aa" "$a" "$b"; done
            ;;
        diff5 | diff10)
            ip netns list | grep -qw "$NS" || two_paths "$NS" smd 198.18.61 198.18.62 24750 "$SM" "$WORK/serve-ns.log"
            path_rate "$NS" smd-a1 40
            if [[ $s == diff5 ]]; then path_rate "$NS" smd-b1 38; else path_rate "$NS" smd-b1 36.4; fi
            budget=${BUDGET_5:-60s}
            [[ $s == diff10 ]] && budget=${BUDGET_10:-20s}
            for n in $(seq "$TRIALS_DIFF"); do
                trial "$s" "$n" "$budget" "$plan_diff" 198.18.61.2:24750 198.18.62.2:24750
            done
            ;;
        *) die "unknown scenario '$s' (aa, diff5, diff10)" ;;
    esac
done

echo "# suite --until decided: error rate and time to a decision"
echo
echo "$(machine_line); a busy loop switching on and off at random (0.5-3 s each) under every trial; client on CPU 1, responders on CPU 0; alpha 0.05, tolerance +/-2%."
echo
python3 - "$WORK/trials" <<'EOF'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]

def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, c - h), min(1.0, c + h))

def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(f * (len(v) - 1) + 0.5))] if v else float("nan")

print("| scenario | trials | faster | slower | equivalent | inconclusive | errors | share that matters (95% CI) | seconds to a decision p50 / p90 / max | B/A (median of trials) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in ("aa", "diff5", "diff10"):
    t = [r for r in rows if r[0] == s]
    if not t:
        continue
    n = len(t)
    c = {k: sum(1 for r in t if r[1] == k) for k in ("faster", "slower", "equivalent", "inconclusive", "error")}
    k = c["faster"] + c["slower"] if s == "aa" else c["slower"]
    what = "called faster or slower" if s == "aa" else "decided slower"
    lo, hi = wilson(k, n)
    secs = [float(r[2]) for r in t if r[1] in ("faster", "slower", "equivalent")]
    print(f"| {s} | {n} | {c['faster']} | {c['slower']} | {c['equivalent']} | {c['inconclusive']} | {c['error']} | "
          f"{what}: {k}/{n} = {k / n:.1%} ({lo:.1%}-{hi:.1%}) | {q(secs, 0.5):.1f} / {q(secs, 0.9):.1f} / {max(secs) if secs else float('nan'):.1f} | "
          f"{q([float(r[4]) for r in t if r[4] != 'nan'], 0.5):.3f} |")
EOF
