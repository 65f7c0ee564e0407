#!/usr/bin/env bash
# bench/proxies-race.sh - races the TCP proxies of proxies/ (SolidFrame's
# relay, the 2010 boost::asio proxy, our Boost.Asio proxy) in front of one
# `stackmeter serve`, and the client straight against it, on loopback (a
# benchmark and a robustness check by hand, not a test). For each:
#  1. `load`: CLIENTS clients each list the objects and fetch every one
#     FETCH times, every byte checked (the 2010 proxy comparison's test),
#     REPEAT rounds of one run through each target, interleaved: median wall
#     time, MB/s, the proxy's and the server's CPU seconds (utime + stime)
#     and the proxy's peak RSS (VmHWM);
#  2. `rr --sizes 64:64` open loop at RR_RATE/s over RR_CONNS connections,
#     alone and while a load run goes on: latency through the proxy;
#  3. bench/mcu_hostile.py (junk, connect floods, a connection flood), then
#     whether the proxy still forwards and is idle (no spin);
#  4. the edges (proxies/edge_checks.py on a second instance): a half-close
#     forwarded or not, an upstream that never accepts, an upstream that is
#     down, CAPACITY connections at once; and a run out of file descriptors (the proxy under a limit of 64
#     open files, 60 connections at once): does it accept again afterwards;
#  5. SIGTERM: does it exit, how fast, with what status.
# Server and proxy run on SERVER_CPU, the clients on CLIENT_CPU. Prints a
# Markdown report on stdout, progress on stderr.
#
# Environment (default): STACKMETER (target/release/stackmeter), PROXIES
# (proxies/build, from `make -C proxies`), OBJECTS_DIR (10 files from 4 KiB
# to 8800 KiB, 44 MB in all, made in a temporary folder), TARGETS (direct
# solidframe asio-2010 asio: those built), CLIENTS (50), FETCH (2), REPEAT
# (5), RR_RATE (2000), RR_CONNS (50), RR_TIME (5), RR HOSTILE EDGES (1 each:
# 0 leaves out part 2, 3, or 4), CAPACITY (5000), PORT_BASE
# (24700: the server on PORT_BASE, the proxies on the next ports, the edge
# checks on PORT_BASE+10 and +11), SERVER_CPU (1), CLIENT_CPU (0), KEEP (0;
# 1 keeps the raw outputs).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
PROXIES=${PROXIES:-proxies/build}
[[ $PROXIES == /* ]] || PROXIES=$REPO_ROOT/$PROXIES
TARGETS=${TARGETS:-direct solidframe asio-2010 asio}
CLIENTS=${CLIENTS:-50}
FETCH=${FETCH:-2}
REPEAT=${REPEAT:-5}
RR_RATE=${RR_RATE:-2000}
RR_CONNS=${RR_CONNS:-50}
RR_TIME=${RR_TIME:-5}
CAPACITY=${CAPACITY:-5000}
RR=${RR:-1}
HOSTILE=${HOSTILE:-1}
EDGES=${EDGES:-1}
PORT_BASE=${PORT_BASE:-24700}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
[[ -x $STACKMETER ]] || { echo "bench/proxies-race.sh: build first (cargo build --release): $STACKMETER" >&2; exit 1; }
work=$(mktemp -d)
pids=()
if [ "${KEEP:-0}" = 1 ]; then
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; log "raw outputs kept in $work"' EXIT
else
    trap pids_cleanup EXIT
fi
log() { echo "bench/proxies-race.sh: $*" >&2; }
SERVE_PORT=$PORT_BASE
EDGE_PORT=$((PORT_BASE + 10))
EDGE_UPSTREAM=$((PORT_BASE + 11))
HZ=$(getconf CLK_TCK)

# The objects: 10 files, 4 KiB to 8800 KiB, 44,249,088 bytes.
make_objects() {
    local dir=$1 i=0 s
    mkdir -p "$dir"
    for s in 4K 100K 1M 2560K 4M 5M 6M 7M 8M 8800K; do
        i=$((i + 1))
        head -c "$s" /dev/urandom >"$dir/$(printf 'obj%02d-%s' "$i" "$s")"
    done
}

# start_proxy NAME LISTEN_PORT FORWARD_PORT [WRAPPER...]: the uniform
# command line of each proxy (proxies/README.md); sets PROXY_PID.
start_proxy() {
    local name=$1 listen=$2 forward=$3
    shift 3
    local cmd
    case $name in
    solidframe) cmd=("$PROXIES/solidframe" -a 127.0.0.1 -l "$listen" -c "127.0.0.1:$forward") ;;
    asio-2010) cmd=("$PROXIES/asio-2010" "$listen" 127.0.0.1 "$forward") ;;
    asio) cmd=("$PROXIES/asio" --listen "127.0.0.1:$listen" --forward "127.0.0.1:$forward") ;;
    esac
    "$@" taskset -c "$SERVER_CPU" "${cmd[@]}" </dev/null >>"$work/$name-$listen.log" 2>&1 &
    PROXY_PID=$!
    pids+=("$PROXY_PID")
    wait_listen t "$listen" "$PROXY_PID" || { log "$name did not start:"; cat "$work/$name-$listen.log" >&2; return 1; }
}

# stop PID: SIGTERM; sets STOPPED to "exit STATUS after N ms" or "still
# running 5 s after SIGTERM (killed)". Not in a subshell: it waits for PID.
stop() {
    local pid=$1 t0 rc=0
    t0=$(date +%s%N)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
        if ! kill -0 "$pid" 2>/dev/null || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
            wait "$pid" 2>/dev/null || rc=$?
            STOPPED="exit $rc after $((($(date +%s%N) - t0) / 1000000)) ms"
            [ "$rc" -gt 128 ] && STOPPED="$STOPPED (killed by signal $((rc - 128)))"
            return 0
        fi
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    STOPPED="still running 5 s after SIGTERM (killed)"
}

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
client() { taskset -c "$CLIENT_CPU" "$STACKMETER" "$@"; }
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# A short load through PORT that must verify: "forwards" or what failed.
still_forwards() {
    if timeout 60 "$STACKMETER" load "127.0.0.1:$1" --clients 2 --fetch-each 1 --repeat 1 --timeout-ms 3000 \
        --no-store --json >"$work/check.json" 2>"$work/check.err" &&
        [ "$(py "$work/check.json" "d['results'][0]['verified_bytes'] == d['results'][0]['bytes'] and d['results'][0]['errors'] == 0")" = True ]; then
        echo "forwards"
    else
        echo "does NOT forward ($(tail -n 1 "$work/check.err" | sed 's/^stackmeter: error: //' | cut -c1-70)...)"
    fi
}

# Percent of one CPU PID uses over one second.
idle_cpu() {
    local a b
    a=$(cpu_ticks "$1")
    sleep 1
    b=$(cpu_ticks "$1")
    echo "$(((b - a) * 100 / HZ))%"
}

# load_round ROUND NAME: one load run through NAME; appends "wall_s bytes
# ok proxy_cpu_s server_cpu_s" to $work/NAME.load.
load_round() {
    local round=$1 name=$2 pid=${PID[$2]:-} s0 s1 p0=0 p1=0 out=$work/$2.load.$1.json
    s0=$(cpu_ticks "$serve_pid")
    [ -n "$pid" ] && p0=$(cpu_ticks "$pid")
    client load "127.0.0.1:${PORT[$name]}" --clients "$CLIENTS" --fetch-each "$FETCH" --repeat 1 \
        --no-store --json >"$out" 2>"$out.err" || true
    s1=$(cpu_ticks "$serve_pid")
    [ -n "$pid" ] && p1=$(cpu_ticks "$pid")
    if [ -s "$out" ] && [ "$(py "$out" "len(d['results'])")" != 0 ]; then
        py "$out" "'%f %d %s' % (d['results'][0]['wall_s'], d['results'][0]['bytes'],
            'ok' if d['complete'] and d['results'][0]['errors'] == 0 and d['results'][0]['verified_bytes'] == d['results'][0]['bytes'] else 'BAD')"
    else
        echo "nan 0 FAILED"
    fi | awk -v p=$((p1 - p0)) -v s=$((s1 - s0)) -v hz="$HZ" '{ printf "%s %s %s %.2f %.2f\n", $1, $2, $3, p / hz, s / hz }' \
        >>"$work/$name.load"
}

# The load table: medians over the rounds, and each against the first proxy.
load_table() {
    python3 - "$work" "${ran[@]}" <<'PY'
import math, statistics as st, sys
work, names = sys.argv[1], sys.argv[2:]
rows, med = {}, {}
for n in names:
    runs = [l.split() for l in open("%s/%s.load" % (work, n))]
    walls = [float(r[0]) for r in runs]
    med[n] = st.median(walls)
    rows[n] = (runs, walls)
ref = next((n for n in names if n != "direct"), None)
for n in names:
    runs, walls = rows[n]
    nbytes = st.median(int(r[1]) for r in runs)
    good = sum(r[2] == "ok" for r in runs)
    ok = good == len(runs)
    pcpu = "-" if n == "direct" else "%.1f" % st.median(float(r[3]) for r in runs)
    scpu = "%.1f" % st.median(float(r[4]) for r in runs)
    rel = "%.2f" % (med[n] / med[ref]) if ref and not math.isnan(med[n]) else "-"
    print("| %s | %.2f (%.2f-%.2f) | %.0f | %s | %s | %s | %s | %s |" % (
        n, med[n], min(walls), max(walls), nbytes / med[n] / 1e6, rel,
        "yes" if ok else "NO: %d of %d runs" % (good, len(runs)), pcpu, scpu, open("%s/%s.hwm" % (work, n)).read().strip()))
PY
}

# rr_row NAME: rr alone, then rr while a load run goes on.
rr_row() {
    local name=$1 port=${PORT[$1]}
    log "$name: rr alone"
    client rr "127.0.0.1:$port" --sizes 64:64 --rate "$RR_RATE" --connections "$RR_CONNS" --time "$RR_TIME" \
        --no-store --json >"$work/$name.rr.json" 2>"$work/$name.rr.err" || true
    log "$name: rr during a load run"
    client load "127.0.0.1:$port" --clients "$CLIENTS" --fetch-each "$FETCH" --repeat 1 --no-store --json \
        >"$work/$name.bg.json" 2>"$work/$name.bg.err" &
    local bg=$!
    sleep 1
    client rr "127.0.0.1:$port" --sizes 64:64 --rate "$RR_RATE" --connections "$RR_CONNS" --time "$RR_TIME" \
        --no-store --json >"$work/$name.rrload.json" 2>"$work/$name.rrload.err" || true
    local bg_done=yes
    kill -0 "$bg" 2>/dev/null || bg_done="no (ended first)"
    wait "$bg" || true
    echo "| $name | $(rr_cells "$work/$name.rr.json") | $(rr_cells "$work/$name.rrload.json") | $bg_done |"
}

# hostile_row NAME: bench/mcu_hostile.py, then does it still forward, idle.
hostile_row() {
    local name=$1 port=${PORT[$1]} pid=${PID[$1]:-} hostile idle=- flood
    log "$name: hostile clients"
    if timeout 300 python3 "$REPO_ROOT/bench/mcu_hostile.py" 127.0.0.1 "$port" 20 >"$work/$name.hostile" 2>&1; then
        hostile=passed
    else
        hostile="FAILED: $(tail -n 1 "$work/$name.hostile" | cut -c1-60)"
    fi
    flood=$(grep '^flood' "$work/$name.hostile" | sed 's/.*slots): //' || true)
    [ -n "$pid" ] && idle=$(idle_cpu "$pid")
    echo "| $name | $hostile | $flood | $(still_forwards "$port") | $idle |"
}

rr_cells() {
    if [ -s "$1" ]; then
        py "$1" "' | '.join(['%.0f' % d['results'][0]['rtt_us'][k] for k in ('p50', 'p99', 'p999', 'max')] + ['%.0f' % d['results'][0]['achieved_rate']])"
    else
        echo "failed | - | - | - | -"
    fi
}

# run_edges NAME: the edge checks on a second instance forwarding to a
# port edge_checks.py plays, then the run out of descriptors.
run_edges() {
    local name=$1 c out row=""
    log "$name: edges"
    start_proxy "$name" "$EDGE_PORT" "$EDGE_UPSTREAM"
    for c in halfclose timeout upstream-down capacity; do
        out=$(timeout 90 python3 "$REPO_ROOT/proxies/edge_checks.py" "$c" "$EDGE_PORT" "$EDGE_UPSTREAM" "$CAPACITY" 2>&1 |
            tail -n 1 || true)
        row="$row | ${out#*: }"
    done
    stop "$PROXY_PID"
    log "$name: out of file descriptors"
    start_proxy "$name" "$EDGE_PORT" "$SERVE_PORT" prlimit --nofile=64:64
    python3 - "$EDGE_PORT" >"$work/$name.fd" 2>&1 <<'PY'
import socket, sys, time
held = []
for i in range(60):
    try:
        held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2))
    except OSError:
        break
time.sleep(1.5)
for s in held:
    s.close()
print(len(held))
PY
    sleep 1
    row="$row | $(still_forwards "$EDGE_PORT")"
    stop "$PROXY_PID"
    echo "| $name$row |" >"$work/$name.row4"
}

ulimit -n "$(ulimit -Hn)"
if [ -z "${OBJECTS_DIR:-}" ]; then
    OBJECTS_DIR=$work/objects
    make_objects "$OBJECTS_DIR"
fi
taskset -c "$SERVER_CPU" "$STACKMETER" serve --listen "127.0.0.1:$SERVE_PORT" --objects-dir "$OBJECTS_DIR" --quiet \
    </dev/null >"$work/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
wait_listen t "$SERVE_PORT" "$serve_pid" || { cat "$work/serve.log" >&2; exit 1; }

declare -A PORT PID
PORT[direct]=$SERVE_PORT
ran=()
i=0
for t in $TARGETS; do
    i=$((i + 1))
    if [ "$t" != direct ]; then
        if [ ! -x "$PROXIES/$t" ]; then
            log "$t: $PROXIES/$t not built (make -C proxies $t); skipped"
            continue
        fi
        PORT[$t]=$((PORT_BASE + i))
        start_proxy "$t" "${PORT[$t]}" "$SERVE_PORT"
        PID[$t]=$PROXY_PID
    fi
    ran+=("$t")
done

# The load race: round after round, each target once per round, the order
# turned by one each round, so that a busy moment of the machine spreads
# over all of them.
for round in $(seq "$REPEAT"); do
    order=("${ran[@]:$(((round - 1) % ${#ran[@]}))}" "${ran[@]:0:$(((round - 1) % ${#ran[@]}))}")
    for t in "${order[@]}"; do
        log "round $round/$REPEAT: load through $t"
        load_round "$round" "$t"
    done
done
for t in "${ran[@]}"; do
    if [ -n "${PID[$t]:-}" ]; then hwm_kib "${PID[$t]}" >"$work/$t.hwm"; else echo - >"$work/$t.hwm"; fi
done
if [ "$RR" = 1 ]; then
    for t in "${ran[@]}"; do rr_row "$t" >"$work/$t.row2"; done
fi
if [ "$HOSTILE" = 1 ]; then
    for t in "${ran[@]}"; do hostile_row "$t" >"$work/$t.row3"; done
fi
for t in "${ran[@]}"; do
    [ -n "${PID[$t]:-}" ] || continue
    stop "${PID[$t]}"
    echo "| $t | $STOPPED |" >"$work/$t.row5"
    [ "$EDGES" = 1 ] && run_edges "$t"
done

total=$(du -cb "$OBJECTS_DIR" | tail -n 1 | cut -f1)
echo "# TCP proxies raced in front of stackmeter serve"
echo
machine_line
echo
echo "Server and proxy on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU; objects: $(find "$OBJECTS_DIR" -maxdepth 1 -type f | wc -l) files, $total bytes."
echo
echo "## Load: $CLIENTS clients, each fetches every object $FETCH times; medians of $REPEAT interleaved runs"
echo
ref=-
for t in "${ran[@]}"; do [ "$t" != direct ] && { ref=$t; break; }; done
echo "| target | wall s, median (min-max) | MB/s | wall / $ref's | every byte verified | proxy CPU s per run | server CPU s per run | proxy VmHWM KiB |"
echo "|---|---|---|---|---|---|---|---|"
load_table
echo
echo "Wall seconds of each run, in the order run (round by round; * a run not verified):"
echo
for t in "${ran[@]}"; do echo "- $t: $(awk '{ printf "%s%.2f%s", sep, $1, $3 == "ok" ? "" : "*"; sep = ", " }' "$work/$t.load")"; done
for f in "$work"/*.load.*.json; do
    [ "$(py "$f" "d['complete'] and not d['error'] and all(r['errors'] == 0 and r['verified_bytes'] == r['bytes'] for r in d['results'])" 2>/dev/null)" = True ] && continue
    echo "- not verified: $(basename "$f" .json): $(py "$f" "d['error'] or d['warnings'] or [r['errors'] for r in d['results']]" 2>/dev/null || tail -n 1 "$f.err")"
done
if [ "$RR" = 1 ]; then
    echo
    echo "## Latency: rr 64:64 open loop, $RR_RATE/s over $RR_CONNS connections, $RR_TIME s (microseconds)"
    echo
    echo "| target | alone p50 | p99 | p99.9 | max | achieved/s | during load p50 | p99 | p99.9 | max | achieved/s | load still running at the end |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for t in "${ran[@]}"; do cat "$work/$t.row2"; done
fi
if [ "$HOSTILE" = 1 ]; then
    echo
    echo "## Hostile clients (bench/mcu_hostile.py, 20 slots)"
    echo
    echo "| target | result | flood | afterwards | proxy CPU when idle afterwards |"
    echo "|---|---|---|---|---|"
    for t in "${ran[@]}"; do cat "$work/$t.row3"; done
fi
if [ "$EDGES" = 1 ]; then
    echo
    echo "## Edges (proxies/edge_checks.py) and a run out of file descriptors (limit 64, 60 connections at once)"
    echo
    echo "| proxy | half-close | upstream never accepts | upstream down | $CAPACITY connections at once | after running out of descriptors |"
    echo "|---|---|---|---|---|---|"
    for t in "${ran[@]}"; do [ -f "$work/$t.row4" ] && cat "$work/$t.row4"; done
fi
echo
echo "## SIGTERM"
echo
echo "| proxy | result |"
echo "|---|---|"
for t in "${ran[@]}"; do [ -f "$work/$t.row5" ] && cat "$work/$t.row5"; done
exit 0
