#!/usr/bin/env bash
# bench/store-stress.sh - how often the SQLite store loses a run when many
# processes use it at once, both CPUs kept busy by two loops (the long
# version of crates/cli/tests/store/concurrency.rs; docs/store.md). Two
# scenarios, each TRIALS times, each on a store of its own:
#   reader-close  A sets a new store up and measures (ping, 1.5 s); B opens
#                 it, lists the runs and closes; C opens it and measures past
#                 A's end. A's run must be there (the order of events that
#                 lost runs when setup locked the database file itself).
#   fresh-crowd   10 pings labelled p0..p9 start at once on a store that
#                 does not exist yet (the report that opened this work);
#                 every one that exits 0 must be listed.
# A trial "lost" when a process exited 0 and its run is not listed (or
# `store check` fails). Prints one Markdown table row per scenario:
#   | binary | scenario | trials | trials that lost runs | runs lost | exits != 0 |
# Environment: NAME (the first column; default: the binary's --version),
# STACKMETER (the binary under test; default
# target/release/stackmeter), TRIALS (default 300).
# Usage: bench/store-stress.sh [SCENARIO...]   (default: both)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TRIALS=${TRIALS:-300}
[[ $TRIALS =~ ^[0-9]+$ && $TRIALS -gt 0 ]] || { echo "bench/store-stress.sh: TRIALS must be a positive number, got '$TRIALS'" >&2; exit 2; }
STACKMETER=${STACKMETER:-$REPO_ROOT/target/release/stackmeter}
[[ -x $STACKMETER ]] || { echo "bench/store-stress.sh: no binary at $STACKMETER (cargo build --release -p stackmeter, or set STACKMETER)" >&2; exit 1; }
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(reader-close fresh-crowd)
work=$(mktemp -d)
pids=()
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    # The pings of a trial cut short.
    pkill -P $$ 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT INT TERM
export HOME=$work/home XDG_DATA_HOME=$work/home/.local/share STACKMETER_C_RESPONDER=
"$STACKMETER" serve --listen 127.0.0.1:0 2>"$work/serve.log" &
pids+=("$!")
for _ in $(seq 100); do grep -q "listening on tcp" "$work/serve.log" && break; sleep 0.05; done
target=$(sed -n 's/.*listening on tcp \([0-9.:]*\).*/\1/p' "$work/serve.log" | head -n 1)
[[ -n $target ]] || { echo "bench/store-stress.sh: the responder did not start" >&2; exit 1; }
for _ in 1 2; do
    sh -c 'while :; do :; done' &
    pids+=("$!")
done

# listed DB: the labels of the stored runs, one per line (empty when none).
listed() {
    STACKMETER_DB=$1 "$STACKMETER" runs --json 2>/dev/null \
        | python3 -c 'import json,sys; [print(r["label"]) for r in json.load(sys.stdin)["runs"]]' 2>/dev/null || true
}

# judge DB LABEL...: counts the labels (of processes that exited 0) that
# are not listed; sets LOST_RUNS; returns 1 when any is missing or the
# store does not check.
judge() {
    local db=$1 have l
    shift
    have=$(listed "$db")
    LOST_RUNS=0
    for l in "$@"; do
        grep -qx -- "$l" <<<"$have" || LOST_RUNS=$((LOST_RUNS + 1))
    done
    STACKMETER_DB=$db "$STACKMETER" store check >/dev/null 2>&1 || LOST_RUNS=$((LOST_RUNS + 1))
    ((LOST_RUNS == 0))
}

reader_close() {
    local db=$1 a c
    STACKMETER_DB=$db "$STACKMETER" ping -c 30 --interval-us 50000 --label a "$target" >/dev/null 2>&1 &
    a=$!
    for _ in $(seq 2000); do [[ -e $db-wal ]] && break; sleep 0.005; done
    sleep 0.2
    STACKMETER_DB=$db "$STACKMETER" runs >/dev/null 2>&1 || true
    STACKMETER_DB=$db "$STACKMETER" ping -c 80 --interval-us 50000 --label c "$target" >/dev/null 2>&1 &
    c=$!
    OK_LABELS=()
    FAILED_EXITS=0
    if wait "$a"; then OK_LABELS+=(a); else FAILED_EXITS=$((FAILED_EXITS + 1)); fi
    if wait "$c"; then OK_LABELS+=(c); else FAILED_EXITS=$((FAILED_EXITS + 1)); fi
}

fresh_crowd() {
    local db=$1 i
    local -a ps=()
    for i in $(seq 0 9); do
        STACKMETER_DB=$db "$STACKMETER" ping -c 20 --label "p$i" "$target" >/dev/null 2>&1 &
        ps+=("$!")
    done
    OK_LABELS=()
    FAILED_EXITS=0
    for i in $(seq 0 9); do
        if wait "${ps[$i]}"; then OK_LABELS+=("p$i"); else FAILED_EXITS=$((FAILED_EXITS + 1)); fi
    done
}

for s in "${scenarios[@]}"; do
    case $s in
        reader-close) run=reader_close ;;
        fresh-crowd) run=fresh_crowd ;;
        *) echo "bench/store-stress.sh: unknown scenario '$s' (reader-close, fresh-crowd)" >&2; exit 2 ;;
    esac
    bad=0 lost=0 exits=0
    for t in $(seq "$TRIALS"); do
        db=$work/$s-$t/results.db
        mkdir -p "$(dirname "$db")"
        $run "$db"
        exits=$((exits + FAILED_EXITS))
        if ! judge "$db" "${OK_LABELS[@]}"; then
            bad=$((bad + 1))
            lost=$((lost + LOST_RUNS))
            echo "# $s trial $t: $LOST_RUNS run(s) of processes that exited 0 missing" >&2
        fi
        rm -rf "$(dirname "$db")"
    done
    printf '| %s | %s | %d | %d | %d | %d |\n' "${NAME:-$($STACKMETER --version)}" "$s" "$TRIALS" "$bad" "$lost" "$exits"
done
