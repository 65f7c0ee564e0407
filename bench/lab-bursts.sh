#!/usr/bin/env bash
# bench/lab-bursts.sh - how large a burst of back-to-back UDP datagrams
# each lab stack answers whole, as a Markdown report on stdout.
#
# Why this exists: a small stack receives into a small pool (lwIP's
# pbufs, smoltcp's socket buffer, a MAC's ring), and a one-at-a-time
# ping never fills it. `stackmeter udp-burst` sends bursts of BURSTS
# datagrams, ROUNDS rounds each, against every stack `lab up all` starts
# (the two firmwares in QEMU included), one after another.
#
# Responders are pinned to SERVER_CPU, the client to CLIENT_CPU. A report,
# not a test: it exits non-zero only when it cannot run (a stack that
# fails is a row that says so).
#
# Usage: bash bench/lab-bursts.sh > bench/results/DAY-lab-bursts.md (root)
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   BURSTS       burst sizes (1,2,4,8,16,32,64)
#   ROUNDS       rounds per burst size (20)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
BURSTS=${BURSTS:-1,2,4,8,16,32,64}
ROUNDS=${ROUNDS:-20}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP and veth devices, AF_XDP"
lab_work lab-bursts

note "building the lab's programs and both firmwares"
make -s -C "$REPO_ROOT/c-responder" all lwip xdp mcu mcu-smoltcp >&2
note "lab up all"
"$STACKMETER" lab up all --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" || die "lab up all: $(cat "$WORK/up.err")"
mapfile -t TARGETS <"$WORK/targets"

cat <<EOF
# How large a UDP burst each lab stack answers whole

$(machine_line); responders on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; \`bash bench/lab-bursts.sh\` (BURSTS=$BURSTS, ROUNDS=$ROUNDS).

\`stackmeter udp-burst ADDR --bursts $BURSTS --rounds $ROUNDS\`: 64-byte datagrams sent back to back, each round waiting up to 200 ms for its replies. Per burst size, the percent of datagrams answered; then the largest burst answered whole in every round (and every smaller one), and its median drain time (first send to last reply read, the client's own sends and reads included: compare it between stacks).

EOF
head="| target |"
rule="|---|"
for b in ${BURSTS//,/ }; do head="$head $b |"; rule="$rule---:|"; done
echo "$head largest whole | its drain p50 (us) |"
echo "$rule---:|---:|"
for t in "${TARGETS[@]}"; do
    note "udp-burst ${t%%=*}"
    # A stack that answers nothing (exit 5) still has its document; any
    # other failure is its row's note, and the others are measured.
    rc=0
    taskset -c "$CLIENT_CPU" "$STACKMETER" udp-burst "${t#*=}" --bursts "$BURSTS" --rounds "$ROUNDS" --json --no-store \
        >"$WORK/out.json" 2>"$WORK/err" || rc=$?
    if [[ $rc != 0 && $rc != 5 ]]; then
        echo "| ${t%%=*} | failed (exit $rc): $(tail -1 "$WORK/err") |"
        continue
    fi
    python3 - "${t%%=*}" "$WORK/out.json" <<'PY'
import json, sys
label, doc = sys.argv[1], json.load(open(sys.argv[2]))
rows = sorted(doc["results"], key=lambda r: r["burst"])
cells = ["%.1f" % (100.0 * r["received"] / r["sent"]) for r in doc["results"]]
whole = None
for r in rows:
    if r["whole_rounds"] != r["rounds"]:
        break
    whole = r
drain = "%.1f" % whole["drain_us"]["p50"] if whole else "-"
print("| %s | %s | %s | %s |" % (label, " | ".join(cells), whole["burst"] if whole else "none", drain))
PY
done
