#!/usr/bin/env bash
# bench/latency.sh - loopback latency report: stackmeter against the physical
# floor (bench/floor/*.c) and against the peers users already have (sockperf,
# qperf), in one run, as a Markdown table with ratios and targets.
#
# Why this exists: a latency tool is only credible if its own overhead is
# known. The floor programs are the least a blocking ping-pong can do, so
# "stackmeter p50 / floor p50" is the overhead stackmeter adds on this machine.
# This is a report, not a test: a missed target prints MISS and the script
# still exits 0. It exits non-zero only when it cannot run at all.
#
# Usage: bash bench/latency.sh            (see bench/README.md)
# Environment (default):
#   STACKMETER     stackmeter binary (target/release/stackmeter, relative to
#                  the repo root when not absolute)
#   ITERS/WARMUP   timed/untimed round trips for the 64-byte tests (20000/1000)
#   BIG_ITERS/BIG_WARMUP  the same for TCP 1:1M and 1M:1 (2000/100)
#   CRR_ITERS/CRR_WARMUP  connections of the crr tests (5000/200)
#   C_RESPONDER    the C responder binary, built with make when missing
#                  (c-responder/stackmeter-responder); stackmeter's rows run
#                  against it too, as tool "stackmeter-c"
#   C_BEFORE       another C responder binary (an older build, for a
#                  before/after), run the same way as tool
#                  "stackmeter-c-before" (unset: none)
#   PEER_SECONDS   run time of each sockperf/qperf test, which are timed (2)
#   REPEAT         repetitions of the whole interleaved set (3)
#   SERVER_CPU/CLIENT_CPU  taskset pinning of servers/clients (0/1)
#   PORT_BASE      first port tried; free ports are taken from here up (31400)
#   CLIENT_TIMEOUT seconds before a client is killed (60)
#   INSTALL_PEERS  1: apt-get install sockperf/qperf when missing (1)
#   KEEP_LOGS      1: keep the work directory with every raw output (0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench

STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
ITERS=${ITERS:-20000}
WARMUP=${WARMUP:-1000}
BIG_ITERS=${BIG_ITERS:-2000}
BIG_WARMUP=${BIG_WARMUP:-100}
CRR_ITERS=${CRR_ITERS:-5000}
CRR_WARMUP=${CRR_WARMUP:-200}
C_RESPONDER=${C_RESPONDER:-c-responder/stackmeter-responder}
[[ $C_RESPONDER == /* ]] || C_RESPONDER=$REPO_ROOT/$C_RESPONDER
C_BEFORE=${C_BEFORE:-}
PEER_SECONDS=${PEER_SECONDS:-2}
REPEAT=${REPEAT:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT_BASE=${PORT_BASE:-31400}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-60}
INSTALL_PEERS=${INSTALL_PEERS:-1}
KEEP_LOGS=${KEEP_LOGS:-0}
HOST=127.0.0.1
BIG=1048576

SERVER_PIDS=()
CLIENT_PID=
WORK=

# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

# ------------------------------------------------------------ processes

# Stop one server we started: TERM, up to 2 s grace, then KILL.
stop_server() {
    local pid=$1 i keep=()
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 40; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    for i in "${SERVER_PIDS[@]}"; do
        if [[ $i != "$pid" ]]; then keep+=("$i"); fi
    done
    SERVER_PIDS=("${keep[@]}")
}



# run_client OUT CMD... : bounded by CLIENT_TIMEOUT, stderr to OUT.err.
run_client() { run_bounded "$CLIENT_TIMEOUT" "$@"; }

# ------------------------------------------------------------ results

RUN_NO=0
# record REP TOOL TEST STAT VALUE_US SAMPLES NOTE   (VALUE_US "NA" = failed)
record() {
    append_row "$RESULTS" "$@"
    if [[ $5 == NA ]]; then
        note "  $2 $3: FAILED: $7"
    else
        note "  $2 $3: $4 ${5} us (n=$6) ${7}"
    fi
}


first_error_line() { last_line "$1.err"; }

# ------------------------------------------------------------ setup

install_peers() {
    local missing=() p
    for p in sockperf qperf; do
        command -v "$p" >/dev/null || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    if [[ $INSTALL_PEERS != 1 || $(id -u) != 0 ]]; then
        note "peers missing: ${missing[*]} (not installing: INSTALL_PEERS=$INSTALL_PEERS, uid $(id -u)); their rows are skipped"
        return 0
    fi
    note "installing missing peers: apt-get install -y ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >"$WORK/apt.log" 2>&1; then
        # A fresh image may have no package lists yet: update once, retry.
        if ! { apt-get update >>"$WORK/apt.log" 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >>"$WORK/apt.log" 2>&1; }; then
            note "could not install ${missing[*]} (see apt output below); their rows are skipped"
            tail -n 3 "$WORK/apt.log" | sed 's/^/#   /' >&2 || true
        fi
    fi
}

# ------------------------------------------------------------ the tools

# floor_client TEST BIN REQ RESP ITERS WARMUP
floor_client() {
    local test=$1 prog=$2 out=$WORK/run$RUN_NO-floor-$1.out
    shift 2
    local cmd=(taskset -c "$CLIENT_CPU" "$prog" client "$HOST" "$P_FLOOR" "$@")
    log_cmd "floor $test client" "${cmd[@]}"
    if run_client "$out" "${cmd[@]}"; then
        local line
        line=$(head -n 1 "$out")
        if [[ $line =~ count=([0-9]+).*conn_per_s=([0-9.]+) ]]; then
            # crr: microseconds per connection, 1e6 / connections per second.
            record "$RUN_NO" floor "$test" "us per connection (1/conn/s)" \
                "$(awk -v r="${BASH_REMATCH[2]}" 'BEGIN { printf "%.3f", 1e6 / r }')" "${BASH_REMATCH[1]}" ""
            return
        fi
        if [[ $line =~ count=([0-9]+).*\ p50=([0-9.]+) ]]; then
            local n=${BASH_REMATCH[1]} p50=${BASH_REMATCH[2]} extra=
            if [[ $line =~ lost=([1-9][0-9]*) ]]; then extra="lost ${BASH_REMATCH[1]}"; fi
            record "$RUN_NO" floor "$test" p50 "$p50" "$n" "$extra"
            return
        fi
    fi
    record "$RUN_NO" floor "$test" p50 NA "" "$(first_error_line "$out")"
}

run_floor() {
    local t
    local srv_t=(taskset -c "$SERVER_CPU" "$BIN/tcp_pingpong" server "$P_FLOOR" "$HOST")
    local srv_u=(taskset -c "$SERVER_CPU" "$BIN/udp_pingpong" server "$P_FLOOR" "$HOST")
    log_cmd "floor tcp server" "${srv_t[@]}"
    log_cmd "floor udp server" "${srv_u[@]}"
    if start_server "$WORK/run$RUN_NO-floor-tcp.srv" t "$P_FLOOR" "${srv_t[@]}"; then
        floor_client tcp64 "$BIN/tcp_pingpong" 64 64 "$ITERS" "$WARMUP"
        floor_client tcp1M "$BIN/tcp_pingpong" 1 "$BIG" "$BIG_ITERS" "$BIG_WARMUP"
        floor_client tcp1Mup "$BIN/tcp_pingpong" "$BIG" 1 "$BIG_ITERS" "$BIG_WARMUP"
        stop_server "$SERVER_PID"
    else
        for t in tcp64 tcp1M tcp1Mup; do record "$RUN_NO" floor "$t" p50 NA "" "server did not start"; done
    fi
    local srv_c=(taskset -c "$SERVER_CPU" "$BIN/tcp_crr" server "$P_FLOOR" "$HOST")
    log_cmd "floor crr server" "${srv_c[@]}"
    if start_server "$WORK/run$RUN_NO-floor-crr.srv" t "$P_FLOOR" "${srv_c[@]}"; then
        floor_client crr64 "$BIN/tcp_crr" 64 64 "$CRR_ITERS" "$CRR_WARMUP"
        stop_server "$SERVER_PID"
    else
        record "$RUN_NO" floor crr64 p50 NA "" "server did not start"
    fi
    if start_server "$WORK/run$RUN_NO-floor-udp.srv" u "$P_FLOOR" "${srv_u[@]}"; then
        floor_client udp64 "$BIN/udp_pingpong" 64 64 "$ITERS" "$WARMUP"
        stop_server "$SERVER_PID"
    else
        record "$RUN_NO" floor udp64 p50 NA "" "server did not start"
    fi
}

# sockperf prints half the round trip ("latency") unless --full-rtt is given.
SOCKPERF_FULL=0
sockperf_test() { # TEST PROTO(t|u)
    local test=$1 proto=$2 flag=() out=$WORK/run$RUN_NO-sockperf-$1.out
    [[ $proto == t ]] && flag=(--tcp)
    local srv=(taskset -c "$SERVER_CPU" sockperf server "${flag[@]}" -i "$HOST" -p "$P_SOCKPERF")
    local cli=(taskset -c "$CLIENT_CPU" sockperf ping-pong "${flag[@]}" -i "$HOST" -p "$P_SOCKPERF"
        -m 64 -t "$PEER_SECONDS")
    local stat="p50 (full RTT: --full-rtt)" scale=1
    if [[ $SOCKPERF_FULL == 1 ]]; then
        cli+=(--full-rtt)
    else
        stat="p50 (half RTT x2)" scale=2
    fi
    log_cmd "sockperf $test server" "${srv[@]}"
    log_cmd "sockperf $test client" "${cli[@]}"
    if ! start_server "$WORK/run$RUN_NO-sockperf-$test.srv" "$proto" "$P_SOCKPERF" "${srv[@]}"; then
        record "$RUN_NO" sockperf "$test" "$stat" NA "" "server did not start"
        return
    fi
    local ok=0
    run_client "$out" "${cli[@]}" && ok=1
    stop_server "$SERVER_PID"
    # sockperf colours some lines; strip ANSI escapes before parsing.
    local txt p50='' n='' drops=''
    txt=$(sed 's/\x1b\[[0-9;]*m//g' "$out" "$out.err" 2>/dev/null || true)
    p50=$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' <<<"$txt" | head -n 1)
    n=$(sed -n 's/.*Total \([0-9]*\) observations.*/\1/p' <<<"$txt" | head -n 1)
    drops=$(sed -n 's/.*# dropped messages = \([0-9]*\).*/\1/p' <<<"$txt" | head -n 1)
    if [[ $ok == 1 && -n $p50 ]]; then
        local extra=
        [[ -n $drops && $drops != 0 ]] && extra="dropped $drops"
        record "$RUN_NO" sockperf "$test" "$stat" \
            "$(awk -v v="$p50" -v s="$scale" 'BEGIN { printf "%.3f", v * s }')" "$n" "$extra"
    else
        record "$RUN_NO" sockperf "$test" "$stat" NA "" "$(grep -i -m1 'error\|fail' <<<"$txt" || echo 'no result')"
    fi
}

# qperf prints "latency", the mean of half the round trip; no percentiles.
qperf_test() { # TEST QPERF_TEST
    local test=$1 qt=$2 out=$WORK/run$RUN_NO-qperf-$1.out
    local srv=(taskset -c "$SERVER_CPU" qperf -lp "$P_QPERF")
    local cli=(taskset -c "$CLIENT_CPU" qperf -lp "$P_QPERF" -t "$PEER_SECONDS" -m 64 -e 5 -vv "$HOST" "$qt")
    local stat="mean (half RTT x2)"
    log_cmd "qperf server" "${srv[@]}"
    log_cmd "qperf $test client" "${cli[@]}"
    if ! start_server "$WORK/run$RUN_NO-qperf-$test.srv" t "$P_QPERF" "${srv[@]}"; then
        record "$RUN_NO" qperf "$test" "$stat" NA "" "server did not start"
        return
    fi
    local ok=0
    run_client "$out" "${cli[@]}" && ok=1
    stop_server "$SERVER_PID"
    local lat unit n
    read -r lat unit < <(sed -n 's/^ *latency *= *\([0-9.,]*\) *\([a-z]*\).*/\1 \2/p' "$out" | head -n 1) || true
    n=$(sed -n 's/^ *loc_recv_msgs *= *\([0-9,]*\).*/\1/p' "$out" | head -n 1 | tr -d ,)
    if [[ $ok == 1 && -n ${lat:-} ]]; then
        local us
        us=$(awk -v v="${lat//,/}" -v u="$unit" 'BEGIN {
            m = (u == "ns") ? 0.001 : (u == "ms") ? 1000 : (u == "sec" || u == "s") ? 1e6 : 1
            printf "%.3f", 2 * v * m }')
        record "$RUN_NO" qperf "$test" "$stat" "$us" "$n" ""
    else
        record "$RUN_NO" qperf "$test" "$stat" NA "" "$(first_error_line "$out")"
    fi
}

# Extract p50, count and notes from a stackmeter/1 JSON document.
sm_extract() {
    python3 - "$1" "$CLIENT_CPU" <<'PY'
import json, sys
try:
    with open(sys.argv[1]) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    print("unparsable JSON: %s" % e)
    sys.exit(1)
if doc.get("schema") != "stackmeter/1":
    print("unexpected schema %r" % doc.get("schema"))
    sys.exit(1)
if doc.get("error"):
    print("error: %s" % str(doc["error"])[:160])
    sys.exit(1)
res = doc.get("results") or []
if res and res[0].get("cps"):
    # crr: microseconds per connection, 1e6 / connections per second.
    res[0]["rtt_us"] = {"p50": round(1e6 / res[0]["cps"], 3), "count": res[0].get("samples")}
if not res or not isinstance(res[0].get("rtt_us"), dict) or res[0]["rtt_us"].get("p50") is None:
    print("no results[0].rtt_us.p50")
    sys.exit(1)
r, notes = res[0], []
rtt = r["rtt_us"]
if doc.get("complete") is False:
    notes.append("incomplete")
if r.get("lost"):
    notes.append("lost %s" % r["lost"])
cpu = (doc.get("placement") or {}).get("client_cpu")
if cpu is not None and str(cpu) != sys.argv[2]:
    notes.append("client_cpu %s" % cpu)
for w in doc.get("warnings") or []:
    notes.append("warning: %s" % str(w)[:100])
print("%s\t%s\t%s" % (rtt["p50"], rtt.get("count", r.get("samples", "")), "; ".join(notes)))
PY
}

sm_client() { # TOOL TEST ARGS...
    local tool=$1 test=$2 out=$WORK/run$RUN_NO-$1-$2.json res stat=p50
    shift 2
    [[ $1 == crr ]] && stat="us per connection (1/conn/s)"
    local cmd=("$STACKMETER" "$@" --affinity "$CLIENT_CPU" --json --no-store)
    log_cmd "$tool $test client" "${cmd[@]}"
    if run_client "$out" "${cmd[@]}" || [[ -s $out ]]; then
        if res=$(sm_extract "$out"); then
            local p50 n extra
            IFS=$'\t' read -r p50 n extra <<<"$res"
            record "$RUN_NO" "$tool" "$test" "$stat" "$p50" "$n" "$extra"
            return
        fi
        record "$RUN_NO" "$tool" "$test" "$stat" NA "" "$res"
        return
    fi
    record "$RUN_NO" "$tool" "$test" "$stat" NA "" "$(first_error_line "$out")"
}

# The stackmeter client's rows against one responder (TOOL names it).
sm_rows() { # TOOL TARGET
    local tool=$1 target=$2
    sm_client "$tool" tcp64 rr "$target" --sizes 64:64 --iterations "$ITERS" --warmup "$WARMUP"
    sm_client "$tool" tcp1M rr "$target" --sizes 1:1M --iterations "$BIG_ITERS" --warmup "$BIG_WARMUP"
    sm_client "$tool" tcp1Mup rr "$target" --sizes 1M:1 --iterations "$BIG_ITERS" --warmup "$BIG_WARMUP"
    sm_client "$tool" udp64 ping "$target" --size 64 --count "$ITERS" --warmup "$WARMUP" --interval-us 0
    sm_client "$tool" crr64 crr "$target" --size 64:64 --iterations "$CRR_ITERS" --warmup "$CRR_WARMUP"
}

run_stackmeter() {
    local t target=$HOST:$P_SM
    local srv=("$STACKMETER" serve --listen "$target" --affinity "$SERVER_CPU")
    log_cmd "stackmeter server" "${srv[@]}"
    if start_server "$WORK/run$RUN_NO-stackmeter.srv" t "$P_SM" "${srv[@]}"; then
        sm_rows stackmeter "$target"
        stop_server "$SERVER_PID"
    else
        for t in tcp64 tcp1M tcp1Mup udp64 crr64; do record "$RUN_NO" stackmeter "$t" p50 NA "" "server did not start"; done
    fi
    [[ -x $C_RESPONDER ]] && run_c stackmeter-c "$C_RESPONDER"
    [[ -n $C_BEFORE ]] && run_c stackmeter-c-before "$C_BEFORE"
    return 0
}

# The stackmeter client's rows against a C responder binary (TOOL names it).
run_c() { # TOOL BINARY
    local t tool=$1 target=$HOST:$P_SM
    local srv_c=(taskset -c "$SERVER_CPU" "$2" --listen "$target" --quiet)
    log_cmd "$tool server" "${srv_c[@]}"
    if start_server "$WORK/run$RUN_NO-$tool.srv" t "$P_SM" "${srv_c[@]}"; then
        sm_rows "$tool" "$target"
        stop_server "$SERVER_PID"
    else
        for t in tcp64 tcp1M tcp1Mup udp64 crr64; do record "$RUN_NO" "$tool" "$t" p50 NA "" "server did not start"; done
    fi
}

# ------------------------------------------------------------ report

report() {
    python3 - "$RESULTS" "$CMDS" <<'PY'
import os, statistics, sys
from collections import defaultdict

results, cmds = sys.argv[1], sys.argv[2]
env = os.environ
runs = defaultdict(list)      # (tool, test) -> [value or None]
stat_of, samples, notes = {}, defaultdict(list), defaultdict(list)
for line in open(results):
    f = line.rstrip("\n").split("\t")
    rep, tool, test, stat, val, n, note = f[:7]
    key = (tool, test)
    stat_of[key] = stat
    runs[key].append(None if val == "NA" else float(val))
    if n:
        samples[key].append(n)
    if note:
        notes[key].append("run %s: %s" % (rep, note))

def median(key):
    vals = [v for v in runs.get(key, []) if v is not None]
    return statistics.median(vals) if vals else None

TESTS = [("tcp64", "TCP 64:64"), ("tcp1M", "TCP 1:1M"), ("tcp1Mup", "TCP 1M:1"), ("udp64", "UDP 64"),
         ("crr64", "TCP crr 64:64")]
SM = {"tcp64": "rr --sizes 64:64", "tcp1M": "rr --sizes 1:1M", "tcp1Mup": "rr --sizes 1M:1",
      "udp64": "ping --size 64", "crr64": "crr --size 64:64"}
TOOLS = [("floor", {"tcp64": "tcp_pingpong", "tcp1M": "tcp_pingpong", "tcp1Mup": "tcp_pingpong",
                    "udp64": "udp_pingpong", "crr64": "tcp_crr"}),
         ("sockperf", {"tcp64": "ping-pong --tcp", "udp64": "ping-pong"}),
         ("qperf", {"tcp64": "tcp_lat", "udp64": "udp_lat"}),
         ("stackmeter", {k: v + ", serve" for k, v in SM.items()}),
         ("stackmeter-c", {k: v + ", C responder" for k, v in SM.items()}),
         ("stackmeter-c-before", {k: v + ", C responder before (C_BEFORE)" for k, v in SM.items()})]

def fmt(v):
    return "-" if v is None else "%.2f" % v

print("## stackmeter loopback latency vs floor and peers\n")
print("- host: %s, kernel %s, %s CPUs; server pinned to CPU %s, client to CPU %s"
      % (env["R_CPU_MODEL"], env["R_KERNEL"], env["R_NCPU"], env["SERVER_CPU"], env["CLIENT_CPU"]))
print("- REPEAT=%s: the whole set ran %s time(s), interleaved (floor, sockperf, qperf, stackmeter, "
      "then again); each figure is the **median of the per-run values**" % (env["REPEAT"], env["REPEAT"]))
print("- iterations: %s (+%s warm-up) for 64-byte tests, %s (+%s) for 1:1M and 1M:1, %s (+%s) connections "
      "for crr; sockperf/qperf are timed runs of %s s each"
      % (env["ITERS"], env["WARMUP"], env["BIG_ITERS"], env["BIG_WARMUP"], env["CRR_ITERS"], env["CRR_WARMUP"],
         env["PEER_SECONDS"]))
print("- all figures are full round trips (RTT) in microseconds; see notes for sockperf/qperf")
print("- stackmeter: %s\n" % env["R_SM_STATUS"])

print("| tool | test | statistic | RTT us | per run (us) | samples/run | ratio vs floor |")
print("|---|---|---|---:|---|---:|---:|")
for test, label in TESTS:
    floor = median(("floor", test))
    for tool, names in TOOLS:
        key = (tool, test)
        if key not in runs:
            continue
        m = median(key)
        ratio = "-" if m is None or not floor else "%.2f" % (m / floor)
        per = ", ".join("fail" if v is None else "%.2f" % v for v in runs[key])
        ns = sorted(set(samples[key]))
        nstr = ns[0] if len(ns) == 1 else ("%s..%s" % (ns[0], ns[-1]) if ns else "-")
        print("| %s | %s (%s) | %s | %s | %s | %s | %s |"
              % (tool, label, names[test], stat_of[key], fmt(m), per, nstr, ratio))

def target(desc, tool_key, ref_key, limit):
    sm, ref = median(tool_key), median(ref_key)
    if sm is None or ref is None:
        why = "stackmeter not run" if sm is None else "reference not measured"
        return "| %s | %s | %s | - | <= %.2f | n/a (%s) |" % (desc, fmt(sm), fmt(ref), limit, why)
    r = sm / ref
    verdict = "PASS" if r <= limit else "MISS"
    if r < 0.9 and ref_key[0] == "floor":
        verdict += " (below the floor: check placement)"
    return "| %s | %s | %s | %.2f | <= %.2f | %s |" % (desc, fmt(sm), fmt(ref), r, limit, verdict)

print("\n### Targets (p50 RTT, medians of runs)\n")
print("| target | stackmeter us | reference us | ratio | limit | result |")
print("|---|---:|---:|---:|---:|---|")
for tool, who in (("stackmeter", "serve"), ("stackmeter-c", "C responder")):
    print(target("rr 64:64 (%s) within 5%% of floor TCP 64:64" % who, (tool, "tcp64"), ("floor", "tcp64"), 1.05))
    print(target("rr 1:1M (%s) within 5%% of floor TCP 1:1M" % who, (tool, "tcp1M"), ("floor", "tcp1M"), 1.05))
    print(target("rr 1M:1 (%s) within 5%% of floor TCP 1M:1" % who, (tool, "tcp1Mup"), ("floor", "tcp1Mup"), 1.05))
    print(target("ping 64 (%s) within 5%% of floor UDP 64" % who, (tool, "udp64"), ("floor", "udp64"), 1.05))
    print(target("crr 64:64 (%s) at least 0.9x floor connections/s" % who, (tool, "crr64"), ("floor", "crr64"),
                 1 / 0.9))
print(target("rr 64:64 (serve) no higher than sockperf TCP 64 (full RTT)", ("stackmeter", "tcp64"),
             ("sockperf", "tcp64"), 1.00))
for test, label in TESTS:
    print(target("%s: serve no slower than the C responder" % label, ("stackmeter", test), ("stackmeter-c", test),
                 1.00))
if any(k[0] == "stackmeter-c-before" for k in runs):
    for test, label in TESTS:
        print(target("%s: the C responder no slower than before (C_BEFORE)" % label, ("stackmeter-c", test),
                     ("stackmeter-c-before", test), 1.00))

print("\n### Notes\n")
if env["R_SOCKPERF_FULL"] == "1":
    print("- sockperf: run with `--full-rtt`, so its percentiles are full round trips "
          "(without it sockperf prints half the RTT as \"latency\").")
else:
    print("- sockperf: this version has no `--full-rtt`; its half-RTT \"latency\" percentiles were doubled.")
print("- qperf: reports \"latency\" = mean of half the round trip (run time / messages / 2) and no "
      "percentiles; the figure shown is that value x2, a **mean**, not a p50 (a tail pulls it up).")
print("- floor: bench/floor/{tcp,udp}_pingpong.c, blocking send/recv, TCP_NODELAY, nearest-rank p50; "
      "bench/floor/tcp_crr.c for crr, whose figure (as stackmeter's) is 1e6 / connections per second, "
      "so a lower figure is more connections per second.")
print("- serve vs C responder rows are single medians here; `stackmeter suite` with both as targets "
      "gives verdicts with intervals (bench/README.md).")
for key in sorted(runs):
    vals = [v for v in runs[key] if v is not None]
    if len(vals) >= 2 and min(vals) > 0 and max(vals) / min(vals) > 1.25:
        print("- %s %s: per-run values differ by %.0f%% (noisy or bimodal machine; more REPEAT helps)"
              % (key[0], key[1], 100 * (max(vals) / min(vals) - 1)))
for key in sorted(notes):
    print("- %s %s: %s" % (key[0], key[1], "; ".join(notes[key])))

print("\n### Commands (first repetition)\n")
seen = set()
for line in open(cmds):
    label, cmd = line.rstrip("\n").split("\t", 1)
    if (label, cmd) not in seen:
        seen.add((label, cmd))
        print("- %s: `%s`" % (label, cmd.strip()))
PY
}

# ------------------------------------------------------------ main

main() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    local v
    for v in ITERS WARMUP BIG_ITERS BIG_WARMUP CRR_ITERS CRR_WARMUP PEER_SECONDS REPEAT SERVER_CPU CLIENT_CPU PORT_BASE \
        CLIENT_TIMEOUT; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
    done
    ((ITERS > 0 && BIG_ITERS > 0 && REPEAT > 0 && PEER_SECONDS > 0)) || die "ITERS, BIG_ITERS, REPEAT, PEER_SECONDS must be > 0"
    for v in python3 taskset timeout; do
        command -v "$v" >/dev/null || die "$v is required"
    done
    taskset -c "$SERVER_CPU" true 2>/dev/null || die "cannot pin to SERVER_CPU=$SERVER_CPU"
    taskset -c "$CLIENT_CPU" true 2>/dev/null || die "cannot pin to CLIENT_CPU=$CLIENT_CPU"

    WORK=$(mktemp -d "${TMPDIR:-/tmp}/stackmeter-bench.XXXXXX")
    BIN=$WORK/bin
    RESULTS=$WORK/results.tsv
    CMDS=$WORK/commands.tsv
    : >"$RESULTS"
    : >"$CMDS"

    install_peers
    build_floor tcp_pingpong udp_pingpong tcp_crr
    if [[ ! -x $C_RESPONDER && $C_RESPONDER == "$REPO_ROOT/c-responder/stackmeter-responder" ]]; then
        make -s -C "$REPO_ROOT/c-responder" all >"$WORK/make-c.log" 2>&1 ||
            note "could not build the C responder (see $WORK/make-c.log): its rows are skipped"
    fi
    local have_sockperf=0 have_qperf=0 have_sm=0
    command -v sockperf >/dev/null && have_sockperf=1
    command -v qperf >/dev/null && have_qperf=1
    if [[ $have_sockperf == 1 ]] && sockperf ping-pong --help 2>&1 | grep -q -- '--full-rtt'; then
        SOCKPERF_FULL=1
    fi
    local sm_status
    if [[ -x $STACKMETER ]]; then
        have_sm=1
        sm_status="$STACKMETER ($("$STACKMETER" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
    else
        sm_status="NOT RUN: no executable at $STACKMETER (build it with cargo build --release, or set STACKMETER)"
        note "stackmeter binary not found at $STACKMETER: running the floor and peers only"
    fi
    [[ $have_sockperf == 1 ]] || note "sockperf not available: skipped"
    [[ $have_qperf == 1 ]] || note "qperf not available: skipped"

    read -r P_FLOOR P_SOCKPERF P_QPERF P_SM < <(pick_ports 4) || die "no free ports from $PORT_BASE"
    note "ports: floor $P_FLOOR, sockperf $P_SOCKPERF, qperf $P_QPERF, stackmeter $P_SM (127.0.0.1)"

    for ((RUN_NO = 1; RUN_NO <= REPEAT; RUN_NO++)); do
        note "repetition $RUN_NO/$REPEAT"
        run_floor
        if [[ $have_sockperf == 1 ]]; then
            sockperf_test tcp64 t
            sockperf_test udp64 u
        fi
        if [[ $have_qperf == 1 ]]; then
            qperf_test tcp64 tcp_lat
            qperf_test udp64 udp_lat
        fi
        if [[ $have_sm == 1 ]]; then
            run_stackmeter
        fi
    done

    R_SM_STATUS=$sm_status R_SOCKPERF_FULL=$SOCKPERF_FULL \
        R_KERNEL="$(uname -sr)" R_NCPU="$(nproc)" \
        R_CPU_MODEL="$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1)" \
        SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU REPEAT=$REPEAT ITERS=$ITERS WARMUP=$WARMUP \
        BIG_ITERS=$BIG_ITERS BIG_WARMUP=$BIG_WARMUP CRR_ITERS=$CRR_ITERS CRR_WARMUP=$CRR_WARMUP \
        PEER_SECONDS=$PEER_SECONDS \
        report
}

main "$@"
