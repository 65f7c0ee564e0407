#!/usr/bin/env bash
# bench/mcu-stacks.sh - one emulated board, two stacks, the same responder
# logic: the C firmware (the C engine on lwIP, c-responder/mcu) against
# the Rust firmware (the Rust protocol core on smoltcp,
# firmware/mcu-smoltcp), as a Markdown report on stdout.
#
# Why this exists: embedded users choose between lwIP and smoltcp, and no
# tool measures the two on one board with the same responder on each. Both
# boot in QEMU's lm3s6965evb on TAP devices of their own (`stackmeter lab
# up mcu` and `lab up mcu-smoltcp`, one after the other in one lab); the
# built-in `mcu` plan (sizes that fit 64 KiB of SRAM) runs until each row
# is decided or BUDGET is spent, blocks of the two in random order.
#
# QEMU emulates the CPU and the MAC, so what a row measures is the stack's
# and the responder's work as QEMU executes it, plus QEMU's own path (TAP
# reads and writes, the MAC's FIFO model); the floor of that path is the
# same for both, so a decided row says which firmware does its work in
# fewer emulated steps, not how fast real silicon would be (docs/porting.md,
# "What emulation tells, and what it does not").
#
# Both QEMUs are pinned to SERVER_CPU, the client to CLIENT_CPU.
# A report, not a test: it exits non-zero only when it cannot run.
#
# Usage: sudo bash bench/mcu-stacks.sh > bench/results/DAY-mcu-stacks.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   BUDGET       budget of the run until decided (3m)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
#   KEEP_LOGS    1: keep the work directory (0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
BUDGET=${BUDGET:-3m}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
KEEP_LOGS=${KEEP_LOGS:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP devices"

lab_work mcu-stacks

note "building both firmwares"
make -s -C "$REPO_ROOT/c-responder" mcu mcu-size >"$WORK/size-c" 2>&1 || die "make mcu: $(tail -3 "$WORK/size-c")"
make -s -C "$REPO_ROOT/c-responder" mcu-smoltcp-size >"$WORK/size-rust" 2>&1 ||
    die "make mcu-smoltcp: $(tail -3 "$WORK/size-rust")"
"$STACKMETER" lab up all --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" || die "lab up all: $(cat "$WORK/up.err")"
addr() { sed -n "s/^$1=//p" "$WORK/targets"; }
[[ -n $(addr mcu-smoltcp) ]] || die "mcu-smoltcp did not come up: $(cat "$WORK/up.err")"

note "stackmeter suite mcu --budget $BUDGET (mcu against mcu-smoltcp)"
taskset -c "$CLIENT_CPU" "$STACKMETER" suite mcu --budget "$BUDGET" \
    --target "mcu=$(addr mcu)" --target "mcu-smoltcp=$(addr mcu-smoltcp)" \
    --format md >"$WORK/decided.md" 2>"$WORK/decided.err" || note "suite exited $? (its output is still reported)"

cat <<EOF
# One board, two stacks: lwIP (C engine) against smoltcp (Rust core)

$(machine_line); both QEMUs on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; \`bash bench/mcu-stacks.sh\` (BUDGET=$BUDGET).

Boot (\`stackmeter lab up all\`, stderr):

\`\`\`
$(grep -E '^mcu' "$WORK/up.err")
\`\`\`

## Footprint

The C firmware (\`make -C c-responder mcu-size\`):

\`\`\`
$(cat "$WORK/size-c")
\`\`\`

The Rust firmware (\`make -C c-responder mcu-smoltcp-size\`):

\`\`\`
$(cat "$WORK/size-rust")
\`\`\`

## The \`mcu\` plan, until decided (budget $BUDGET)

$(cat "$WORK/decided.md")
EOF
