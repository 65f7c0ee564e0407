#!/usr/bin/env bash
# bench/kill9.sh - kill -9 a suite at random moments, many times (the
# store's durability evidence, docs/reliability.md):
# each round starts `stackmeter suite udp-echo` (about 70 ms per test, so
# it is often inside a commit) against two `serve` processes, reads the
# ids of the tests committed so far, kills the suite with SIGKILL after a
# random delay, and checks that the store passes `stackmeter store check`
# and still holds every test it held before the kill. The test suite does
# the same at 8 fixed moments (crates/cli/tests/store/durability.rs); this
# is the long version for docs/reliability.md.
#
# Environment (default): STACKMETER (target/release/stackmeter, else
# target/debug/stackmeter), SEED (15). Usage: bench/kill9.sh [ROUNDS]
# (default 200). Exit 0 when every round kept everything.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${1:-200}
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || { echo "bench/kill9.sh: ROUNDS must be a positive number, got '$ROUNDS'" >&2; exit 2; }
STACKMETER=${STACKMETER:-}
if [[ -z $STACKMETER ]]; then
    STACKMETER=$REPO_ROOT/target/release/stackmeter
    [[ -x $STACKMETER ]] || STACKMETER=$REPO_ROOT/target/debug/stackmeter
fi
[[ -x $STACKMETER ]] || { echo "bench/kill9.sh: build first (cargo build -p stackmeter)" >&2; exit 1; }
RANDOM=${SEED:-15}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
db=$work/results.db
addrs=()
for i in 1 2; do
    "$STACKMETER" serve --listen 127.0.0.1:0 2>"$work/serve$i.log" &
    pids+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$work/serve$i.log" && break; sleep 0.05; done
    addrs+=("$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$work/serve$i.log" | head -n 1)")
done
ids() { python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(' '.join(str(r[0]) for r in c.execute('SELECT id FROM tests ORDER BY id')))" "$db" 2>/dev/null || true; }
lost=0
kept=0
for round in $(seq "$ROUNDS"); do
    STACKMETER_DB=$db "$STACKMETER" suite udp-echo --repeat 100 --target "a=${addrs[0]}" --target "b=${addrs[1]}" \
        >/dev/null 2>&1 &
    suite=$!
    sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
    sleep "$((RANDOM % 3))"
    before=$(ids)
    sleep "0.0$(printf '%02d' $((RANDOM % 100)))"
    kill -9 "$suite" 2>/dev/null || true
    wait "$suite" 2>/dev/null || true
    after=" $(ids) "
    for id in $before; do
        [[ $after == *" $id "* ]] || { echo "round $round: test $id lost" >&2; lost=$((lost + 1)); }
    done
    if ! check=$(STACKMETER_DB=$db "$STACKMETER" store check 2>&1); then
        echo "round $round: store check failed: $check" >&2
        exit 1
    fi
    kept=$(wc -w <<<"$after")
done
echo "kill9: $ROUNDS suites killed with SIGKILL at random moments; $kept tests kept, $lost lost; $check"
[[ $lost -eq 0 ]]
