#!/usr/bin/env bash
# Fuzzing campaigns: every cargo-fuzz target of fuzz/ and the C engine's
# libFuzzer target, one after another, each to RUNS executions (default 10
# million) or MAX_SECONDS (default: no limit), new inputs kept in a scratch
# corpus (the repository's fuzz/corpus/ stays small). Prints one line per
# target: executions, seconds, crashes. Needs nightly Rust, cargo-fuzz and
# clang. Usage: fuzz/campaign.sh [RUNS] [MAX_SECONDS] [TARGET...]
# Set LOCK=/path/to/lock to run each campaign under flock (shared cores).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000000}
max=${2:-0}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(session_header status udp control objects udp_stream plan document session c_engine)
scratch=${SCRATCH:-$(mktemp -d)}
lock() { if [ -n "${LOCK:-}" ]; then flock "$LOCK" "$@"; else "$@"; fi; }
summary() { # log target seconds
    local n crashes
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -n 1)
    crashes=$(grep -c -E "^==[0-9]+== ERROR|panicked at|deadly signal" "$1")
    printf '%-15s %12s executions %6ss  crashes: %s\n' "$2" "${n:-?}" "$3" "$crashes"
}
status=0
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    log="$scratch/$t.log"
    start=$(date +%s)
    if [ "$t" = c_engine ]; then
        lock make -s -C c-responder smr-fuzz >/dev/null
        lock ./c-responder/smr-fuzz -runs="$runs" -max_total_time="$max" -print_final_stats=1 \
            -artifact_prefix="$scratch/$t-" "$scratch/$t" c-responder/fuzz/corpus >"$log" 2>&1
    else
        # -s none: the targets are safe Rust (overflow checks and debug
        # assertions stay on); without ASan they run 5-10 times faster.
        lock cargo +nightly fuzz run -s none "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
            -runs="$runs" -max_total_time="$max" -print_final_stats=1 -max_len=8192 \
            -artifact_prefix="$scratch/$t-" >"$log" 2>&1
    fi
    rc=$?
    summary "$log" "$t" $(( $(date +%s) - start ))
    [ $rc -ne 0 ] && status=1 && echo "  $t failed (exit $rc): see $log and $scratch/$t-crash-*"
done
echo "logs and new inputs: $scratch"
exit $status
