#!/usr/bin/env bash
# bench/layers.sh - what the per-layer tracer costs and whether it traces
# everything (a benchmark, not a test: root, about 10 minutes on loopback):
#
#   1. ping --layers, RUNS times: every round trip traced, none lost, the
#      segments adding up, and the traced median over the untraced one
#      measured just before it (the command's own figure);
#   2. what each probe costs: the same with one probe left out at a time
#      (STACKMETER_LAYERS_SKIP), the medians side by side, and one run
#      with the kernel counting each program's time (STACKMETER_LAYERS_STATS);
#   3. rr --layers against stackmeter's embedded responder (1:1K, 1:100K,
#      100K:1) on one CPU and across two,
#      and the echo in the application (serve --plain-echo) against the
#      echo in the kernel (serve --in-kernel sockmap) at 1K:1K and
#      100K:100K, side by side in one report.
#
# Placements are said in the report (ping: both on CPU 1, across CPUs 1 and
# 0, and the scheduler's choice). Prints a Markdown report on
# stdout; progress on stderr. Environment: RUNS (5), COUNT (10000), SM
# (target/release/stackmeter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
RUNS=${RUNS:-5}
COUNT=${COUNT:-10000}
[[ -x $SM ]] || { echo "bench/layers.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench/layers.sh: needs root (BPF)" >&2; exit 1; }
source "$ROOT/bench/lib.sh"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK STACKMETER_DB=$WORK/results.db

# The figures of a ping or rr --layers JSON document, a line per row:
# traced/of, lost, traced p50, untraced p50, ratio, segments' sum against
# the traced mean.
figures() {
    python3 -c '
import json, sys
who = sys.argv[1] if len(sys.argv) > 1 else ""
v = json.load(sys.stdin)
for r in v["results"]:
    l = r["layers"]
    s = sum(x["mean_us"] for x in l["segments"])
    label = str(r.get("bytes", "")) or "%s:%s" % (r["req_bytes"], r["resp_bytes"])
    ratio = l["traced_p50_us"] / l["untraced_p50_us"]
    print("| %s%s | %d of %d | %d | %.2f | %.2f | %.3f | %.2f / %.2f |" % (who, label, l["round_trips"], l["exchanges"],
          l["lost_records"], l["traced_p50_us"], l["untraced_p50_us"], ratio, s, l["traced_mean_us"]))
' "$@"
}

# ping_layers PLACEMENT: the embedded responder and the client where
# PLACEMENT says: "same" (both on CPU 1), "across" (client CPU 1, responder
# CPU 0) or "free" (no placement given: what a user gets, --layers's own
# default placement).
ping_layers() {
    local where=()
    case $1 in
        same) where=(--affinity 1 --responder-affinity 1) ;;
        across) where=(--affinity 1 --responder-affinity 0) ;;
    esac
    "$SM" ping --layers --count "$COUNT" "${where[@]}" --no-store --json 2>/dev/null
}

echo "# The per-layer tracer: what it costs, whether it traces everything"
echo
echo "$(machine_line); $COUNT round trips a run; \`$SM\`. Placement: *same* both on CPU 1, *across* the client on CPU 1 and the responder on CPU 0, *free* no placement given (--layers's own default); rr's responders on CPU 0 and its client on CPU 1."
echo
echo "## ping --layers on loopback, $RUNS runs per placement"
echo
echo "| placement, bytes | traced | records lost | traced p50 (us) | untraced p50 (us) | traced / untraced | segments' sum / traced mean (us) |"
echo "|---|---|---|---|---|---|---|"
for where in same across free; do
    for ((i = 1; i <= RUNS; i++)); do
        note "ping --layers $where, run $i"
        ping_layers "$where" | figures "$where, "
    done
done
echo
echo "## Each probe left out in turn"
echo
echo "Both on CPU 1 (where every probe's time adds to the round trip). The traced median with every probe but one over the untraced median of the same command; the difference from the full tracer's ratio is that probe's share. Medians of $RUNS runs."
echo
echo "| left out | traced / untraced (median of runs) |"
echo "|---|---|"
for skip in none net_dev_queue net_dev_start_xmit netif_rx netif_receive_skb sk_data_ready sock_recv_length fib_table_lookup; do
    note "ping --layers without $skip"
    ratios=()
    for ((i = 1; i <= RUNS; i++)); do
        env_skip=$skip
        [[ $skip == none ]] && env_skip=
        ratios+=("$(STACKMETER_LAYERS_SKIP=$env_skip ping_layers same | python3 -c '
import json, sys
l = json.load(sys.stdin)["results"][0]["layers"]
print("%.4f" % (l["traced_p50_us"] / l["untraced_p50_us"]))')")
    done
    printf '| %s | %s |\n' "$skip" "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
done
echo
echo "## The kernel's own count of each probe (one run, STACKMETER_LAYERS_STATS=1)"
echo
echo "Counting costs a clock read per program run, so this run is slower; runs include every packet and system call of the machine that reaches the tracepoint."
echo
echo "| tracepoint | runs per round trip | ns per run | ns per round trip |"
echo "|---|---|---|---|"
STACKMETER_LAYERS_STATS=1 ping_layers same | python3 -c '
import json, sys
l = json.load(sys.stdin)["results"][0]["layers"]
for p in l["probes"]:
    print("| %s | %.2f | %.0f | %.0f |" % (p["tracepoint"], p["runs"] / max(l["round_trips"], 1), p["ns_per_run"], p["ns_per_round_trip"]))'
echo

# serve_on PORT LOG ARGS...: a responder on CPU 0, waited for.
serve_on() {
    local port=$1 log=$2
    shift 2
    taskset -c 0 "$SM" serve --listen "127.0.0.1:$port" "$@" 2>"$log" &
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$log" && break; sleep 0.05; done
    grep -q "listening on tcp" "$log" || die "serve $*: $(cat "$log")"
}

rr_layers() {
    taskset -c 1 "$SM" rr "$@" --layers -n "$COUNT" 2>/dev/null
}

echo "## rr --layers against stackmeter's responder (embedded)"
echo
echo "| placement, sizes | traced | records lost | traced p50 (us) | untraced p50 (us) | traced / untraced | segments' sum / traced mean (us) |"
echo "|---|---|---|---|---|---|---|"
for where in same across; do
    place=(--affinity 1 --responder-affinity 1)
    [[ $where == across ]] && place=(--affinity 1 --responder-affinity 0)
    for ((i = 1; i <= 2; i++)); do
        note "rr --layers $where, run $i"
        "$SM" rr --layers -n "$COUNT" "${place[@]}" --sizes 1:1K,1:100K,100K:1 --no-store --json 2>/dev/null | figures "$where, "
    done
done
echo
echo "## The echo in the application against the echo in the kernel (sockmap)"
echo
echo "The echo servers on CPU 0, the client on CPU 1."
echo
serve_on 24842 "$WORK/app.log" --plain-echo
serve_on 24843 "$WORK/sockmap.log" --in-kernel sockmap
echo "| echo, sizes | traced | records lost | traced p50 (us) | untraced p50 (us) | traced / untraced | segments' sum / traced mean (us) |"
echo "|---|---|---|---|---|---|---|"
note "rr --layers, application echo"
rr_layers 127.0.0.1:24842 --echo --sizes 1K:1K,100K:100K --label app --json | figures "application "
note "rr --layers, sockmap echo"
rr_layers 127.0.0.1:24843 --echo --sizes 1K:1K,100K:100K --label sockmap --json | figures "sockmap "
echo
echo '```text'
"$SM" report app sockmap --format text -o "$WORK/report.txt" 2>/dev/null
sed -n '/layer by layer/,/^Environment/p' "$WORK/report.txt" | sed '$d'
echo '```'
