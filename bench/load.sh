#!/usr/bin/env bash
# bench/load.sh - many-client figures on loopback (a benchmark, not a test):
#  1. aggregate fetch throughput of `stackmeter load` with 50 clients straight
#     against `serve`, next to two floors on the same machine: `stackmeter
#     stream --direction down --parallel 50` (the responder's source mode, no
#     requests, no checking) and `iperf3 -R -P 50`;
#  2. where the time goes during a load run (perf record -a -g);
#  3. the highest open-loop rate at which `rr --sizes 64:64` keeps its
#     schedule (achieved >= 99% of requested and <= 1% late sends);
#  4. 10,000 idle sessions held by `serve` while 100 connections run open-loop
#     rr, and the resident memory per idle session (VmRSS).
# Prints a Markdown report on stdout, progress on stderr. Exits 0 unless it
# cannot run at all.
#
# Environment (default): STACKMETER (target/release/stackmeter), CLIENTS (50),
# REPEAT (3), SECONDS_FLOOR (5), IDLE (10000), PORT (31600), PERF (1).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
CLIENTS=${CLIENTS:-50}
REPEAT=${REPEAT:-3}
SECONDS_FLOOR=${SECONDS_FLOOR:-5}
IDLE=${IDLE:-10000}
PORT=${PORT:-31600}
PERF=${PERF:-1}
[[ -x $STACKMETER ]] || { echo "bench/load.sh: build first (cargo build --release): $STACKMETER" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap pids_cleanup EXIT
log() { echo "bench/load.sh: $*" >&2; }
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

ulimit -n "$(ulimit -Hn)"
"$STACKMETER" serve --listen "127.0.0.1:$PORT" --objects 4K,64K,1M,8800K --max-sessions $((IDLE + 1000)) \
    --idle-timeout-ms 600000 2>"$work/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 50); do grep -q "listening on tcp" "$work/serve.log" 2>/dev/null && break; sleep 0.1; done
T=127.0.0.1:$PORT

echo "# stackmeter load benchmark"
echo
machine_line
echo
echo "## 1. Aggregate fetch throughput, $CLIENTS clients, loopback, unpinned"
echo
log "load x$REPEAT"
"$STACKMETER" load "$T" --clients "$CLIENTS" --fetch-each 2 --repeat "$REPEAT" --json >"$work/load.json"
log "stream floor"
"$STACKMETER" stream "$T" --direction down --parallel "$CLIENTS" -t "$SECONDS_FLOOR" -O 1 --json >"$work/stream.json"
iperf=NA
if command -v iperf3 >/dev/null; then
    log "iperf3 floor"
    iperf3 -s -p $((PORT + 1)) -1 >/dev/null 2>&1 &
    pids+=("$!")
    sleep 0.5
    if iperf3 -c 127.0.0.1 -p $((PORT + 1)) -R -P "$CLIENTS" -t "$SECONDS_FLOOR" -O 1 -J >"$work/iperf.json" 2>/dev/null; then
        iperf=$(jq_py "$work/iperf.json" "round(d['end']['sum_received']['bits_per_second']/1e6,1)")
    fi
fi
load_mbps=$(jq_py "$work/load.json" "'%.1f (95%% CI %.1f .. %.1f)' % (d['summary']['rate_mbps']['mean'], d['summary']['rate_mbps']['low'], d['summary']['rate_mbps']['high'])")
load_kBps=$(jq_py "$work/load.json" "'%.0f' % d['summary']['rate_kBps']['mean']")
load_wall=$(jq_py "$work/load.json" "'%.3f (95%% CI %.3f .. %.3f)' % (d['summary']['wall_s']['mean'], d['summary']['wall_s']['low'], d['summary']['wall_s']['high'])")
errors=$(jq_py "$work/load.json" "sum(r['errors'] for r in d['results'])")
verified=$(jq_py "$work/load.json" "all(r['bytes']==r['verified_bytes'] for r in d['results'])")
stream_mbps=$(jq_py "$work/stream.json" "round(d['summary']['recv_mbps'],1)")
echo "| what | Mbit/s | notes |"
echo "|---|---|---|"
echo "| stackmeter load, $CLIENTS clients x (LIST + 4 objects x 2) | $load_mbps | $load_kBps KB/s, wall $load_wall s, errors $errors, all bytes verified: $verified |"
echo "| floor: stackmeter stream --direction down -P $CLIENTS | $stream_mbps | responder source mode, no requests, no checks |"
echo "| floor: iperf3 -R -P $CLIENTS | $iperf | |"
echo
echo "Per-object latency, all runs merged (us):"
echo
echo "| object | samples | p50 | p90 | p99 | max |"
echo "|---|---|---|---|---|---|"
python3 - "$work/load.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for o in d["summary"]["by_object"]:
    l = o["latency_us"]
    print(f"| {o['name']} | {l['count']} | {l['p50']:.0f} | {l['p90']:.0f} | {l['p99']:.0f} | {l['max']:.0f} |")
EOF
echo

echo "## 1b. The same load through a proxy (the proxy-load question)"
echo
echo "| path | Mbit/s (mean, 95% CI) | KB/s | wall s | errors |"
echo "|---|---|---|---|---|"
proxy_row() { # name target
    if "$STACKMETER" load "$2" --clients "$CLIENTS" --fetch-each 2 --repeat "$REPEAT" --json >"$work/p.json" 2>/dev/null; then
        python3 - "$work/p.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["summary"]
print(f"| {sys.argv[2]} | {s['rate_mbps']['mean']:.1f} ({s['rate_mbps']['low']:.1f} .. {s['rate_mbps']['high']:.1f}) | {s['rate_kBps']['mean']:.0f} | {s['wall_s']['mean']:.3f} | {sum(r['errors'] for r in d['results'])} |")
PY
    else
        echo "| $1 | failed | | | |"
    fi
}
echo "| direct (section 1) | $load_mbps | $load_kBps | $load_wall | $errors |"
if command -v haproxy >/dev/null; then
    log "haproxy"
    cat >"$work/haproxy.cfg" <<CFG
global
    maxconn 8000
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
listen fwd
    bind 127.0.0.1:$((PORT + 2))
    server r 127.0.0.1:$PORT
CFG
    haproxy -f "$work/haproxy.cfg" -db >/dev/null 2>&1 &
    pids+=("$!")
    sleep 0.5
    proxy_row "haproxy $(haproxy -v | head -1 | awk '{print $3}') (mode tcp, 1 thread per CPU)" "127.0.0.1:$((PORT + 2))"
    kill "${pids[-1]}" 2>/dev/null || true
fi
if command -v socat >/dev/null; then
    log "socat"
    socat "TCP-LISTEN:$((PORT + 3)),bind=127.0.0.1,reuseaddr,fork,backlog=256" "TCP:$T" &
    pids+=("$!")
    sleep 0.5
    proxy_row "socat (fork per connection)" "127.0.0.1:$((PORT + 3))"
    kill "${pids[-1]}" 2>/dev/null || true
fi
echo

if [[ $PERF == 1 ]] && command -v perf >/dev/null; then
    echo "## 2. Where the time goes (perf record -a -g, one load run)"
    echo
    log "perf"
    if perf record -a -g -o "$work/perf.data" -- "$STACKMETER" load "$T" --clients "$CLIENTS" --repeat 1 --json >/dev/null 2>"$work/perf.err"; then
        echo '```'
        echo "by command (share of all samples, both CPUs):"
        { perf report -i "$work/perf.data" --no-children --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -6; } || true
        echo
        echo "top symbols:"
        { perf report -i "$work/perf.data" --no-children --sort comm,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | cut -c1-110 | head -14; } || true
        echo '```'
    else
        echo "perf record failed: $(tail -1 "$work/perf.err")"
    fi
    echo
fi

echo "## 3. Highest open-loop rate that keeps its schedule, rr 64:64"
echo
kept() { # rate connections -> prints "ok|behind achieved p50 p99 late"
    "$STACKMETER" rr "$T" --sizes 64:64 --rate "$1" --connections "$2" --time 2 --json >"$work/ol.json" 2>/dev/null || { echo "error 0 0 0 0"; return; }
    python3 - "$work/ol.json" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); r = d["results"][0]; req = float(sys.argv[2])
ok = r["achieved_rate"] >= 0.99 * req and r["late_sends"] * 100 <= r["samples"]
print("ok" if ok else "behind", round(r["achieved_rate"]), round(r["rtt_us"]["p50"], 1), round(r["rtt_us"]["p99"], 1), r["late_sends"])
EOF
}
echo "| connections | requested/s | kept | achieved/s | p50 us | p99 us | late sends |"
echo "|---|---|---|---|---|---|---|"
for c in 1 4; do
    best=0
    for rate in 5000 10000 20000 40000 60000 80000 100000 140000 200000; do
        read -r st ach p50 p99 late < <(kept "$rate" "$c")
        echo "| $c | $rate | $st | $ach | $p50 | $p99 | $late |"
        if [[ $st == ok ]]; then best=$rate; else break; fi
    done
    echo "| $c | **highest kept: $best** | | | | | |"
done
echo

echo "## 4. $IDLE idle sessions held while 100 connections run open-loop rr"
echo
rss() { awk '/^VmRSS/ {print $2}' "/proc/$serve_pid/status"; }
thr() { awk '/^Threads/ {print $2}' "/proc/$serve_pid/status"; }
before=$(rss); tb=$(thr)
log "opening $IDLE idle sessions"
python3 - "$PORT" "$IDLE" "$work/idle.ready" <<'EOF' &
import socket, struct, sys, time
port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
hdr = b"SMTR" + bytes([1, 1]) + struct.pack(">HII", 16, 1, 1)
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(hdr)
    socks.append(s)
for s in socks:
    s.settimeout(30)
    st = b""
    while len(st) < 8:
        st += s.recv(8 - len(st))
    assert st[5] == 0, st
open(ready, "w").write("ok")
time.sleep(600)
EOF
holder=$!
pids+=("$holder")
for _ in $(seq 600); do [[ -f $work/idle.ready ]] && break; sleep 0.2; done
sleep 2
after=$(rss); ta=$(thr)
log "open-loop rr with 100 connections"
"$STACKMETER" rr "$T" --sizes 64:64 --rate 20000 --connections 100 --time 3 --json >"$work/busy.json" || true
during=$(rss)
held=$(grep -o "sessions: [0-9]* active" "$work/serve.log" | tail -3 | tr '\n' ';')
echo "| figure | value |"
echo "|---|---|"
echo "| idle sessions held | $([[ -f $work/idle.ready ]] && echo "$IDLE (all accepted)" || echo "not all") |"
echo "| serve threads before / with idle sessions | $tb / $ta |"
echo "| serve VmRSS before / with idle / during rr | $before KiB / $after KiB / $during KiB |"
echo "| VmRSS per idle session | $(( (after - before) * 1024 / IDLE )) bytes |"
echo "| serve's last session lines | $held |"
python3 - "$work/busy.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1])); r = d["results"][0]
    print(f"| rr 64:64 open loop, 100 connections, 20000/s requested | achieved {r['achieved_rate']:.0f}/s, p50 {r['rtt_us']['p50']:.1f} us, p99 {r['rtt_us']['p99']:.1f} us, p99.9 {r['rtt_us']['p999']:.1f} us, late sends {r['late_sends']} |")
    for w in d["warnings"]:
        print(f"| warning | {w} |")
except Exception as e:
    print(f"| rr with 100 connections | failed: {e} |")
EOF
kill "$holder" 2>/dev/null || true
echo
echo "Commands: serve --objects 4K,64K,1M,8800K --max-sessions $((IDLE + 1000)); load --clients $CLIENTS --fetch-each 2 --repeat $REPEAT; stream --direction down -P $CLIENTS -t $SECONDS_FLOOR -O 1; iperf3 -R -P $CLIENTS -t $SECONDS_FLOOR -O 1; rr --sizes 64:64 --rate R --connections C --time 2."
