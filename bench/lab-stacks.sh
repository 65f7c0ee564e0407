#!/usr/bin/env bash
# bench/lab-stacks.sh - every stack of the lab side by side, with verdicts,
# as a Markdown report on stdout.
#
# Why this exists: the lab holds five targets (the kernel's stack with the
# C responder; lwIP's raw and sockets API on TAP devices; smoltcp with the
# Rust protocol core on a TAP device; lwIP's raw API on an AF_XDP socket,
# the kernel-bypass path). Each comparison here is one that people choose
# by: kernel against each user-space stack (the fixed design over all
# five, the `lab` plan, REPEAT repetitions each, interleaved), and two
# head-to-head runs until decided: lwIP against smoltcp on the same path
# (TAP), and lwIP on TAP against the same lwIP on AF_XDP (the path alone).
# The head-to-head runs leave udp-max out: its search takes about a
# minute a block, so a budget of minutes would give it a handful of pairs;
# its figures are in the fixed design.
#
# Every responder is pinned to SERVER_CPU, the client to CLIENT_CPU.
# A report, not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo bash bench/lab-stacks.sh > bench/results/DAY-lab-stacks.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   REPEAT       repetitions per target in the fixed design (5)
#   BUDGET       budget of each run until decided (3m)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
#   KEEP_LOGS    1: keep the work directory (0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
REPEAT=${REPEAT:-5}
BUDGET=${BUDGET:-3m}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
KEEP_LOGS=${KEEP_LOGS:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP and veth devices, AF_XDP"

lab_work lab-stacks

note "building the C responders"
make -s -C "$REPO_ROOT/c-responder" all lwip xdp >&2
"$STACKMETER" lab up --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" || die "lab up: $(cat "$WORK/up.err")"
grep -q '^lwip-xdp=' "$WORK/targets" || die "lwip-xdp did not come up: $(cat "$WORK/up.err")"
addr() { sed -n "s/^$1=//p" "$WORK/targets"; }
all=()
while IFS= read -r t; do all+=(--target "$t"); done <"$WORK/targets"

# The lab plan without its udp-max step, for the runs until decided.
awk '/^\[\[step\]\]/ { if (block != "" && block !~ /test = "udp-max"/) printf "%s", block; block = "" }
     { block = block $0 "\n" }
     END { if (block !~ /test = "udp-max"/) printf "%s", block }' \
    "$REPO_ROOT/crates/spec/plans/lab.toml" >"$WORK/lab-no-udp-max.toml"

suite() { # NAME ARGS...: a suite run, its Markdown kept
    local name=$1
    shift
    note "$name: stackmeter suite $*"
    taskset -c "$CLIENT_CPU" "$STACKMETER" suite "$@" --format md >"$WORK/$name.md" 2>"$WORK/$name.err" ||
        note "$name exited $? (its output is still reported)"
}
suite fixed lab --quick --repeat "$REPEAT" "${all[@]}"
suite smoltcp "$WORK/lab-no-udp-max.toml" --quick --budget "$BUDGET" \
    --target "lwip-raw=$(addr lwip-raw)" --target "smoltcp=$(addr smoltcp)"
suite xdp "$WORK/lab-no-udp-max.toml" --quick --budget "$BUDGET" \
    --target "lwip-raw=$(addr lwip-raw)" --target "lwip-xdp=$(addr lwip-xdp)"

cat <<EOF
# The lab's stacks side by side

$(machine_line); responders on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; \`bash bench/lab-stacks.sh\` (REPEAT=$REPEAT, BUDGET=$BUDGET).

Targets (\`stackmeter lab up --cpu $SERVER_CPU\`):

\`\`\`
$(cat "$WORK/targets")
\`\`\`

## Every stack against the kernel (fixed design, $REPEAT repetitions, the \`lab\` plan --quick)

$(cat "$WORK/fixed.md")

## lwIP against smoltcp on the same TAP path, until decided (budget $BUDGET)

$(cat "$WORK/smoltcp.md")

## lwIP on TAP against lwIP on AF_XDP, until decided (budget $BUDGET)

$(cat "$WORK/xdp.md")
EOF
