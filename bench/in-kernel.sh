#!/usr/bin/env bash
# bench/in-kernel.sh - a responder inside the Linux stack against the same
# responder as an application, until decided, on loopback and on a veth
# pair between two namespaces (a benchmark, not a test: root, about 10
# minutes); then the round trip layer by layer (ping --layers) for each.
#
#   xdp      A: `serve` (the application answers ping); B: `serve
#            --in-kernel xdp` (an XDP program answers at the driver, generic
#            mode: loopback has no other, and on veth generic was the faster
#            here). Plan in-kernel-xdp: ping of 64, 512 and 1472 bytes.
#   sockmap  A: `serve --plain-echo` (the application reads and writes
#            every byte); B: `serve --in-kernel sockmap` (the kernel sends
#            the bytes back; the application never reads). Plan
#            in-kernel-sockmap: rr --echo 1:1 to 64K:64K.
#
# Responders on CPU 0, the client on CPU 1; budget BUDGET (60s) per
# comparison. Prints a Markdown report on stdout; progress on stderr.
# Environment: BUDGET (60s), SM (target/release/stackmeter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM=${SM:-$ROOT/target/release/stackmeter}
BUDGET=${BUDGET:-60s}
[[ -x $SM ]] || { echo "bench/in-kernel.sh: build first (cargo build --release -p stackmeter)" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench/in-kernel.sh: needs root (BPF, namespaces)" >&2; exit 1; }
source "$ROOT/bench/lib.sh"
WORK=$(mktemp -d)
PIDS=()
C=smikc S=smiks
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    ip netns del "$C" 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$WORK

ip netns add "$C"
ip netns add "$S"
ip link add smikv0 netns "$C" type veth peer name smikv1 netns "$S"
ip -n "$C" addr add 198.19.21.1/24 dev smikv0
ip -n "$S" addr add 198.19.21.2/24 dev smikv1
for ns in "$C" "$S"; do ip -n "$ns" link set lo up; done
ip -n "$C" link set smikv0 up
ip -n "$S" link set smikv1 up

# serve_in NS LOG ARGS...: a responder on CPU 0 in NS ("" for this one),
# waited for.
serve_in() {
    local ns=$1 log=$2
    shift 2
    if [[ -n $ns ]]; then
        ip netns exec "$ns" taskset -c 0 "$SM" serve "$@" 2>"$log" &
    else
        taskset -c 0 "$SM" serve "$@" 2>"$log" &
    fi
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$log" && break; sleep 0.05; done
    grep -q "listening on tcp" "$log" || die "serve $*: $(cat "$log")"
    if [[ " $* " == *" xdp "* ]]; then
        for _ in $(seq 100); do grep -q "XDP answers" "$log" && break; sleep 0.05; done
    fi
}

# client NS ARGS...: stackmeter on CPU 1 in NS ("" for this one).
client() {
    local ns=$1
    shift
    if [[ -n $ns ]]; then
        ip netns exec "$ns" taskset -c 1 "$SM" "$@"
    else
        taskset -c 1 "$SM" "$@"
    fi
}

# compare WHERE NS PLAN A B: one decided suite, its text.
compare() {
    local where=$1 ns=$2 plan=$3 a=$4 b=$5
    note "$plan on $where"
    echo "### $plan on $where"
    echo
    echo '```text'
    client "$ns" suite "$plan" --target "$a" --target "$b" --budget "$BUDGET" --no-store 2>/dev/null
    echo '```'
    echo
}

# layers WHERE NS TARGET: ping --layers, its text.
layers() {
    local where=$1 ns=$2 target=$3
    note "ping --layers on $where"
    echo "### ping --layers, $where"
    echo
    echo '```text'
    client "$ns" ping "$target" --layers --count 1000 --no-store 2>/dev/null | sed -n '/round trip layer by layer/,$p'
    echo '```'
    echo
}

echo "# A responder inside the Linux stack against the same one as an application"
echo
echo "$(machine_line); responders on CPU 0, client on CPU 1; \`suite --until decided\`, budget $BUDGET, +/-2%."
echo
echo "## XDP against the application (UDP echo)"
echo
serve_in "" "$WORK/lo-app.log" --listen 127.0.0.1:24811
serve_in "" "$WORK/lo-xdp.log" --listen 127.0.0.1:24812 --in-kernel xdp --interface lo
serve_in "$S" "$WORK/v-app.log" --listen 198.19.21.2:24811
serve_in "$S" "$WORK/v-xdp.log" --listen 198.19.21.2:24812 --in-kernel xdp --interface smikv1
compare loopback "" in-kernel-xdp app=127.0.0.1:24811 xdp=127.0.0.1:24812
compare "a veth pair" "$C" in-kernel-xdp app=198.19.21.2:24811 xdp=198.19.21.2:24812
layers "loopback, the application" "" 127.0.0.1:24811
layers "loopback, XDP" "" 127.0.0.1:24812
layers "a veth pair, the application" "$C" 198.19.21.2:24811
layers "a veth pair, XDP" "$C" 198.19.21.2:24812
echo "## sockmap against the application (TCP echo)"
echo
serve_in "" "$WORK/lo-echo.log" --listen 127.0.0.1:24813 --plain-echo
serve_in "" "$WORK/lo-sock.log" --listen 127.0.0.1:24814 --in-kernel sockmap
serve_in "$S" "$WORK/v-echo.log" --listen 198.19.21.2:24813 --plain-echo
serve_in "$S" "$WORK/v-sock.log" --listen 198.19.21.2:24814 --in-kernel sockmap
compare loopback "" in-kernel-sockmap app=127.0.0.1:24813 sockmap=127.0.0.1:24814
compare "a veth pair" "$C" in-kernel-sockmap app=198.19.21.2:24813 sockmap=198.19.21.2:24814
# The responders' counters, as they print them at the end.
for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
sleep 1
echo "## The in-kernel responders' counters at the end"
echo
echo '```text'
grep -h "in-kernel" "$WORK"/*.log || true
echo '```'
