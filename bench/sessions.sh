#!/usr/bin/env bash
# bench/sessions.sh - the responder's sessions on its event loop (a
# benchmark, not a test). Prints a Markdown report on stdout, progress on
# stderr; exits 0 unless it cannot run at all.
#  1. Where a session runs: rr p50 against `serve --threads 64` (a latency
#     session moves to a thread of its own when its data starts) and
#     `serve --threads 0` (every session on the event loop), rounds
#     interleaved, one session and 8 at once.
#  2. Idle sessions: serve's VmRSS before and with IDLE idle rr sessions
#     (accepted, then silent) held by bench/idle_sessions.py from many
#     127.0.0.x source addresses, and rr 64:64 p50 on another session
#     without and with them, interleaved per round. IDLE is capped by the
#     open-files limits (serve's and the holders'), and the report says so.
#     With BEFORE=/path/to/an/older/stackmeter, the same RSS figure for it.
#  3. load --clients 10000 from one process against --clients 50.
# Everything pinned: responder on SERVER_CPU, clients on CLIENT_CPU.
#
# Environment (default): STACKMETER (target/release/stackmeter), IDLE
# (100000), ROUNDS (3), N (20000 timed rr transactions), PORT (31700),
# SERVER_CPU (0), CLIENT_CPU (1), BEFORE (unset), LOAD (1).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
IDLE=${IDLE:-100000}
ROUNDS=${ROUNDS:-3}
N=${N:-20000}
PORT=${PORT:-31700}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BEFORE=${BEFORE:-}
LOAD=${LOAD:-1}
HOLDER=$REPO_ROOT/bench/idle_sessions.py
[[ -x $STACKMETER ]] || { echo "bench/sessions.sh: build first (cargo build --release): $STACKMETER" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap pids_cleanup EXIT
log() { echo "bench/sessions.sh: $*" >&2; }
ulimit -n "$(ulimit -Hn)"
nofile=$(ulimit -n)

# serve NAME PORT BINARY [ARGS...]: starts a pinned serve, sets SERVE_PID.
serve() {
    local name=$1 port=$2 bin=$3
    shift 3
    taskset -c "$SERVER_CPU" "$bin" serve --listen "127.0.0.1:$port" --affinity "$SERVER_CPU" \
        --idle-timeout-ms 600000 "$@" 2>"$work/$name.log" &
    SERVE_PID=$!
    pids+=("$SERVE_PID")
    for _ in $(seq 100); do grep -q "listening on tcp" "$work/$name.log" 2>/dev/null && return 0; sleep 0.05; done
    log "serve $name did not start"; cat "$work/$name.log" >&2; exit 1
}
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
threads() { awk '/^Threads/ {print $2}' "/proc/$1/status"; }
# p50 TARGET SIZES [N]: rr p50 in us of one pinned closed-loop session.
p50() {
    taskset -c "$CLIENT_CPU" "$STACKMETER" rr "$1" --sizes "$2" -n "${3:-$N}" --affinity "$CLIENT_CPU" --no-store --json 2>/dev/null |
        python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['rtt_us']['p50'])" || echo nan
}
# p50_crr TARGET: crr's transaction p50 in us (the connect excluded).
p50_crr() {
    taskset -c "$CLIENT_CPU" "$STACKMETER" crr "$1" -n $((N / 5)) --affinity "$CLIENT_CPU" --no-store --json 2>/dev/null |
        python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['transaction_us']['p50'])" || echo nan
}
# p50_many TARGET K: the median of K simultaneous sessions' p50s (64:64).
p50_many() {
    local i
    for ((i = 0; i < $2; i++)); do
        taskset -c "$CLIENT_CPU" "$STACKMETER" rr "$1" --sizes 64:64 -n $((N / 4)) --no-store --json >"$work/many.$i.json" 2>/dev/null &
    done
    wait_clients
    python3 - "$work" "$2" <<'PY'
import json, statistics, sys
w, k = sys.argv[1], int(sys.argv[2])
v = [json.load(open(f"{w}/many.{i}.json"))["results"][0]["rtt_us"]["p50"] for i in range(k)]
print(statistics.median(v))
PY
}
wait_clients() { local p; for p in $(jobs -p); do [[ " ${pids[*]} " == *" $p "* ]] || wait "$p" || true; done; }
med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(round(statistics.median(v),2) if v else 'nan')" "$@"; }
ratio() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(round(b/a,3) if a>0 else 'nan')" "$1" "$2"; }

echo "# stackmeter sessions benchmark"
echo
echo "$(machine_line)."
echo "Responder pinned to CPU $SERVER_CPU, clients to CPU $CLIENT_CPU; $ROUNDS rounds, interleaved; medians of the rounds."
echo

echo "## 1. Where a session runs: its own thread or the event loop"
echo
serve threads $PORT "$STACKMETER"
t_pid=$SERVE_PID
serve loop $((PORT + 1)) "$STACKMETER" --threads 0
l_pid=$SERVE_PID
T1=127.0.0.1:$PORT
T2=127.0.0.1:$((PORT + 1))
declare -A a b
for ((r = 0; r < ROUNDS; r++)); do
    log "section 1, round $((r + 1))"
    for sz in 64:64 1K:1K 1:1M; do
        n=$N
        [[ $sz == 1:1M ]] && n=2000
        a[$sz]+=" $(p50 $T1 $sz $n)"
        b[$sz]+=" $(p50 $T2 $sz $n)"
    done
    a[crr]+=" $(p50_crr $T1)"
    b[crr]+=" $(p50_crr $T2)"
    for k in 2 4 8; do
        a[many$k]+=" $(p50_many $T1 $k)"
        b[many$k]+=" $(p50_many $T2 $k)"
    done
done
echo "| rr | p50 with --threads 64 (the default), us | p50 on the loop (--threads 0), us | loop / default |"
echo "|---|---|---|---|"
for sz in 64:64 1K:1K 1:1M crr many2 many4 many8; do
    # shellcheck disable=SC2086
    ma=$(med ${a[$sz]}) mb=$(med ${b[$sz]})
    label=$sz
    [[ $sz == crr ]] && label="crr 1:1, transaction (on the loop in both: an A-A row, the noise)"
    [[ $sz == many* ]] && label="64:64, ${sz#many} sessions at once (median of their p50s)"
    echo "| $label | $ma (${a[$sz]# }) | $mb (${b[$sz]# }) | $(ratio "$ma" "$mb") |"
done
kill "$t_pid" "$l_pid" 2>/dev/null || true
echo

echo "## 2. Idle sessions held, and an rr beside them"
echo
serve idle $PORT "$STACKMETER"
s_pid=$SERVE_PID
T=127.0.0.1:$PORT
limit=$(awk '/^Max open files/ {print $4}' "/proc/$s_pid/limits")
held=$IDLE
(( held > limit - 200 )) && held=$((limit - 200))
per_holder=$((nofile - 100))
holders=$(( (held + per_holder - 1) / per_holder ))
if (( held < IDLE )); then
    echo "**$held idle sessions, not $IDLE**: serve's open-files limit is $limit (hard limit $(ulimit -Hn); raising it needs CAP_SYS_RESOURCE)."
    echo
fi
# hold K: starts the holders of K sessions, waits until all are accepted.
hold() {
    local k=$1 i n left=$1
    for ((i = 0; i < holders; i++)); do
        n=$(( left < per_holder ? left : per_holder ))
        left=$((left - n))
        rm -f "$work/h$i.in" "$work/h$i.out"
        mkfifo "$work/h$i.in"
        taskset -c "$CLIENT_CPU" python3 "$HOLDER" 127.0.0.1 "$PORT" "$n" $((2 + i * 8)) 8 <"$work/h$i.in" >"$work/h$i.out" &
        pids+=("$!")
        eval "exec {hw$i}>\"$work/h$i.in\""
    done
    for ((i = 0; i < holders; i++)); do
        for _ in $(seq 1200); do grep -q ready "$work/h$i.out" 2>/dev/null && break; sleep 0.1; done
        grep -q ready "$work/h$i.out" || { log "holder $i did not get its sessions"; return 1; }
    done
}
# release: closes the holders' stdin; they close their sockets and exit.
release() {
    local i fdv
    for ((i = 0; i < holders; i++)); do
        fdv=hw$i
        eval "exec ${!fdv}>&-"
    done
    wait_clients
    for _ in $(seq 200); do
        [[ $(grep -o "sessions: [0-9]* active" "$work/idle.log" | tail -1) == "sessions: 0 active" ]] && break
        sleep 0.1
    done
}
p50 "$T" 64:64 2000 >/dev/null # a first thread and its stack in the baseline
# One baseline: memory freed when a round's sessions close stays with the
# allocator and is reused by the next round's.
r0=$(rss "$s_pid")
without="" with="" perkib="" thr=""
for ((r = 0; r < ROUNDS; r++)); do
    log "section 2, round $((r + 1)): rr without"
    without+=" $(p50 "$T" 64:64)"
    log "section 2, round $((r + 1)): opening $held idle sessions"
    hold "$held"
    sleep 1
    r1=$(rss "$s_pid")
    thr+=" $(threads "$s_pid")"
    perkib+=" $(python3 -c "print(round(($r1 - $r0) / $held, 3))")"
    log "section 2, round $((r + 1)): rr with"
    with+=" $(p50 "$T" 64:64)"
    release
done
mw=$(med $without) mi=$(med $with)
echo "| figure | value (rounds) |"
echo "|---|---|"
echo "| idle sessions held (accepted rr sessions, silent) | $held, from $holders holder process(es), 8 source addresses each |"
echo "| serve VmRSS per idle session (with them, less before the first round), KiB | $(med $perkib) ($perkib ) |"
echo "| serve threads with them | $thr |"
echo "| rr 64:64 p50 without, us | $mw ($without ) |"
echo "| rr 64:64 p50 with them, us | $mi ($with ) |"
echo "| with / without, medians | $(ratio "$mw" "$mi") |"
# shellcheck disable=SC2086
echo "| with / without, median of each round's pair | $(python3 -c "import statistics,sys; h=len(sys.argv[1:])//2; a=sys.argv[1:h+1]; b=sys.argv[h+1:]; print(round(statistics.median(float(y)/float(x) for x,y in zip(a,b)),3))" $without $with) |"
kill "$s_pid" 2>/dev/null || true
if [[ -n $BEFORE && -x $BEFORE ]]; then
    log "section 2: the same idle sessions against $BEFORE"
    b_held=$held
    # An older serve has a session cap: ask for all of them.
    serve idle $PORT "$BEFORE" --max-sessions $((b_held + 10))
    s_pid=$SERVE_PID
    p50 "$T" 64:64 2000 >/dev/null
    r0=$(rss "$s_pid")
    if hold "$b_held"; then
        sleep 1
        r1=$(rss "$s_pid")
        echo "| the same, $BEFORE: VmRSS per idle session, KiB | $(python3 -c "print(round(($r1 - $r0) / $b_held, 3))") (threads $(threads "$s_pid")) |"
        echo "| the same, $BEFORE: rr 64:64 p50 with them, us | $(p50 "$T" 64:64) |"
    fi
    release
    kill "$s_pid" 2>/dev/null || true
fi
echo

if [[ $LOAD == 1 ]]; then
    echo "## 3. load from one process: 10,000 clients against 50"
    echo
    serve load $PORT "$STACKMETER"
    s_pid=$SERVE_PID
    echo "| clients | runs | Mbit/s | requests/s | 4K p50 us | errors | bytes verified | clients completed | client max RSS MiB | wall s |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for c in 50 10000; do
        reps=3
        [[ $c == 10000 ]] && reps=1
        log "section 3: load --clients $c"
        /usr/bin/time -f "%M" -o "$work/load.time" taskset -c "$CLIENT_CPU" "$STACKMETER" load "$T" --clients "$c" \
            --fetch-each 1 --repeat "$reps" --timeout-ms 120000 --no-store --json >"$work/load.json" 2>/dev/null || true
        python3 - "$work/load.json" "$work/load.time" "$c" "$reps" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1])); s = d["summary"]; rs = d["results"]
    kb = int(open(sys.argv[2]).read().split()[-1])
    p50 = [o["latency_us"]["p50"] for o in s["by_object"] if o["name"] == "4K"][0]
    print(f"| {sys.argv[3]} | {sys.argv[4]} | {s['rate_mbps']['mean']:.0f} | {s['requests_per_s']['mean']:.0f} | {p50:.0f} | {sum(r['errors'] for r in rs)} | {all(r['bytes'] == r['verified_bytes'] for r in rs)} | {min(r['clients_completed'] for r in rs)} | {kb / 1024:.0f} | {s['wall_s']['mean']:.2f} |")
except Exception as e:
    print(f"| {sys.argv[3]} | failed: {e} | | | | | | | | |")
PY
    done
    kill "$s_pid" 2>/dev/null || true
    echo
fi
echo "Commands: serve --listen 127.0.0.1:PORT --affinity $SERVER_CPU --idle-timeout-ms 600000 [--threads 0]; rr --sizes S -n $N --affinity $CLIENT_CPU (1:1M: -n 2000; 8 at once: -n $((N / 4)) each); bench/idle_sessions.py; load --clients C --fetch-each 1 --timeout-ms 120000."
