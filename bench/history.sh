#!/usr/bin/env bash
# bench/history.sh - stackmeter's change-point method against Apache Otava on
# the same series (a benchmark, not a test).
#
#   bash bench/history.sh              evaluate: both tools on the saved series
#   bash bench/history.sh collect      measure the real series again (root:
#                                      makes and removes a network namespace;
#                                      about 15 minutes; run it under the
#                                      machine's CPU lock if it has one)
#
# collect measures real stackmeter runs on this machine (bench/history_collect.py
# says what: rr with response sizes changed part way, a responder swapped,
# a tbf rate stepped on a veth into a namespace, and series that never change)
# and writes bench/results/history/*.csv plus truth.json (where the changes
# were made). evaluate runs Otava (installed from PyPI into target/py) and
# stackmeter's method on exactly the same CSV files, and on CSV files derived
# from them (real noise with shifts of 5%, 10% and 25% multiplied in) and on
# seeded synthetic ones, and prints the Markdown table
# (bench/history_score.py scores: precision, recall, F1, detection delay,
# false alarms per 100 unchanged runs). Progress goes to stderr, the report
# to stdout.
#
# Environment: CLIENT_CPU (1) and SERVER_CPU (0) pin the client and the
# responders; HISTORY_DATA (bench/results/history) is where the series are;
# COLLECT_ARGS adds arguments to history_collect.py (a short smoke run:
# "--runs-rr 6 --runs-swap 6 --runs-stream 5 --calibration-rounds 2");
# PYTHON (python3) runs the collector; the scorer runs on target/py's Python,
# which has Otava.

set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${HISTORY_DATA:-$ROOT/bench/results/history}
SM=$ROOT/target/release/stackmeter
CLIENT_CPU=${CLIENT_CPU:-1}
SERVER_CPU=${SERVER_CPU:-0}
PYTHON=${PYTHON:-python3}
NS=smhist
PIDS=()

note() { printf '# %s\n' "$*" >&2; }
die() { note "error: $*"; exit 1; }

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if ip netns list 2>/dev/null | grep -qw "$NS"; then
        for pid in $(ip netns pids "$NS" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        sleep 0.2
        ip link del smh-a0 2>/dev/null || true
        ip link del smh-b0 2>/dev/null || true
        ip netns del "$NS" 2>/dev/null || true
    fi
    exit "$rc"
}

# start NAME CMD...: runs a responder in the background, waits for its port.
start() {
    local name=$1 port=$2
    shift 2
    "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        if ss -Hlnt "sport = :$port" 2>/dev/null | grep -q .; then return 0; fi
        if ip netns exec "$NS" ss -Hlnt "sport = :$port" 2>/dev/null | grep -q .; then return 0; fi
        sleep 0.05
    done
    sed 's/^/#   /' "$WORK/$name.log" >&2
    die "$name did not start"
}

veth() { # veth DEV0 DEV1 NET: a pair with DEV1 in the namespace, tbf on DEV0
    ip link add "$1" type veth peer name "$2"
    ip link set "$2" netns "$NS"
    ip addr add "$3.1/24" dev "$1"
    ip link set "$1" up
    ip netns exec "$NS" ip addr add "$3.2/24" dev "$2"
    ip netns exec "$NS" ip link set "$2" up
    tc qdisc add dev "$1" root tbf rate 200mbit burst 64kb latency 20ms
}

collect() {
    [[ $(id -u) == 0 ]] || die "collect needs root (a network namespace and tc)"
    [[ -x $SM ]] || die "build it first: cargo build --release -p stackmeter"
    local c=$ROOT/c-responder/stackmeter-responder
    [[ -x $c ]] || die "build it first: make -C c-responder"
    WORK=$(mktemp -d)
    trap cleanup EXIT INT TERM
    mkdir -p "$DATA"
    start serve 24731 taskset -c "$SERVER_CPU" "$SM" serve --listen 127.0.0.1:24731 --affinity "$SERVER_CPU"
    start c 24732 "$c" --listen 127.0.0.1:24732 --affinity "$SERVER_CPU" --quiet
    start serve-t0 24733 "$SM" serve --listen 127.0.0.1:24733 --affinity "$SERVER_CPU" --threads 0
    ip netns add "$NS"
    ip netns exec "$NS" ip link set lo up
    veth smh-a0 smh-a1 10.231.1
    veth smh-b0 smh-b1 10.231.2
    start serve-ns 24734 ip netns exec "$NS" "$SM" serve --listen 10.231.1.2:24734 --listen 10.231.2.2:24734 \
        --affinity "$SERVER_CPU"
    note "responders up; measuring (client on CPU $CLIENT_CPU)"
    taskset -c "$CLIENT_CPU" "$PYTHON" "$ROOT/bench/history_collect.py" --stackmeter "$SM" \
        --rust 127.0.0.1:24731 --c 127.0.0.1:24732 --rust-t0 127.0.0.1:24733 \
        --stream-steps 10.231.1.2:24734 --stream-fixed 10.231.2.2:24734 --veth-steps smh-a0 \
        --client-cpu "$CLIENT_CPU" --out "$DATA" ${COLLECT_ARGS:-}
    rm -rf -- "$WORK"
}

evaluate() {
    local otava=$ROOT/target/py/bin/otava
    if [[ ! -x $otava ]]; then
        note "installing Apache Otava into target/py"
        "$PYTHON" -m venv "$ROOT/target/py"
        "$ROOT/target/py/bin/pip" install -q apache-otava
    fi
    note "building stackmeter-history's CSV example"
    (cd "$ROOT" && cargo build -q --release -p stackmeter-history-csv --example history_csv)
    [[ -f $DATA/truth.json ]] || die "no series in $DATA: run 'bash bench/history.sh collect' first"
    # The scorer imports Otava's analysis: its virtual environment's Python.
    "$ROOT/target/py/bin/python" "$ROOT/bench/history_score.py" --data "$DATA" --otava "$otava" \
        --stackmeter "$ROOT/target/release/examples/history_csv"
}

case ${1:-evaluate} in
    collect) collect ;;
    evaluate) evaluate ;;
    *) die "usage: bash bench/history.sh [collect|evaluate]" ;;
esac
