#!/usr/bin/env bash
# bench/lab.sh - the lab's lwIP targets against their floors: how much the
# lab's responders (`stackmeter lab up`: lwip-raw, lwip-sock) cost on top
# of lwIP itself, as a Markdown report on stdout.
#
# Why this exists: the lab compares the kernel's stack with lwIP. That is
# only a comparison of stacks if the lwIP targets run at the speed lwIP
# allows on the same path. The floors (bench/floor/lwip_raw.c, the raw
# API; bench/floor/lwip_sock.c, the sockets API) are the least a program
# on the same Debian liblwip and the same kind of TAP device can do,
# written only for speed; "lab target / floor" is what the lab's
# responders add. Each floor has its own TAP device (smfl3, smfl4) with
# the lab's MTU, so both kinds of program run on the same path: host
# kernel, TAP, one process with lwIP.
#
# Tests: rr 1:1, 1:10K, 1:100K, 100K:1 (p50 of N round trips, the same
# client for both: stackmeter rr against the lab target, stackmeter rr
# --raw against the floor, which then serves that one size without a
# header), the responder's CPU per transaction, and stream up/down (receiver's Mbps: stackmeter stream, and
# tcp_stream against the floor's sink/source). Every responder and floor
# is pinned to SERVER_CPU, every client to CLIENT_CPU; ROUNDS interleaved
# rounds (the order of the four programs alternates each round); the
# report gives medians across rounds and the ratio of the medians.
# A report, not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo bash bench/lab.sh > bench/results/DAY-lab.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   MTU          MTU of all four TAP devices (1500; 576 gives the lab as it
#                was before its own netif driver)
#   ROUNDS       interleaved rounds (5)
#   N / WARMUP   timed/untimed round trips per rr row (2000/100)
#   STREAM_S     seconds per stream run (3)
#   SERVER_CPU/CLIENT_CPU  pinning (0/1)
#   KEEP_LOGS    1: keep the work directory (0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
MTU=${MTU:-1500}
ROUNDS=${ROUNDS:-5}
N=${N:-2000}
WARMUP=${WARMUP:-100}
STREAM_S=${STREAM_S:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
KEEP_LOGS=${KEEP_LOGS:-0}
FPORT=24700 # floors' rr port; stream ports FPORT+1 (up), FPORT+2 (down)
SIZES=(1:1 1:10K 1:100K 100K:1)

note() { printf '# %s\n' "$*" >&2; }
die() {
    note "error: $*"
    exit 1
}

[[ $(id -u) == 0 ]] || die "needs root (TAP devices)"
[[ -e /dev/net/tun ]] || die "no /dev/net/tun"
[[ -x $STACKMETER ]] || die "$STACKMETER not found (cargo build --release -p stackmeter)"
pkg-config --exists lwip || die "no lwIP (apt-get install liblwip-dev)"
for d in smlab1 smlab2 smfl3 smfl4; do
    ! ip link show "$d" >/dev/null 2>&1 || die "TAP device $d exists (a lab is up? stackmeter lab down)"
done

WORK=$(mktemp -d /tmp/stackmeter-lab-bench.XXXXXX)
BIN=$WORK/bin
RES=$WORK/results.tsv
CMDS=$WORK/commands.tsv
FLOOR_PIDS=()
declare -A PID # target label -> its process
export STACKMETER_LAB_DIR=$WORK/lab

cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    for p in "${FLOOR_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${FLOOR_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    "$STACKMETER" lab down >/dev/null 2>&1 || true
    ip link del smfl3 2>/dev/null || true
    ip link del smfl4 2>/dev/null || true
    if [[ $KEEP_LOGS == 1 ]]; then note "raw outputs kept in $WORK"; else rm -rf -- "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT INT TERM

# ------------------------------------------------------------ builds
note "building the lab's responders and the floors"
make -s -C "$REPO_ROOT/c-responder" all lwip >&2
mkdir -p "$BIN"
for p in lwip_raw lwip_sock; do
    cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic $(pkg-config --cflags lwip) \
        -o "$BIN/$p" "$REPO_ROOT/bench/floor/$p.c" $(pkg-config --libs lwip) -lpthread ||
        die "could not build bench/floor/$p.c"
done
for p in tcp_stream; do
    cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=200809L \
        -o "$BIN/$p" "$REPO_ROOT/bench/floor/$p.c" || die "could not build bench/floor/$p.c"
done

# ------------------------------------------------------------ devices
note "lab up (responders on CPU $SERVER_CPU), floor devices, MTU $MTU"
"$STACKMETER" lab up --cpu "$SERVER_CPU" --bin-dir "$REPO_ROOT/c-responder" >"$WORK/lab.out" ||
    die "lab up failed: $(cat "$WORK/lab.out")"
for n in 3 4; do
    ip tuntap add dev "smfl$n" mode tap
    ip addr add "198.18.$n.1/24" dev "smfl$n"
done
for d in smlab1 smlab2 smfl3 smfl4; do ip link set "$d" mtu "$MTU" up; done
PID[lwip-raw]=$(awk '$1 == "pid" && $3 == "lwip-raw" {print $2}' "$STACKMETER_LAB_DIR/state")
PID[lwip-sock]=$(awk '$1 == "pid" && $3 == "lwip-sock" {print $2}' "$STACKMETER_LAB_DIR/state")

# target label -> address, TAP, floor program
declare -A ADDR=([lwip-raw]=198.18.1.2 [lwip-sock]=198.18.2.2 [floor-raw]=198.18.3.2 [floor-sock]=198.18.4.2)
declare -A TAP=([floor-raw]=smfl3 [floor-sock]=smfl4)
declare -A PROG=([floor-raw]=lwip_raw [floor-sock]=lwip_sock)
ORDER=(lwip-raw floor-raw lwip-sock floor-sock)

log_cmd() { # LABEL CMD... (first round only)
    local label=$1
    shift
    [[ $ROUND != 1 ]] || printf '%s\t%s\n' "$label" "$(printf '%q ' "$@")" >>"$CMDS"
}
record() { printf '%s\t%s\t%s\t%s\n' "$ROUND" "$1" "$2" "$3" >>"$RES"; } # TARGET TEST VALUE

# bytes of a stackmeter size (1, 10K, 100K)
bytes() {
    local s=$1
    case $s in
    *K) echo $((${s%K} * 1024)) ;;
    *) echo "$s" ;;
    esac
}

start_floor() { # TARGET MODE ARGS...: a floor in the background, pinned
    local t=$1
    shift
    local cmd=("$BIN/${PROG[$t]}" "${TAP[$t]}" "${ADDR[$t]}" "$SERVER_CPU" "$@")
    log_cmd "$t $1" "${cmd[@]}"
    "${cmd[@]}" >"$WORK/r$ROUND-$t-$1.out" 2>&1 &
    FLOOR_PID=$!
    FLOOR_PIDS+=("$FLOOR_PID")
}

stop_floor() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# Waits until ADDR:PORT accepts a TCP connection (the floor's lwIP is up
# and answered ARP), at most 5 s.
wait_tcp() {
    local i
    for ((i = 0; i < 50; i++)); do
        timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# CPU time (ns) a process has used, all its threads: the first field of
# schedstat, in ns (utime/stime count 10 ms ticks).
cpu_ns() {
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}

rr_one() { # TARGET SIZE
    local t=$1 s=$2 out=$WORK/r$ROUND-$1-$2.rr v c0 c1
    c0=$(cpu_ns "${PID[$t]}")
    # The same client for both: a floor serves REQ:RESP without a header.
    local cmd=(taskset -c "$CLIENT_CPU" "$STACKMETER" rr)
    if [[ $t == lwip-* ]]; then
        cmd+=("${ADDR[$t]}:24680" --sizes "$s")
    else
        cmd+=("${ADDR[$t]}:$FPORT" --raw "$s")
    fi
    cmd+=(-n "$N" --warmup "$WARMUP" --json --no-store)
    log_cmd "$t rr $s" "${cmd[@]}"
    timeout 120 "${cmd[@]}" >"$out" 2>&1 || true
    v=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["rtt_us"]["p50"])' \
        "$out" 2>/dev/null) || v=NA
    c1=$(cpu_ns "${PID[$t]}")
    record "$t" "rr $s" "$v"
    # the responder's CPU per transaction (us), hand-offs and the host
    # kernel's work inside its TAP writes included
    record "$t" "cpu rr $s" "$(awk -v a="$c0" -v b="$c1" -v n=$((N + WARMUP)) 'BEGIN {printf "%.1f", (b - a) / n / 1000}')"
}

# Waits up to 5 s for a floor to end by itself (it prints its CPU time
# then), else stops it.
wait_floor() {
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    stop_floor "$1"
}

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$2" | head -n 1; } # NAME FILE

# us of responder CPU per MB (10^6 bytes) moved
per_mb() { awk -v c="$1" -v b="$2" 'BEGIN {if (c == "" || b == "" || b == 0) print "NA"; else printf "%.1f", c * 1e6 / (b / 1e6)}'; }

stream_one() { # TARGET DIR
    local t=$1 dir=$2 out=$WORK/r$ROUND-$1-$2.st v=NA cpu=NA
    if [[ $t == lwip-* ]]; then
        local cmd=(taskset -c "$CLIENT_CPU" "$STACKMETER" stream "${ADDR[$t]}:24680" --direction "$dir"
            -t "$STREAM_S" -l 128K --json --no-store)
        log_cmd "$t stream $dir" "${cmd[@]}"
        local c0 c1 vb
        c0=$(cpu_ns "${PID[$t]}")
        timeout $((STREAM_S + 60)) "${cmd[@]}" >"$out" 2>&1 || true
        c1=$(cpu_ns "${PID[$t]}")
        vb=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; up = sys.argv[2] == "up"
print("%.1f %d" % (s["sent_mbps"] if up else s["recv_mbps"], s["sent_bytes"] if up else s["recv_bytes"]))' \
            "$out" "$dir" 2>/dev/null) || vb="NA 0"
        v=${vb% *}
        cpu=$(per_mb "$(awk -v a="$c0" -v b="$c1" 'BEGIN {print (b - a) / 1e9}')" "${vb#* }")
    elif [[ $dir == up ]]; then
        start_floor "$t" sink $((FPORT + 1)) "$STREAM_S"
        local fp=$FLOOR_PID
        sleep 0.3
        local cmd=(taskset -c "$CLIENT_CPU" "$BIN/tcp_stream" send "${ADDR[$t]}" $((FPORT + 1)) 131072 "$STREAM_S"
            nodelay)
        log_cmd "$t stream up client" "${cmd[@]}"
        timeout $((STREAM_S + 30)) "${cmd[@]}" >"$out" 2>&1 || true
        wait_floor "$fp"
        local so=$WORK/r$ROUND-$t-sink.out
        v=$(field mbps "$so")
        cpu=$(per_mb "$(field cpu_s "$so")" "$(field bytes "$so")")
    else
        local cmd=(taskset -c "$CLIENT_CPU" "$BIN/tcp_stream" recv $((FPORT + 2)) "${ADDR[$t]%.2}.1" 131072
            "$STREAM_S")
        log_cmd "$t stream down client" "${cmd[@]}"
        timeout $((STREAM_S + 30)) "${cmd[@]}" >"$out" 2>&1 &
        local cp=$!
        sleep 0.3
        start_floor "$t" source "${ADDR[$t]%.2}.1" $((FPORT + 2))
        local fp=$FLOOR_PID
        wait "$cp" 2>/dev/null || true
        wait_floor "$fp"
        v=$(field mbps "$out")
        cpu=$(per_mb "$(field cpu_s "$WORK/r$ROUND-$t-source.out")" "$(field bytes "$out")")
    fi
    [[ -n $v ]] || v=NA
    record "$t" "stream $dir" "$v"
    record "$t" "cpu stream $dir" "$cpu"
}

for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    note "round $ROUND of $ROUNDS"
    if ((ROUND % 2 == 0)); then order=(floor-sock lwip-sock floor-raw lwip-raw); else order=("${ORDER[@]}"); fi
    for s in "${SIZES[@]}"; do
        # floors serve this size only (no header): started per size
        start_floor floor-raw serve "$FPORT" $(bytes "${s%%:*}") $(bytes "${s##*:}")
        PID[floor-raw]=$FLOOR_PID
        start_floor floor-sock serve "$FPORT" $(bytes "${s%%:*}") $(bytes "${s##*:}")
        PID[floor-sock]=$FLOOR_PID
        wait_tcp "${ADDR[floor-raw]}" "$FPORT" || note "floor-raw does not answer"
        wait_tcp "${ADDR[floor-sock]}" "$FPORT" || note "floor-sock does not answer"
        for t in "${order[@]}"; do rr_one "$t" "$s"; done
        stop_floor "${PID[floor-raw]}"
        stop_floor "${PID[floor-sock]}"
    done
    for d in up down; do
        for t in "${order[@]}"; do stream_one "$t" "$d"; done
    done
done

# ------------------------------------------------------------ report
python3 - "$RES" "$CMDS" "$MTU" "$ROUNDS" "$N" "$STREAM_S" "$SERVER_CPU" "$CLIENT_CPU" <<'PY'
import statistics, sys
res, cmds, mtu, rounds, n, secs, scpu, ccpu = sys.argv[1:]
rows = {}
for line in open(res):
    r, target, test, v = line.rstrip("\n").split("\t")
    rows.setdefault((test, target), []).append(None if v == "NA" else float(v))
tests = []
for (test, _) in rows:
    if test not in tests:
        tests.append(test)
def med(test, target):
    v = [x for x in rows.get((test, target), []) if x is not None]
    return (statistics.median(v), len(v)) if v else (None, 0)
print("MTU %s on every TAP device; %s interleaved rounds; rr: p50 of %s round trips (us, lower is better); "
      "stream: receiver's Mbps over %s s (higher is better). Responders and floors on CPU %s, clients on CPU %s."
      % (mtu, rounds, n, secs, scpu, ccpu))
print()
print("| test | lwip-raw | floor-raw | raw / floor | lwip-sock | floor-sock | sock / floor |")
print("|---|---:|---:|---:|---:|---:|---:|")
def cell(m):
    return "NA" if m[0] is None else ("%.1f" % m[0]) + ("" if m[1] == int(rounds) else " (%d runs)" % m[1])
def ratio(test, a, b):
    x, y = med(test, a)[0], med(test, b)[0]
    if x is None or y is None or y == 0:
        return "NA"
    # cost ratio: time over time for rr, floor rate over target rate for stream
    q = y / x if test.startswith("stream") else x / y
    return "%.2f%s" % (q, "" if q <= 1.2 else " MISS")
for t in tests:
    print("| %s | %s | %s | %s | %s | %s | %s |" % (t, cell(med(t, "lwip-raw")), cell(med(t, "floor-raw")),
          ratio(t, "lwip-raw", "floor-raw"), cell(med(t, "lwip-sock")), cell(med(t, "floor-sock")),
          ratio(t, "lwip-sock", "floor-sock")))
print()
print("Ratios are costs (target time / floor time; for stream, floor Mbps / target Mbps): 1.00 is the floor, "
      "the goal is at most 1.20 (MISS above it). `cpu rr` rows: the responder's CPU time per transaction (us, "
      "every thread, from /proc/PID/task/*/schedstat), which a busy machine disturbs far less than a round trip "
      "time; it includes the host kernel's receive work done inside the responder's TAP writes. `cpu stream` "
      "rows: the same per MB (10^6 bytes) received by the receiver (floors: getrusage of the sink or source "
      "process, printed as it ends). Per round:")
print()
print("| test | target | " + " | ".join("r%d" % (i + 1) for i in range(int(rounds))) + " |")
print("|---|---|" + "---:|" * int(rounds))
for t in tests:
    for target in ("lwip-raw", "floor-raw", "lwip-sock", "floor-sock"):
        v = rows.get((t, target), [])
        print("| %s | %s | %s |" % (t, target, " | ".join("NA" if x is None else "%.1f" % x for x in v)))
print()
print("Commands (first round):")
print()
print("```")
for line in open(cmds):
    label, cmd = line.rstrip("\n").split("\t", 1)
    print("%-28s %s" % (label, cmd))
print("```")
PY
