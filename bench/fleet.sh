#!/usr/bin/env bash
# bench/fleet.sh - what a fleet of agents costs, measured on one machine
# (not a test): N namespace nodes (default 32) on a bridge, each running
# `stackmeter agent` probing every other one every second (a full mesh:
# N x (N-1) pairs), then:
#   - CPU time and resident memory of each agent over WINDOW seconds, per
#     agent and per pair;
#   - the size and time of one scrape of /metrics;
#   - PostgreSQL stores per second with WRITERS processes writing at once
#     (each storing a one-datagram ping result in a loop, the whole path:
#     process start, measure, store).
# docs/fleet.md turns these figures into what 1,000 and 10,000 nodes cost.
#
# Needs root, iproute2, PostgreSQL 15 (Debian's postgresql) and curl.
# Usage: sudo bash bench/fleet.sh > bench/results/DATE-fleet.md
#   N=32 WINDOW=60 WRITERS=32 WRITE_SECONDS=20 STACKMETER=target/release/stackmeter
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-32}
WINDOW=${WINDOW:-60}
WRITERS=${WRITERS:-32}
WRITE_SECONDS=${WRITE_SECONDS:-20}
SM=${STACKMETER:-target/release/stackmeter}
[[ $(id -u) -eq 0 ]] || { echo "bench/fleet.sh needs root (namespaces)" >&2; exit 1; }
[[ -x $SM ]] || { echo "build first: cargo build --release ($SM)" >&2; exit 1; }
SM=$(realpath "$SM")
PGBIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/stackmeter-fleet-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()

note() { printf '# %s\n' "$*" >&2; }

cleanup() {
    local pid i
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -d $WORK/pg ]] && su postgres -c "$PGBIN/pg_ctl -D $WORK/pg -m immediate stop" >/dev/null 2>&1 || true
    for ((i = 1; i <= N; i++)); do
        ip netns del "smfb-n$i" 2>/dev/null || true
        ip link del "smfb-a$i" 2>/dev/null || true
    done
    ip link del smfb0 2>/dev/null || true
    rm -rf -- "$WORK"
}
trap cleanup EXIT INT TERM

addr() { echo "10.78.$(($1 / 250)).$(($1 % 250 + 1))"; }

note "$N nodes on bridge smfb0"
ip link add smfb0 type bridge
ip addr add 10.78.255.254/16 dev smfb0
ip link set smfb0 up
for ((i = 1; i <= N; i++)); do
    ip netns add "smfb-n$i"
    ip link add "smfb-a$i" type veth peer name "smfb-b$i"
    ip link set "smfb-a$i" master smfb0 up
    ip link set "smfb-b$i" netns "smfb-n$i"
    ip -n "smfb-n$i" addr add "$(addr "$i")/16" dev "smfb-b$i"
    ip -n "smfb-n$i" link set "smfb-b$i" up
    ip -n "smfb-n$i" link set lo up
done
for ((i = 1; i <= N; i++)); do
    for ((j = 1; j <= N; j++)); do
        [[ $i -ne $j ]] && echo "n$j $(addr "$j"):24680"
    done >"$WORK/peers-$i"
done

note "agents probing every second"
for ((i = 1; i <= N; i++)); do
    ip netns exec "smfb-n$i" env HOME="$WORK" "$SM" agent --listen "$(addr "$i"):24680" \
        --metrics "$(addr "$i"):24681" --peers "$WORK/peers-$i" --name "n$i" --interval-ms 1000 \
        --no-store >"$WORK/agent-$i.log" 2>&1 &
    PIDS+=($!)
done
sleep 10
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -A C0
for ((i = 0; i < N; i++)); do C0[$i]=$(cpu "${PIDS[$i]}"); done
note "measuring for $WINDOW s"
sleep "$WINDOW"
tick=$(getconf CLK_TCK)
total_cpu=0 total_rss=0
for ((i = 0; i < N; i++)); do
    c=$(($(cpu "${PIDS[$i]}") - C0[$i]))
    total_cpu=$((total_cpu + c))
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/${PIDS[$i]}/status")
    total_rss=$((total_rss + rss))
done
pairs=$((N * (N - 1)))
scrape_start=$(date +%s%N)
curl -s "http://$(addr 1):24681/metrics" >"$WORK/scrape.txt"
scrape_ns=$(($(date +%s%N) - scrape_start))
scrape_bytes=$(wc -c <"$WORK/scrape.txt")
scrape_lines=$(wc -l <"$WORK/scrape.txt")
lost=$(awk '/^stackmeter_probes_lost_total/ { s += $NF } END { print s + 0 }' "$WORK/scrape.txt")
sent=$(awk '/^stackmeter_probes_sent_total/ { s += $NF } END { print s + 0 }' "$WORK/scrape.txt")
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

note "PostgreSQL with $WRITERS writers for $WRITE_SECONDS s"
mkdir -p "$WORK/pg"
chown postgres "$WORK/pg"
su postgres -c "$PGBIN/initdb -D $WORK/pg -A trust -U postgres" >/dev/null
su postgres -c "$PGBIN/pg_ctl -D $WORK/pg -o '-k $WORK/pg -c listen_addresses= -c max_connections=200' -l $WORK/pg/log -w start" >/dev/null
su postgres -c "$PGBIN/psql -h $WORK/pg -c 'CREATE DATABASE bench'" >/dev/null
DSN="postgres://postgres@$(printf '%s' "$WORK/pg" | sed 's|/|%2F|g')/bench"
"$SM" runs --db "$DSN" >/dev/null
writer() {
    local end=$(($(date +%s) + WRITE_SECONDS))
    while (($(date +%s) < end)); do
        HOME=$WORK "$SM" ping -c 1 --warmup 0 --db "$DSN" >/dev/null 2>&1 || true
    done
}
for ((w = 0; w < WRITERS; w++)); do writer & PIDS+=($!); done
wait "${PIDS[@]}"
PIDS=()
stored=$("$SM" runs --db "$DSN" --json | grep -o '"id":' | wc -l)

awk -v n="$N" -v pairs="$pairs" -v window="$WINDOW" -v tick="$tick" -v cpu="$total_cpu" \
    -v rss="$total_rss" -v sb="$scrape_bytes" -v sl="$scrape_lines" -v sns="$scrape_ns" \
    -v sent="$sent" -v lost="$lost" -v writers="$WRITERS" -v ws="$WRITE_SECONDS" -v stored="$stored" \
    -v cores="$(nproc)" 'BEGIN {
    s = cpu / tick
    printf "## Fleet of %d agents, full mesh (%d pairs), probing every second; %d cores\n\n", n, pairs, cores
    printf "| figure | value |\n|---|---|\n"
    printf "| CPU, all agents | %.2f s over %d s (%.1f%% of one core) |\n", s, window, 100 * s / window
    printf "| CPU per agent | %.2f ms per second |\n", 1000 * s / window / n
    printf "| CPU per pair | %.1f us per second (a ping and an rr round trip each way: both ends) |\n", 1e6 * s / window / pairs
    printf "| resident memory per agent | %.1f MiB |\n", rss / n / 1024
    printf "| resident memory per peer of an agent | %.1f KiB |\n", rss / pairs
    printf "| one scrape (agent n1, %d peers) | %d bytes, %d lines, %.1f ms |\n", n - 1, sb, sl, sns / 1e6
    printf "| scrape per pair | %.0f bytes |\n", sb / (n - 1)
    printf "| probes lost, as agent n1 counted them | %d of %d |\n", lost, sent
    printf "| PostgreSQL, %d writers at once | %d results stored in %d s: %.0f per second |\n", writers, stored, ws, stored / ws
}'
