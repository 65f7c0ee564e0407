#!/usr/bin/env bash
# bench/rrul.sh - latency under load against both responders, side by side:
# `stackmeter rrul` (phases idle, down, up, idle) against the Rust responder
# (`stackmeter serve`) and the C responder, and optionally an older C
# responder (C_BEFORE) for a before/after. Per loaded phase and responder:
# the probes' RTT p50, the latency the phase induces over the first idle
# phase (RTT p50 and the one-way delays up and down), and the throughput.
# Goal, per round (C against serve in the same round): induced RTT p50 at
# most max(2 x serve's, 200 us) and throughput at least 0.9 x serve's, in
# the down and the up phase.
# Responders are pinned to SERVER_CPU, the client to CLIENT_CPU
# (--affinity). Rounds interleave the responders (in turn order: A B, B A,
# ...) REPEAT times; the tables give medians of the rounds and every
# round's figure. A report, not a test: it prints MISS and exits 0 when a
# goal is missed, non-zero only when it cannot run.
#
# Usage: bash bench/rrul.sh > report.md
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   C_RESPONDER  C responder (c-responder/stackmeter-responder; skipped when
#                absent: make -C c-responder)
#   C_BEFORE     another C responder binary to run beside, as "c-before"
#                (unset: none)
#   PHASE_TIME   seconds per phase (3)
#   REPEAT       rounds (5)
#   SERVER_CPU/CLIENT_CPU  (0/1)
#   PORT         serve's port; the C responder takes PORT+1, C_BEFORE PORT+2 (31760)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
C_RESPONDER=${C_RESPONDER:-c-responder/stackmeter-responder}
[[ $C_RESPONDER == /* ]] || C_RESPONDER=$REPO_ROOT/$C_RESPONDER
C_BEFORE=${C_BEFORE:-}
PHASE_TIME=${PHASE_TIME:-3}
REPEAT=${REPEAT:-5}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-31760}
PHASES=idle,down,up,idle
[[ -x $STACKMETER ]] || { echo "bench/rrul.sh: build first (cargo build --release): $STACKMETER" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap pids_cleanup EXIT
log() { echo "bench/rrul.sh: $*" >&2; }

# start NAME PORT CMD...: a responder, waited for until it listens (lib.sh).
start() { start_named "$@"; }

sides=()
start rust "$PORT" "$STACKMETER" serve --listen "127.0.0.1:$PORT" --affinity "$SERVER_CPU" --quiet
sides+=("rust=127.0.0.1:$PORT")
c_sides "$((PORT + 1))" "$((PORT + 2))"

echo "# stackmeter latency under load (rrul), both responders"
echo
machine_line
echo "responders on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; $REPEAT interleaved rounds, medians; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '```'
echo "stackmeter rrul ADDR --phases $PHASES --phase-time $PHASE_TIME --affinity $CLIENT_CPU --json"
echo '```'
echo
for rep in $(seq "$REPEAT"); do
    order=("${sides[@]}")
    if ((rep % 2 == 0)); then
        # Every other round in reverse order: a drift of the machine hits
        # each responder alike.
        order=()
        for ((k = ${#sides[@]} - 1; k >= 0; k--)); do order+=("${sides[k]}"); done
    fi
    for side in "${order[@]}"; do
        name=${side%%=*} addr=${side#*=}
        log "rrul against $name ($rep/$REPEAT)"
        "$STACKMETER" rrul "$addr" --phases "$PHASES" --phase-time "$PHASE_TIME" --affinity "$CLIENT_CPU" --json \
            --no-store >"$work/$name-$rep.json" 2>"$work/$name-$rep.err" || true
    done
done
python3 - "$work" "$REPEAT" "${sides[@]%%=*}" <<'EOF'
import json, statistics, sys
work, repeat, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
LOADED = [(1, "down", "down_mbps"), (2, "up", "up_mbps")]

def load(n, rep):
    try:
        d = json.load(open(f"{work}/{n}-{rep}.json"))
        return d if d.get("complete") and len(d.get("phases", [])) == 4 else None
    except Exception:
        return None

def fig(d, ix, key):
    p, ind = d["phases"][ix], d["induced"][ix]
    return {
        "rtt": p["rtt_us"]["p50"], "induced": ind["rtt_p50_us"], "up": ind["owd_up_p50_us"],
        "down": ind["owd_down_p50_us"], "mbps": p[key], "p99": ind["rtt_p99_us"],
    }

runs = {n: [load(n, r) for r in range(1, repeat + 1)] for n in names}
med = lambda xs: statistics.median(xs) if xs else float("nan")
print("| responder | phase | RTT p50 us | induced RTT p50 us | induced p99 us | induced up p50 us | induced down p50 us | Gbit/s | runs |")
print("|---|---|---|---|---|---|---|---|---|")
for n in names:
    for ix, ph, key in LOADED:
        f = [fig(d, ix, key) for d in runs[n] if d]
        if not f:
            print(f"| {n} | {ph} | failed | | | | | | 0 |")
            continue
        m = lambda k: med([x[k] for x in f])
        print(f"| {n} | {ph} | {m('rtt'):.0f} | {m('induced'):+.0f} | {m('p99'):+.0f} | {m('up'):+.0f} | {m('down'):+.0f} | "
              f"{m('mbps') / 1000:.2f} | {len(f)} |")
print()
print("Every round (induced RTT p50 us / Gbit/s):")
print()
for n in names:
    for ix, ph, key in LOADED:
        cells = []
        for d in runs[n]:
            if d:
                x = fig(d, ix, key)
                cells.append(f"{x['induced']:+.0f}/{x['mbps'] / 1000:.1f}")
            else:
                cells.append("failed")
        print(f"- {n} {ph}: " + ", ".join(cells))
print()
if "rust" in names:
    for n in (x for x in names if x != "rust"):
        print(f"Goal for {n} against serve in the same round: induced RTT p50 <= max(2 x serve's, 200 us), "
              "throughput >= 0.9 x serve's:")
        print()
        print("| phase | rounds met (latency) | rounds met (throughput) | median induced, C / limit us | median throughput ratio | verdict (medians) |")
        print("|---|---|---|---|---|---|")
        for ix, ph, key in LOADED:
            lat, thr, limits, mine, ratios = 0, 0, [], [], []
            for a, b in zip(runs["rust"], runs[n]):
                if not a or not b:
                    continue
                fa, fb = fig(a, ix, key), fig(b, ix, key)
                limit = max(2 * fa["induced"], 200.0)
                limits.append(limit)
                mine.append(fb["induced"])
                ratios.append(fb["mbps"] / fa["mbps"] if fa["mbps"] else float("nan"))
                lat += fb["induced"] <= limit
                thr += fb["mbps"] >= 0.9 * fa["mbps"]
            ok = "yes" if mine and med(mine) <= med(limits) and med(ratios) >= 0.9 else "MISS"
            print(f"| {ph} | {lat}/{len(mine)} | {thr}/{len(mine)} | {med(mine):+.0f} / {med(limits):.0f} | "
                  f"{med(ratios):.3f} | {ok} |")
        print()
EOF
for f in "$work"/*.err; do
    if [[ -s $f ]] && grep -qi "error" "$f"; then
        log "$(basename "$f"): $(grep -i -m1 error "$f")"
    fi
done
