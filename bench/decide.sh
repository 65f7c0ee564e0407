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
#   aa-loaded  A against A as a user starts it by hand: two `serve`
#           processes and the client, none pinned, rr 64:64 and 1:1K,
#           budget 20s, with a compile running beside it (the C responder
#           built again and again, -j2) besides the busy loop; any row
#           called faster or slower is an error. Every TRIALS_OFF_EVERY-th
#           trial (default 2) is followed by one decided as an older
#           version did (STACKMETER_DECIDE_RULES=$BEFORE, default "mean":
#           the mean of the pairs, the rules on; "off": the mean and no
#           rules), the before beside the after ("aa-loaded-mean").
#   aa-bursts  A against A under bursts, as a user reported them: two
#           `serve` processes and the client, none pinned, rr 64:64 and
#           1:1K, budget 20s, while three busy loops switch on and off at
#           random (the one of every scenario and two more), one runs
#           steadily, and an emulator busy-loops beside them (QEMU with
#           the Cortex-A9 floor, which polls its NIC); the before
#           interleaved as in aa-loaded ("aa-bursts-mean").
#   diff5, diff10 take the before interleaved too when TRIALS_OFF_EVERY
#           is set for them (DIFF_OFF_EVERY, default 0: none).
#
# Each trial is one `stackmeter suite` (client on CPU 1, responders on CPU 0,
# but in aa-loaded)
# with its own budget; the busy loop is a shell loop, unpinned, on for 0.5-3 s
# and off for 0.5-3 s at random. Prints a Markdown report on stdout (per
# scenario: the verdicts with the share and its 95% interval, the time to a
# decision); progress on stderr.
#
# Environment: TRIALS_AA (100), TRIALS_DIFF (30), BUDGET_AA (10s),
# BUDGET_5 (60s), BUDGET_10 (20s), TRIALS_LOADED (100), BUDGET_LOADED
# (20s), FIRST_LOADED (1: the seed of the first aa-loaded trial, to add
# trials to an earlier run), TRIALS_OFF_EVERY (2), TRIALS_BURSTS (20),
# DIFF_OFF_EVERY (0), BEFORE (mean), SM (target/release/stackmeter).
# Usage: bench/decide.sh [SCENARIO...]   (default: aa diff5 diff10)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
TRIALS_AA=${TRIALS_AA:-100}
TRIALS_DIFF=${TRIALS_DIFF:-30}
[[ -x $SM ]] || { echo "bench/decide.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench/decide.sh: needs root (a network namespace and tbf)" >&2; exit 1; }
BEFORE=${BEFORE:-mean}
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

# trial SCENARIO N BUDGET PLAN A B [PIN]: one decided suite (the client
# on CPU 1 unless PIN is "no"); appends "scenario verdict seconds pairs
# ratio spells" to $WORK/trials: the verdict is "faster" or "slower" when
# any row was called so, else "equivalent" when every row was, else
# "inconclusive"; pairs and ratio are of the row farthest from 1; spells
# counts the rows that named one.
trial() {
    local scenario=$1 n=$2 budget=$3 plan=$4 a=$5 b=$6 pin=${7:-yes} start end
    local run=("$SM" suite "$plan" --target "a=$a" --target "b=$b" --budget "$budget" --seed "$n" --no-store --json)
    # Decided as an older version did, for the before beside the after.
    [[ $scenario == *-"$BEFORE" ]] && run=(env STACKMETER_DECIDE_RULES="$BEFORE" "${run[@]}")
    [[ $pin == no ]] || run=(taskset -c 1 "${run[@]}")
    start=$(date +%s.%N)
    "${run[@]}" >"$WORK/out.json" 2>"$WORK/err" || true
    end=$(date +%s.%N)
    python3 - "$scenario" "$start" "$end" "$WORK/out.json" >>"$WORK/trials" <<'EOF'
import json, math, sys
scenario, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
try:
    rows = json.load(open(sys.argv[4]))["decision"]["rows"]
    verdicts = [r["verdict"] for r in rows]
    called = [v for v in verdicts if v in ("faster", "slower")]
    verdict = called[0] if called else ("equivalent" if all(v == "equivalent" for v in verdicts) else "inconclusive")
    far = max(rows, key=lambda r: abs(math.log(r["ratio"])))
    spells = sum(1 for r in rows if r.get("spell"))
    # The medians of the two targets' blocks, of the row farthest from 1.
    print(scenario, verdict, f"{end - start:.2f}", far["pairs"], f"{far['ratio']:.4f}", spells,
          f"{far['median_a']:.3f}", f"{far['median_b']:.3f}")
except Exception:  # a failed run is a trial too, and shows
    print(scenario, "error", f"{end - start:.2f}", 0, "nan", 0, "nan", "nan")
EOF
    note "$scenario $n: $(tail -n 1 "$WORK/trials")"
}

# two_serves NAME [CPU]: two `serve` processes on loopback (pinned to CPU
# when given), logging to $WORK/NAME1.log and NAME2.log; sets a and b to
# their addresses once each says it listens.
two_serves() {
    local name=$1 cpu=${2:-} side
    for side in 1 2; do
        if [[ -n $cpu ]]; then
            taskset -c "$cpu" "$SM" serve --listen 127.0.0.1:0 2>"$WORK/$name$side.log" &
        else
            "$SM" serve --listen 127.0.0.1:0 2>"$WORK/$name$side.log" &
        fi
        PIDS+=("$!")
        for _ in $(seq 100); do grep -q "listening on tcp" "$WORK/$name$side.log" && break; sleep 0.05; done
    done
    a=$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$WORK/${name}1.log" | head -n 1)
    b=$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$WORK/${name}2.log" | head -n 1)
}

# compile_load: builds a copy of the C responder again and again (-j2),
# until killed: a compile's mix of short processes, disk and CPU.
compile_load() {
    local copy=$WORK/compile
    rm -rf "$copy"
    cp -r "$ROOT/c-responder" "$copy"
    trap 'exit 0' TERM
    while :; do make -s -B -j2 -C "$copy" >/dev/null 2>&1 || sleep 1; done
}

# emulator_load: QEMU running the Cortex-A9 path floor, which polls its
# NIC: an emulator busy-looping, until killed.
emulator_load() {
    make -s -C "$ROOT/c-responder" a9-floor >/dev/null
    exec qemu-system-arm -M vexpress-a9 -m 128M -display none -monitor none -serial null \
        -kernel "$ROOT/c-responder/a9/build/stackmeter-a9-floor.elf" -nic none
}

scenarios=("$@")
((${#scenarios[@]})) || scenarios=(aa diff5 diff10)
plan_aa=$WORK/aa.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "1:1K"\niterations = 200\n' >"$plan_aa"
plan_loaded=$WORK/loaded.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "64:64,1:1K"\niterations = 200\n' >"$plan_loaded"
plan_diff=$WORK/diff.toml
printf '[[step]]\nname = "rr"\ntest = "rr"\nsizes = "1:16K"\niterations = 40\n' >"$plan_diff"
: >"$WORK/trials"
RANDOM=1234
busy_toggler &
PIDS+=("$!")
for s in "${scenarios[@]}"; do
    case $s in
        aa)
            two_serves aa 0
            for n in $(seq "$TRIALS_AA"); do trial aa "$n" "${BUDGET_AA:-10s}" "$plan_aa" "$a" "$b"; done
            ;;
        aa-loaded)
            two_serves loaded
            compile_load &
            PIDS+=("$!")
            every=${TRIALS_OFF_EVERY:-2}
            for n in $(seq "${FIRST_LOADED:-1}" "$((${FIRST_LOADED:-1} + ${TRIALS_LOADED:-100} - 1))"); do
                trial aa-loaded "$n" "${BUDGET_LOADED:-20s}" "$plan_loaded" "$a" "$b" no
                if ((every > 0 && n % every == 0)); then
                    trial "aa-loaded-$BEFORE" "$n" "${BUDGET_LOADED:-20s}" "$plan_loaded" "$a" "$b" no
                fi
            done
            ;;
        aa-bursts)
            two_serves bursts
            # Two more switching loops (three with the scenarios' own), one
            # steady loop, and the emulator.
            for _ in 1 2; do busy_toggler & PIDS+=("$!"); done
            sh -c 'while :; do :; done' &
            PIDS+=("$!")
            emulator_load >/dev/null 2>&1 &
            PIDS+=("$!")
            every=${TRIALS_OFF_EVERY:-2}
            for n in $(seq "${TRIALS_BURSTS:-20}"); do
                trial aa-bursts "$n" "${BUDGET_LOADED:-20s}" "$plan_loaded" "$a" "$b" no
                if ((every > 0 && n % every == 0)); then
                    trial "aa-bursts-$BEFORE" "$n" "${BUDGET_LOADED:-20s}" "$plan_loaded" "$a" "$b" no
                fi
            done
            ;;
        diff5 | diff10)
            ip netns list | grep -qw "$NS" || two_paths "$NS" smd 198.18.61 198.18.62 24750 "$SM" "$WORK/serve-ns.log"
            path_rate "$NS" smd-a1 40
            if [[ $s == diff5 ]]; then path_rate "$NS" smd-b1 38; else path_rate "$NS" smd-b1 36.4; fi
            budget=${BUDGET_5:-60s}
            [[ $s == diff10 ]] && budget=${BUDGET_10:-20s}
            every=${DIFF_OFF_EVERY:-0}
            for n in $(seq "$TRIALS_DIFF"); do
                trial "$s" "$n" "$budget" "$plan_diff" 198.18.61.2:24750 198.18.62.2:24750
                if ((every > 0 && n % every == 0)); then
                    trial "$s-$BEFORE" "$n" "$budget" "$plan_diff" 198.18.61.2:24750 198.18.62.2:24750
                fi
            done
            ;;
        *) die "unknown scenario '$s' (aa, diff5, diff10, aa-loaded, aa-bursts)" ;;
    esac
done

echo "# suite --until decided: error rate and time to a decision"
echo
echo "$(machine_line); a busy loop switching on and off at random (0.5-3 s each) under every trial; client on CPU 1, responders on CPU 0 (aa-loaded: nothing pinned, and a compile beside it); alpha 0.05, tolerance +/-2%; a trial's verdict is any row's call."
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

print("| scenario | trials | faster | slower | equivalent | inconclusive | errors | share that matters (95% CI) | seconds to a decision p50 / p90 / max | B/A (median of trials) | rows naming a spell |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
names = []
for r in rows:
    if r[0] not in names:
        names.append(r[0])
for s in names:
    t = [r for r in rows if r[0] == s]
    if not t:
        continue
    n = len(t)
    c = {k: sum(1 for r in t if r[1] == k) for k in ("faster", "slower", "equivalent", "inconclusive", "error")}
    aa = s.startswith("aa")
    k = c["faster"] + c["slower"] if aa else c["slower"]
    what = "called faster or slower" if aa else "decided slower"
    lo, hi = wilson(k, n)
    secs = [float(r[2]) for r in t if r[1] in ("faster", "slower", "equivalent")]
    print(f"| {s} | {n} | {c['faster']} | {c['slower']} | {c['equivalent']} | {c['inconclusive']} | {c['error']} | "
          f"{what}: {k}/{n} = {k / n:.1%} ({lo:.1%}-{hi:.1%}) | {q(secs, 0.5):.1f} / {q(secs, 0.9):.1f} / {max(secs) if secs else float('nan'):.1f} | "
          f"{q([float(r[4]) for r in t if r[4] != 'nan'], 0.5):.3f} | {sum(int(r[5]) for r in t if len(r) > 5)} |")
print()
print("A/A trials that called a row (scenario, verdict, seconds, pairs, B/A of the farthest row, its medians A and B):")
print()
for r in rows:
    if r[0].startswith("aa") and r[1] in ("faster", "slower"):
        print("- " + " ".join(r[:5]) + (f", medians {r[6]} / {r[7]}" if len(r) > 7 else ""))
EOF
