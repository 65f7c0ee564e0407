#!/usr/bin/env bash
# bench/openloop.sh - the two many-connection goals (an open-loop schedule
# kept at 100,000 requests/s, and -P 1000 flows moving what -P 8 do), side
# by side, against both responders (Rust `stackmeter serve`, as started by
# default and with `--spin-us SPIN_US` as "rust-spin", and the C responder):
#  1. open-loop rr 64:64 at RATES requests/s over CONNS connections (each
#     count in CONNS its own rows): requested
#     vs achieved rate, send lag p50/p99, latency p50/p99 (from the intended
#     send time), late sends, the responder's CPU time per request (all its
#     threads, /proc/PID/task/*/schedstat: a figure the machine's noise
#     moves far less than the tails); the schedule is "kept" when achieved
#     >= 99% of requested and send lag p99 <= 50 us;
#  2. stream -P 8 against -P FLOWS (TCP up): total Mbit/s of each, and the
#     ratio of medians (goal: within 5%).
# Responders are pinned to SERVER_CPU, the client to CLIENT_CPU (--affinity).
# Runs interleave (Rust C Rust C ..., -P 8 -P 1000 -P 8 ...) REPEAT times;
# medians are of those repetitions. A report, not a test: it prints MISS
# and exits 0 when a goal is missed, non-zero only when it cannot run.
#
# Usage: flock -o /tmp/sm/build.lock bash bench/openloop.sh
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   C_RESPONDER  C responder (c-responder/stackmeter-responder; skipped when
#                absent: make -C c-responder)
#   C_BEFORE     another C responder binary run beside, as "c-before" (an
#                older build, for a before/after; unset: none)
#   RATES        open-loop rates, space-separated (100000); "none" skips part 1
#   FLOWS_PART   0 skips part 2 (1)
#   CONNS        open-loop connection counts, space-separated (4 16): at
#                4, each connection carries a request every 40 us at
#                100,000/s, twice a response's time, so requests often
#                queue behind each other on one connection; wrk2-class
#                tools run tens to hundreds of connections
#   ARRIVAL      fixed or poisson (fixed)
#   OL_SECONDS   open-loop schedule length (5)
#   FLOWS        the many-flow stream's -P (1000)
#   ST_SECONDS   stream measured seconds (5, plus 1 omitted)
#   REPEAT       repetitions (3)
#   SERVER_CPU/CLIENT_CPU  (0/1)
#   SPIN_US      rust-spin's --spin-us (50); 0 leaves rust-spin out
#   PORT         Rust responder's port; the C responder takes PORT+1,
#                rust-spin PORT+2 and C_BEFORE PORT+3 (31720)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
C_RESPONDER=${C_RESPONDER:-c-responder/stackmeter-responder}
[[ $C_RESPONDER == /* ]] || C_RESPONDER=$REPO_ROOT/$C_RESPONDER
C_BEFORE=${C_BEFORE:-}
RATES=${RATES:-100000}
CONNS=${CONNS:-4 16}
ARRIVAL=${ARRIVAL:-fixed}
OL_SECONDS=${OL_SECONDS:-5}
FLOWS=${FLOWS:-1000}
ST_SECONDS=${ST_SECONDS:-5}
REPEAT=${REPEAT:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-31720}
SPIN_US=${SPIN_US:-50}
[[ -x $STACKMETER ]] || { echo "bench/openloop.sh: build first (cargo build --release): $STACKMETER" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap pids_cleanup EXIT
log() { echo "bench/openloop.sh: $*" >&2; }
ulimit -n "$(ulimit -Hn)"

declare -A pid_of
# start NAME PORT CMD...: a responder, waited for until it listens (lib.sh).
start() { start_named "$@"; }

# cpu_ns PID: CPU time of every thread of PID so far, in ns (schedstat).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'; }

sides=()
start rust "$PORT" "$STACKMETER" serve --listen "127.0.0.1:$PORT" --affinity "$SERVER_CPU" --quiet \
    --max-sessions $((FLOWS + 24))
sides+=("rust=127.0.0.1:$PORT")
if [[ $SPIN_US != 0 ]]; then
    start rust-spin $((PORT + 2)) "$STACKMETER" serve --listen "127.0.0.1:$((PORT + 2))" --affinity "$SERVER_CPU" \
        --quiet --max-sessions $((FLOWS + 24)) --spin-us "$SPIN_US"
    sides+=("rust-spin=127.0.0.1:$((PORT + 2))")
fi
c_sides "$((PORT + 1))" "$((PORT + 3))"

echo "# stackmeter open-loop and many-flow benchmark"
echo
machine_line
echo "responders on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; $REPEAT interleaved repetitions, medians; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if [[ $RATES != none ]]; then
echo "## 1. Open-loop rr 64:64, $CONNS connections, $ARRIVAL arrivals, $OL_SECONDS s"
echo
echo '```'
echo "stackmeter rr ADDR --sizes 64:64 --rate R --connections C --arrival $ARRIVAL --time $OL_SECONDS --affinity $CLIENT_CPU --json"
echo '```'
echo
for rep in $(seq "$REPEAT"); do
    for rate in $RATES; do
        for conns in $CONNS; do
            for side in "${sides[@]}"; do
                name=${side%%=*} addr=${side#*=}
                log "rr --rate $rate --connections $conns against $name ($rep/$REPEAT)"
                cpu0=$(cpu_ns "${pid_of[$name]}")
                "$STACKMETER" rr "$addr" --sizes 64:64 --rate "$rate" --connections "$conns" --arrival "$ARRIVAL" \
                    --time "$OL_SECONDS" --affinity "$CLIENT_CPU" --json --no-store \
                    >"$work/ol-$name-$rate-$conns-$rep.json" 2>"$work/ol-$name-$rate-$conns-$rep.err" || true
                echo $(($(cpu_ns "${pid_of[$name]}") - cpu0)) >"$work/ol-$name-$rate-$conns-$rep.cpu"
            done
        done
    done
done
python3 - "$work" "$REPEAT" "$RATES" "$CONNS" "${sides[@]%%=*}" <<'EOF'
import json, statistics, sys
work, repeat, rates, conns, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5:]
print("| responder | connections | requested/s | achieved/s (median) | achieved % | send lag p50 us | send lag p99 us | latency p50 us | latency p99 us | late sends | responder CPU us/request | runs | runs kept | schedule kept (medians) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for rate, c, n in ((r, c, n) for r in rates for c in conns for n in names):
    rows = []
    for rep in range(1, repeat + 1):
        try:
            d = json.load(open(f"{work}/ol-{n}-{rate}-{c}-{rep}.json"))
            row = d["results"][0]
            try:
                row["cpu_us"] = int(open(f"{work}/ol-{n}-{rate}-{c}-{rep}.cpu").read()) / 1e3 / row["samples"]
            except Exception:
                row["cpu_us"] = float("nan")
            rows.append(row)
        except Exception:
            pass
    if not rows:
        print(f"| {n} | {c} | {rate} | failed | | | | | | | | 0 | 0 | MISS |")
        continue
    med = lambda f: statistics.median(f(r) for r in rows)
    ach = med(lambda r: r["achieved_rate"])
    pct = 100 * ach / float(rate)
    lag99 = med(lambda r: r["send_lag_us"]["p99"])
    kept = "yes" if pct >= 99 and lag99 <= 50 else "MISS"
    each = sum(1 for r in rows if r["achieved_rate"] >= 0.99 * float(rate) and r["send_lag_us"]["p99"] <= 50)
    print(f"| {n} | {c} | {float(rate):.0f} | {ach:.0f} | {pct:.2f} | {med(lambda r: r['send_lag_us']['p50']):.1f} | "
          f"{lag99:.1f} | {med(lambda r: r['rtt_us']['p50']):.1f} | {med(lambda r: r['rtt_us']['p99']):.1f} | "
          f"{med(lambda r: r['late_sends']):.0f} | {med(lambda r: r['cpu_us']):.2f} | {len(rows)} | {each} | {kept} |")
print()
print("Every run (achieved/s, send lag p99 us, latency p99 us):")
print()
for rate, c, n in ((r, c, n) for r in rates for c in conns for n in names):
    runs = []
    for rep in range(1, repeat + 1):
        try:
            r = json.load(open(f"{work}/ol-{n}-{rate}-{c}-{rep}.json"))["results"][0]
            runs.append(f"{r['achieved_rate']:.0f}/{r['send_lag_us']['p99']:.1f}/{r['rtt_us']['p99']:.1f}")
        except Exception:
            runs.append("failed")
    print(f"- {n} {c} connections {rate}/s: " + ", ".join(runs))
EOF
echo
fi
[[ ${FLOWS_PART:-1} == 0 ]] && exit 0
echo "## 2. stream TCP up: -P 8 against -P $FLOWS, $ST_SECONDS s (+1 s omitted)"
echo
echo '```'
echo "stackmeter stream ADDR -P N -t $ST_SECONDS -O 1 --affinity $CLIENT_CPU --json"
echo '```'
echo
for rep in $(seq "$REPEAT"); do
    for side in "${sides[@]}"; do
        name=${side%%=*} addr=${side#*=}
        for p in 8 "$FLOWS"; do
            log "stream -P $p against $name ($rep/$REPEAT)"
            "$STACKMETER" stream "$addr" -P "$p" -t "$ST_SECONDS" -O 1 --affinity "$CLIENT_CPU" --json --no-store \
                >"$work/st-$name-$p-$rep.json" 2>"$work/st-$name-$p-$rep.err" || true
        done
    done
done
python3 - "$work" "$REPEAT" "$FLOWS" "${sides[@]%%=*}" <<'EOF'
import json, statistics, sys
work, repeat, flows, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def runs(n, p):
    out = []
    for rep in range(1, repeat + 1):
        try:
            d = json.load(open(f"{work}/st-{n}-{p}-{rep}.json"))
            if d.get("error") or not d.get("summary"):
                out.append(None)
            else:
                out.append(d["summary"]["total_mbps"])
        except Exception:
            out.append(None)
    return out
print(f"| responder | -P 8 Mbit/s (median) | -P {flows} Mbit/s (median) | ratio | within 5% | every run -P 8 | every run -P {flows} |")
print("|---|---|---|---|---|---|---|")
for n in names:
    a, b = runs(n, 8), runs(n, flows)
    ga, gb = [x for x in a if x], [x for x in b if x]
    if not ga or not gb:
        print(f"| {n} | {'failed' if not ga else round(statistics.median(ga))} | {'failed' if not gb else round(statistics.median(gb))} | | MISS | {a} | {b} |")
        continue
    ma, mb = statistics.median(ga), statistics.median(gb)
    ok = "yes" if mb >= 0.95 * ma and len(gb) == repeat else "MISS"
    fmt = lambda xs: ", ".join("failed" if x is None else f"{x:.0f}" for x in xs)
    print(f"| {n} | {ma:.0f} | {mb:.0f} | {mb / ma:.3f} | {ok} | {fmt(a)} | {fmt(b)} |")
EOF
for f in "$work"/*.err; do
    if grep -qi "error" "$f"; then
        log "$(basename "$f"): $(grep -i -m1 error "$f")"
    fi
done
