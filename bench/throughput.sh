#!/usr/bin/env bash
# bench/throughput.sh - loopback throughput report: stackmeter `stream`
# against the physical floor (bench/floor/tcp_stream.c, udp_blast.c) and
# against iperf3, in one run, as a Markdown table with ratios and targets.
#
# Why this exists: a throughput tool whose own loop is slower than the
# kernel path it measures reports its own limit, not the stack's. The floor
# programs are the least a bulk sender/receiver can do, so "stackmeter /
# floor" is what stackmeter leaves on the table, and "stackmeter / iperf3"
# is how it compares with the tool users already have.
# This is a report, not a test: a missed target prints MISS and the script
# still exits 0. It exits non-zero only when it cannot run at all.
#
# Usage: bash bench/throughput.sh            (see bench/README.md)
# Environment (default):
#   STACKMETER     stackmeter binary (target/release/stackmeter, relative to
#                  the repo root when not absolute)
#   IPERF3         iperf3 binary (iperf3 from PATH)
#   SECONDS_PER_TEST  measured seconds of every test (5); SECONDS is accepted
#                  too when exported by the caller (SECONDS=1 bash ...)
#   UDP_RATE       stackmeter's UDP --rate, far above what loopback can
#                  carry so that it never paces (20Mpps)
#   C_RESPONDER    the C responder binary (c-responder/stackmeter-responder);
#                  when it exists, stackmeter's rows run against it too, as
#                  tool "stackmeter-c"
#   C_BEFORE       another C responder binary (an older build, for a
#                  before/after), as tool "stackmeter-c-before" (unset: none)
#   REPEAT         repetitions of the whole interleaved set (3)
#   SERVER_CPU/CLIENT_CPU  taskset pinning of servers/clients (0/1)
#   PORT_BASE      first port tried; free ports are taken from here up (31600)
#   CLIENT_TIMEOUT extra seconds on top of the test before a client is
#                  killed (30)
#   KEEP_LOGS      1: keep the work directory with every raw output (0)
set -euo pipefail

# bash's own SECONDS counts up from the start of the shell; a value exported
# by the caller is what the caller asked for, so read it before bash resets it.
ENV_SECONDS=$(printenv SECONDS 2>/dev/null || true)
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=$REPO_ROOT/bench

STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
IPERF3=${IPERF3:-iperf3}
SECONDS_PER_TEST=${SECONDS_PER_TEST:-${ENV_SECONDS:-5}}
UDP_RATE=${UDP_RATE:-20Mpps}
C_RESPONDER=${C_RESPONDER:-c-responder/stackmeter-responder}
[[ $C_RESPONDER == /* ]] || C_RESPONDER=$REPO_ROOT/$C_RESPONDER
C_BEFORE=${C_BEFORE:-}
REPEAT=${REPEAT:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT_BASE=${PORT_BASE:-31600}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-30}
KEEP_LOGS=${KEEP_LOGS:-0}
HOST=127.0.0.1
BIG=131072
SMALL=64

SERVER_PIDS=()
CLIENT_PID=
WORK=

# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

# ------------------------------------------------------------ processes

# Forget PID in SERVER_PIDS (it has been waited for).
forget_server() {
    local pid=$1 i keep=()
    for i in "${SERVER_PIDS[@]}"; do
        if [[ $i != "$pid" ]]; then keep+=("$i"); fi
    done
    SERVER_PIDS=("${keep[@]}")
}

# Stop one server we started: TERM, up to 2 s grace, then KILL.
stop_server() {
    local pid=$1 i
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 40; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    forget_server "$pid"
}

# A floor receiver exits by itself once it has printed its figure: wait for
# that (at most 5 s), then make sure it is gone.
finish_server() {
    local pid=$1 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    stop_server "$pid"
}



# run_client OUT CMD... : bounded by the test time + CLIENT_TIMEOUT,
# stderr to OUT.err.
run_client() { run_bounded "$((SECONDS_PER_TEST + CLIENT_TIMEOUT))" "$@"; }

# ------------------------------------------------------------ results

RUN_NO=0
# record REP TOOL TEST VALUE UNIT CPU NOTE   (VALUE "NA" = failed;
# UNIT Mbps or kpps; CPU "client/server" percent of one core or "")
record() {
    append_row "$RESULTS" "$@"
    if [[ $4 == NA ]]; then
        note "  $2 $3: FAILED: $7"
    else
        note "  $2 $3: $4 $5 ${6:+(cpu $6)} $7"
    fi
}


first_error_line() { last_line "$@"; }

# ------------------------------------------------------------ setup

# ------------------------------------------------------------ the tools

# floor_test TOOL TEST PROG PROTO(t|u) LEN [nodelay] : one receiver run per
# test; it exits by itself after SECONDS_PER_TEST and prints the figure.
floor_test() {
    local tool=$1 test=$2 prog=$3 proto=$4 len=$5 base=$WORK/run$RUN_NO-$1-$2
    shift 5
    local srv=(taskset -c "$SERVER_CPU" "$BIN/$prog" recv "$P_FLOOR" "$HOST" "$len" "$SECONDS_PER_TEST")
    local cli=(taskset -c "$CLIENT_CPU" "$BIN/$prog" send "$HOST" "$P_FLOOR" "$len" "$SECONDS_PER_TEST" "$@")
    log_cmd "$tool $test receiver" "${srv[@]}"
    log_cmd "$tool $test sender" "${cli[@]}"
    if ! start_server "$base.srv" "$proto" "$P_FLOOR" "${srv[@]}"; then
        record "$RUN_NO" "$tool" "$test" NA "" "" "receiver did not start"
        return
    fi
    local pid=$SERVER_PID ok=1
    run_client "$base.out" "${cli[@]}" || ok=0
    finish_server "$pid"
    local line
    line=$(grep -m1 ' recv ' "$base.srv" || true)
    if [[ $line =~ mbps=([0-9.]+) ]]; then
        record "$RUN_NO" "$tool" "$test" "${BASH_REMATCH[1]}" Mbps "" ""
    elif [[ $line =~ pps=([0-9.]+) ]]; then
        local kpps extra=
        kpps=$(awk -v v="${BASH_REMATCH[1]}" 'BEGIN { printf "%.3f", v / 1000 }')
        [[ $ok == 1 ]] || extra="sender: $(first_error_line "$base.out.err")"
        record "$RUN_NO" "$tool" "$test" "$kpps" kpps "" "$extra"
    else
        record "$RUN_NO" "$tool" "$test" NA "" "" "$(first_error_line "$base.srv" "$base.out.err")"
    fi
}

run_floor() {
    floor_test floor tcp128K tcp_stream t "$BIG"
    floor_test floor-nodelay tcp128K tcp_stream t "$BIG" nodelay
    floor_test floor tcp64 tcp_stream t "$SMALL"
    floor_test floor-nodelay tcp64 tcp_stream t "$SMALL" nodelay
    floor_test floor udp64 udp_blast u "$SMALL"
}

# Receiver-side figure from an iperf3 -J document: Mbps, or kpps for UDP.
iperf3_extract() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, test, length = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    with open(path) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    print("unparsable JSON: %s" % e)
    sys.exit(1)
if doc.get("error"):
    print("error: %s" % str(doc["error"])[:160])
    sys.exit(1)
end = doc.get("end") or {}
def need(key):
    v = end.get(key)
    if not isinstance(v, dict):
        print("no end.%s" % key)
        sys.exit(1)
    return v
cpu = end.get("cpu_utilization_percent") or {}
cpus = ""
if "host_total" in cpu and "remote_total" in cpu:
    cpus = "%.0f/%.0f" % (cpu["host_total"], cpu["remote_total"])
notes = []
if test == "udp64":
    # sum_received is the server's view: bytes that arrived (lost ones are
    # not in it), over the server's seconds.
    r = need("sum_received")
    got = r["bytes"] / length
    val, unit = got / r["seconds"] / 1000, "kpps"
    if r.get("lost_percent") is not None:
        notes.append("lost %.1f%%" % r["lost_percent"])
elif test == "bidir":
    a, b = need("sum_received"), need("sum_received_bidir_reverse")
    val, unit = (a["bits_per_second"] + b["bits_per_second"]) / 1e6, "Mbps"
    notes.append("up %.0f + down %.0f" % (a["bits_per_second"] / 1e6, b["bits_per_second"] / 1e6))
else:
    r = need("sum_received")
    val, unit = r["bits_per_second"] / 1e6, "Mbps"
    s = end.get("sum_sent") or {}
    if s.get("retransmits"):
        notes.append("retransmits %s" % s["retransmits"])
print("%.3f\t%s\t%s\t%s" % (val, unit, cpus, "; ".join(notes)))
PY
}

iperf3_client() { # TEST LEN ARGS...
    local test=$1 len=$2 out=$WORK/run$RUN_NO-iperf3-$1.json res
    shift 2
    local cmd=(taskset -c "$CLIENT_CPU" "$IPERF3" -c "$HOST" -p "$P_IPERF3" -t "$SECONDS_PER_TEST" -J "$@")
    log_cmd "iperf3 $test client" "${cmd[@]}"
    local ok=0
    run_client "$out" "${cmd[@]}" && ok=1
    if [[ -s $out ]] && res=$(iperf3_extract "$out" "$test" "$len"); then
        local val unit cpu extra
        IFS=$'\t' read -r val unit cpu extra <<<"$res"
        [[ $ok == 1 ]] || extra="${extra:+$extra; }exit status non-zero"
        record "$RUN_NO" iperf3 "$test" "$val" "$unit" "$cpu" "$extra"
        return
    fi
    record "$RUN_NO" iperf3 "$test" NA "" "" "${res:-$(first_error_line "$out.err")}"
}

run_iperf3() {
    local t
    local srv=(taskset -c "$SERVER_CPU" "$IPERF3" -s -B "$HOST" -p "$P_IPERF3")
    log_cmd "iperf3 server" "${srv[@]}"
    if ! start_server "$WORK/run$RUN_NO-iperf3.srv" t "$P_IPERF3" "${srv[@]}"; then
        for t in tcp128K tcp64 bidir udp64; do record "$RUN_NO" iperf3 "$t" NA "" "" "server did not start"; done
        return
    fi
    iperf3_client tcp128K "$BIG" -l 128K
    iperf3_client tcp64 "$SMALL" -l 64
    iperf3_client bidir "$BIG" -l 128K --bidir
    iperf3_client udp64 "$SMALL" -u -b 0 -l 64
    stop_server "$SERVER_PID"
}

# Receiver-side figure from a stackmeter/1 stream document.
sm_extract() {
    python3 - "$1" "$2" "$CLIENT_CPU" <<'PY'
import json, sys
path, test = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
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
s = doc.get("summary")
if not isinstance(s, dict):
    print("no summary")
    sys.exit(1)
notes = []
if doc.get("complete") is False:
    notes.append("incomplete")
if test == "udp64":
    u = s.get("udp") or {}
    if u.get("received_datagrams") is None or not s.get("duration_s"):
        print("no summary.udp.received_datagrams")
        sys.exit(1)
    val, unit = u["received_datagrams"] / s["duration_s"] / 1000, "kpps"
    if u.get("loss_ratio") is not None:
        notes.append("lost %.1f%%" % (100 * u["loss_ratio"]))
    if u.get("sent_datagrams") is not None:
        notes.append("sent %.0f kpps" % (u["sent_datagrams"] / s["duration_s"] / 1000))
elif test == "bidir":
    val, unit = s["sent_mbps"] + s["recv_mbps"], "Mbps"
    notes.append("up %.0f + down %.0f" % (s["sent_mbps"], s["recv_mbps"]))
else:
    val, unit = s["sent_mbps"], "Mbps"
    if s.get("retransmits"):
        notes.append("retransmits %s" % s["retransmits"])
cpu = s.get("cpu") or {}
cl, rs = (cpu.get("client") or {}), (cpu.get("responder") or {})
cpus = ""
if cl.get("percent_of_core") is not None and rs.get("percent_of_core") is not None:
    cpus = "%.0f/%.0f" % (cl["percent_of_core"], rs["percent_of_core"])
pcpu = (doc.get("placement") or {}).get("client_cpu")
if pcpu is not None and str(pcpu) != sys.argv[3]:
    notes.append("client_cpu %s" % pcpu)
for w in doc.get("warnings") or []:
    # UDP runs with a --rate no client reaches, on purpose (unpaced); the
    # warning that says so is expected and its figure is in "sent" above.
    if test == "udp64" and str(w).startswith("the client offered"):
        continue
    notes.append("warning: %s" % str(w)[:100])
print("%.3f\t%s\t%s\t%s" % (val, unit, cpus, "; ".join(notes)))
PY
}

sm_client() { # TOOL TEST ARGS...
    local tool=$1 test=$2 out=$WORK/run$RUN_NO-$1-$2.json res
    shift 2
    local cmd=(taskset -c "$CLIENT_CPU" "$STACKMETER" stream "$HOST:$P_SM" -t "$SECONDS_PER_TEST"
        -i "$SECONDS_PER_TEST" "$@" --affinity "$CLIENT_CPU" --json --no-store)
    log_cmd "$tool $test client" "${cmd[@]}"
    if run_client "$out" "${cmd[@]}" || [[ -s $out ]]; then
        if res=$(sm_extract "$out" "$test"); then
            local val unit cpu extra
            IFS=$'\t' read -r val unit cpu extra <<<"$res"
            record "$RUN_NO" "$tool" "$test" "$val" "$unit" "$cpu" "$extra"
            return
        fi
        record "$RUN_NO" "$tool" "$test" NA "" "" "$res"
        return
    fi
    record "$RUN_NO" "$tool" "$test" NA "" "" "$(first_error_line "$out.err")"
}

# stackmeter's rows against one responder (TOOL names it): SERVER CMD...
sm_rows() { # TOOL CMD...
    local t tool=$1
    shift
    log_cmd "$tool server" "$@"
    if ! start_server "$WORK/run$RUN_NO-$tool.srv" t "$P_SM" "$@"; then
        for t in tcp128K tcp64 bidir udp64; do record "$RUN_NO" "$tool" "$t" NA "" "" "server did not start"; done
        return
    fi
    sm_client "$tool" tcp128K -l 128K
    sm_client "$tool" tcp64 -l 64
    sm_client "$tool" bidir -l 128K --direction bidir
    sm_client "$tool" udp64 --udp -l 64 --rate "$UDP_RATE"
    stop_server "$SERVER_PID"
}

run_stackmeter() {
    sm_rows stackmeter taskset -c "$SERVER_CPU" "$STACKMETER" serve --listen "$HOST:$P_SM" --quiet
    if [[ -x $C_RESPONDER ]]; then
        sm_rows stackmeter-c taskset -c "$SERVER_CPU" "$C_RESPONDER" --listen "$HOST:$P_SM" --quiet
    fi
    if [[ -n $C_BEFORE ]]; then
        sm_rows stackmeter-c-before taskset -c "$SERVER_CPU" "$C_BEFORE" --listen "$HOST:$P_SM" --quiet
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
unit_of, cpu_of, notes = {}, defaultdict(list), defaultdict(list)
for line in open(results):
    f = line.rstrip("\n").split("\t")
    rep, tool, test, val, unit, cpu, note = f[:7]
    key = (tool, test)
    if unit:
        unit_of[key] = unit
    runs[key].append(None if val == "NA" else float(val))
    if cpu:
        cpu_of[key].append(cpu)
    if note:
        notes[key].append("run %s: %s" % (rep, note))

def median(key):
    vals = [v for v in runs.get(key, []) if v is not None]
    return statistics.median(vals) if vals else None

TESTS = [("tcp128K", "TCP 128 KiB writes"), ("tcp64", "TCP 64-byte writes"),
         ("bidir", "TCP bidir 128 KiB"), ("udp64", "UDP 64-byte datagrams")]
TOOLS = [("floor", {"tcp128K": "tcp_stream, 128 KiB send/recv", "tcp64": "tcp_stream, 64 B send/recv",
                    "udp64": "udp_blast, 64 B send/recv"}),
         ("floor-nodelay", {"tcp128K": "tcp_stream ... nodelay", "tcp64": "tcp_stream ... nodelay"}),
         ("iperf3", {"tcp128K": "-l 128K", "tcp64": "-l 64", "bidir": "-l 128K --bidir",
                     "udp64": "-u -b 0 -l 64"}),
         ("stackmeter", {"tcp128K": "stream -l 128K", "tcp64": "stream -l 64",
                         "bidir": "stream -l 128K --direction bidir",
                         "udp64": "stream --udp -l 64 --rate %s" % env["UDP_RATE"]})]
SM_HOW = dict(TOOLS[-1][1])
TOOLS += [("stackmeter-c", {k: v + ", C responder" for k, v in SM_HOW.items()}),
          ("stackmeter-c-before", {k: v + ", C responder before (C_BEFORE)" for k, v in SM_HOW.items()})]

def fmt(v):
    if v is None:
        return "-"
    return "{:,.0f}".format(v) if v >= 100 else "%.2f" % v

def ratio(a, b):
    return "-" if a is None or not b else "%.2f" % (a / b)

print("## stackmeter loopback throughput vs floor and iperf3\n")
print("- host: %s, kernel %s, %s CPUs; servers/receivers pinned to CPU %s, clients/senders to CPU %s (taskset)"
      % (env["R_CPU_MODEL"], env["R_KERNEL"], env["R_NCPU"], env["SERVER_CPU"], env["CLIENT_CPU"]))
print("- load average before the run: %s" % env["R_LOAD"])
print("- REPEAT=%s: the whole set ran %s time(s), interleaved (floor, iperf3, stackmeter, then again); "
      "each figure is the **median of the per-run values**" % (env["REPEAT"], env["REPEAT"]))
print("- every test measures %s s; all figures are **receiver-side** (bytes or datagrams that arrived), "
      "Mbps = 10^6 bit/s of payload, kpps = 1000 datagrams/s" % env["SECONDS_PER_TEST"])
print("- stackmeter: %s" % env["R_SM_STATUS"])
print("- iperf3: %s\n" % env["R_IPERF3_STATUS"])

print("| test | tool | how | result | per run | CPU % client/server | vs iperf3 | vs floor |")
print("|---|---|---|---:|---|---|---:|---:|")
for test, label in TESTS:
    floor, iperf = median(("floor", test)), median(("iperf3", test))
    for tool, names in TOOLS:
        key = (tool, test)
        if key not in runs:
            continue
        m = median(key)
        unit = unit_of.get(key, "")
        per = ", ".join("fail" if v is None else fmt(v) for v in runs[key])
        cpus = ", ".join(cpu_of[key]) if cpu_of[key] else "-"
        vi = ratio(m, iperf) if tool != "iperf3" else "1.00" if m is not None else "-"
        vf = ratio(m, floor) if tool != "floor" else "1.00" if m is not None else "-"
        print("| %s | %s | `%s` | %s %s | %s | %s | %s | %s |"
              % (label, tool, names[test], fmt(m), unit, per, cpus, vi, vf))

def target(desc, test, ref, limit):
    sm, rv = median(("stackmeter", test)), median((ref, test))
    unit = unit_of.get(("stackmeter", test), unit_of.get((ref, test), ""))
    if sm is None or rv is None:
        why = "stackmeter not run" if sm is None else "reference not measured"
        return "| %s | %s | %s | - | %s | n/a (%s) |" % (desc, fmt(sm), fmt(rv), limit or "-", why)
    r = sm / rv
    if limit is None:
        verdict, lim = "reported", "-"
    else:
        verdict, lim = ("PASS" if r >= limit else "MISS"), ">= %.2f" % limit
    if ref.startswith("floor") and r > 1.1 and "not stackmeter's" not in desc:
        verdict += " (above this floor: see the floor notes, or check placement)"
    return "| %s | %s %s | %s %s | %.2f | %s | %s |" % (desc, fmt(sm), unit, fmt(rv), unit, r, lim, verdict)

print("\n### Targets (receiver-side rates, medians of runs; ratio = stackmeter / reference)\n")
print("| comparison | stackmeter | reference | ratio | target | result |")
print("|---|---:|---:|---:|---|---|")
print(target("stream -l 128K vs iperf3 -l 128K", "tcp128K", "iperf3", 1.0))
print(target("stream -l 64 vs iperf3 -l 64 (iperf3 #1078)", "tcp64", "iperf3", 1.0))
print(target("stream --direction bidir vs iperf3 --bidir (sum of both directions)", "bidir", "iperf3", None))
print(target("stream --udp -l 64 vs iperf3 -u -b 0 -l 64 (received pps)", "udp64", "iperf3", None))
print(target("stream -l 128K vs floor 128 KiB", "tcp128K", "floor", None))
print(target("stream -l 64 vs floor 64 B", "tcp64", "floor", None))
print(target("stream -l 128K vs floor 128 KiB with TCP_NODELAY (stackmeter's option at this size)", "tcp128K",
             "floor-nodelay", None))
print(target("stream -l 64 vs floor 64 B with TCP_NODELAY (not stackmeter's option at this size)", "tcp64",
             "floor-nodelay", None))
print(target("stream --udp -l 64 vs floor UDP 64 B (received pps)", "udp64", "floor", None))
if any(k[0] == "stackmeter-c-before" for k in runs):
    print("\n### The C responder against its earlier build (C_BEFORE), medians of runs\n")
    print("| test | C responder | before | ratio |")
    print("|---|---:|---:|---:|")
    for test, label in TESTS:
        a, b = median(("stackmeter-c", test)), median(("stackmeter-c-before", test))
        unit = unit_of.get(("stackmeter-c", test), "")
        print("| %s | %s %s | %s %s | %s |" % (label, fmt(a), unit, fmt(b), unit, ratio(a, b)))

print("\n### Notes\n")
print("- Receiver side everywhere. stackmeter: `summary.sent_mbps` (client to responder, counted by the "
      "responder); bidir adds `summary.recv_mbps` (responder to client, counted by the client); UDP: "
      "`summary.udp.received_datagrams / summary.duration_s`. iperf3: `end.sum_received` (the server's "
      "count); bidir adds `end.sum_received_bidir_reverse`; UDP: `sum_received.bytes / 64 / seconds` "
      "(datagrams that arrived). Floor: bytes or datagrams the receiver got within its window, which opens "
      "at the first byte.")
print("- Process layout is the same for all three: one server process on CPU %s, one client process on "
      "CPU %s; stackmeter uses the external responder (`stackmeter serve`), not the embedded one, and, as "
      "stackmeter-c, the C responder."
      % (env["SERVER_CPU"], env["CLIENT_CPU"]))
print("- CPU %: percent of one core, as each tool reports it (stackmeter: its data threads and the "
      "responder's session threads; iperf3: `cpu_utilization_percent` host/remote, whole processes). "
      "The floor does not measure it.")
print("- Floor: bench/floor/tcp_stream.c and udp_blast.c, blocking send()/recv() of the given size from a "
      "page-aligned buffer, no pacing. `floor` keeps the default socket options (Nagle on, as iperf3's "
      "default), which lets small writes share segments; `floor-nodelay` sets TCP_NODELAY on the sender, as "
      "stackmeter does on every connection (one segment per small write; on loopback it also changes how "
      "128 KiB writes are cut). There is no bidirectional floor.")
print("- UDP: each tool's sender runs unpaced (iperf3 `-b 0`; stackmeter's --rate %s is above what one "
      "core can send); what arrives is bounded by the receiver and the socket buffer, so loss is "
      "expected and shown per run." % env["UDP_RATE"])
for key in sorted(runs):
    vals = [v for v in runs[key] if v is not None]
    if len(vals) >= 2 and min(vals) > 0 and max(vals) / min(vals) > 1.25:
        print("- %s %s: per-run values differ by %.0f%% (noisy machine; more REPEAT helps)"
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
    for v in SECONDS_PER_TEST REPEAT SERVER_CPU CLIENT_CPU PORT_BASE CLIENT_TIMEOUT; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
    done
    ((REPEAT > 0 && SECONDS_PER_TEST > 0)) || die "REPEAT and SECONDS_PER_TEST must be > 0"
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

    build_floor tcp_stream udp_blast
    local have_iperf3=0 have_sm=0 sm_status iperf3_status
    if command -v "$IPERF3" >/dev/null; then
        have_iperf3=1
        iperf3_status="$(command -v "$IPERF3") ($("$IPERF3" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
    else
        iperf3_status="NOT RUN: $IPERF3 not found (apt-get install iperf3, or set IPERF3)"
        note "iperf3 not available: skipped"
    fi
    if [[ -x $STACKMETER ]]; then
        have_sm=1
        sm_status="$STACKMETER ($("$STACKMETER" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
    else
        sm_status="NOT RUN: no executable at $STACKMETER (build it with cargo build --release, or set STACKMETER)"
        note "stackmeter binary not found at $STACKMETER: running the floor and iperf3 only"
    fi

    read -r P_FLOOR P_IPERF3 P_SM < <(pick_ports 3) || die "no free ports from $PORT_BASE"
    note "ports: floor $P_FLOOR, iperf3 $P_IPERF3, stackmeter $P_SM (127.0.0.1); ${SECONDS_PER_TEST} s per test"
    local load
    load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

    for ((RUN_NO = 1; RUN_NO <= REPEAT; RUN_NO++)); do
        note "repetition $RUN_NO/$REPEAT"
        run_floor
        if [[ $have_iperf3 == 1 ]]; then
            run_iperf3
        fi
        if [[ $have_sm == 1 ]]; then
            run_stackmeter
        fi
    done

    R_SM_STATUS=$sm_status R_IPERF3_STATUS=$iperf3_status R_LOAD=$load \
        R_KERNEL="$(uname -sr)" R_NCPU="$(nproc)" \
        R_CPU_MODEL="$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1)" \
        SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU REPEAT=$REPEAT \
        SECONDS_PER_TEST=$SECONDS_PER_TEST UDP_RATE=$UDP_RATE \
        report
}

main "$@"
