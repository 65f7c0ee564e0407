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
    for pid in $(ip netns pids "$NS" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    ip link del smd-a0 2>/dev/null || true
    ip link del smd-b0 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK STACKMETER_DB=$WORK/results.db

# A namespace with one responder on two addresses, each reached over a
# veth of its own whose namespace side (the responses' way) has a tbf.
setup_paths() {
    ip netns add "$NS"
    ip -n "$NS" link set lo up
    local side net
    for side in a b; do
        net=$([[ $side == a ]] && echo 198.18.61 || echo 198.18.62)
        ip link add "smd-${side}0" type veth peer name "smd-${side}1"
        ip link set "smd-${side}1" netns "$NS"
        ip addr add "$net.1/24" dev "smd-${side}0"
        ip link set "smd-${side}0" up
        ip -n "$NS" addr add "$net.2/24" dev "smd-${side}1"
        ip -n "$NS" link set "smd-${side}1" up
    done
    ip netns exec "$NS" taskset -c 0 "$SM" serve --listen 198.18.61.2:24750 --listen 198.18.62.2:24750 \
        2>"$WORK/serve-ns.log" &
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$WORK/serve-ns.log" && break; sleep 0.05; done
}

# rate DEV MBIT: the tbf on a path's response side.
rate() {
    ip netns exec "$NS" tc qdisc replace dev "$1" root tbf rate "$2mbit" burst 2kb latency 100ms
}

# The busy loop that switches on and off at random.
toggler() {
    local burner="" ms
    RANDOM=1234
    # Killed, it takes its busy loop with it.
    trap 'kill "$burner" 2>/dev/null; exit 0' TERM
    while :; do
        sh -c 'while :; do :; done' &
        burner=$!
        ms=$((500 + RANDOM % 2500))
        sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
        kill "$burner" 2>/dev/null || true
        wait "$burner" 2>/dev/null || true
        ms=$((500 + RANDOM % 2500))
        sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    done
}

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
toggler &
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
            ip netns list | grep -qw "$NS" || setup_paths
            rate smd-a1 40
            if [[ $s == diff5 ]]; then rate smd-b1 38; else rate smd-b1 36.4; fi
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
