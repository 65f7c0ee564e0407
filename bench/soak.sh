#!/usr/bin/env bash
# bench/soak.sh - a soak of both responders (docs/reliability.md): for
# SECONDS (default 600) `stackmeter serve` and the C responder each serve
# mixed valid clients in loops (rr, ping, stream, load), while a junk sender
# beside them throws random bytes at their TCP and UDP ports (random
# connections, random headers, idle connections, resets, random datagrams).
# Before and after, with no client connected, it samples each responder's
# resident memory, open descriptors and threads from /proc.
#
# Passes (exit 0) when no valid client failed, and at the end descriptors
# and threads equal the start and resident memory grew by at most RSS_TOL_KB
# (allocator caches warm up during the warm-up round, before the start
# sample). Prints a summary on stdout; client failures are listed.
#
# Environment (default): STACKMETER (target/release/stackmeter),
# C_RESPONDER (c-responder/stackmeter-responder), PORT (31700: serve on
# PORT, the C responder on PORT+1), RSS_TOL_KB (4096). Build first:
#   cargo build --release -p stackmeter && make -C c-responder
# Usage: bench/soak.sh [SECONDS]
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_TOTAL=${1:-600}
STACKMETER=${STACKMETER:-$REPO_ROOT/target/release/stackmeter}
C_RESPONDER=${C_RESPONDER:-$REPO_ROOT/c-responder/stackmeter-responder}
PORT=${PORT:-31700}
RSS_TOL_KB=${RSS_TOL_KB:-4096}
[[ $SECONDS_TOTAL =~ ^[0-9]+$ && $SECONDS_TOTAL -gt 0 ]] || { echo "bench/soak.sh: SECONDS must be a positive number, got '$SECONDS_TOTAL'" >&2; exit 2; }
for b in "$STACKMETER" "$C_RESPONDER"; do
    [[ -x $b ]] || { echo "bench/soak.sh: build first (cargo build --release -p stackmeter && make -C c-responder): $b" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
    touch "$work/stop"
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
log() { echo "bench/soak.sh: $*" >&2; }

start() { # NAME PORT CMD...
    local name=$1 port=$2
    shift 2
    "$@" 2>"$work/$name.log" &
    pids+=("$!")
    eval "${name}_pid=$!"
    for _ in $(seq 100); do grep -q "listening on tcp" "$work/$name.log" 2>/dev/null && return 0; sleep 0.05; done
    log "$name did not start: $(cat "$work/$name.log")"
    exit 1
}
ulimit -n "$(ulimit -Hn)"
start serve "$PORT" "$STACKMETER" serve --listen "127.0.0.1:$PORT"
start cresp "$((PORT + 1))" "$C_RESPONDER" --listen "127.0.0.1:$((PORT + 1))"
targets=("serve=127.0.0.1:$PORT" "c=127.0.0.1:$((PORT + 1))")

# One client of KIND against TARGET; a non-zero exit is an error.
client() { # KIND ADDR
    case $1 in
        rr) "$STACKMETER" rr "$2" --sizes 1:1,1K:1K,64K:64,1:64K -n 300 --no-store ;;
        ping) "$STACKMETER" ping "$2" -c 200 --no-store ;;
        stream) "$STACKMETER" stream "$2" -t 1 --no-store ;;
        load) "$STACKMETER" load "$2" --clients 4 --no-store ;;
    esac
}
kinds=(rr ping stream load)

# Each kind against each responder in its own loop until the stop file.
loop() { # KIND NAME ADDR
    local n=0
    while [[ ! -e $work/stop ]]; do
        n=$((n + 1))
        if ! client "$1" "$3" >"$work/out.$1.$2" 2>&1; then
            echo "$1 $2 run $n: $(tail -n 1 "$work/out.$1.$2")" >>"$work/errors"
        fi
        echo x >>"$work/count.$1.$2"
    done
}

# Random bytes at both responders: connections with random or half-valid
# headers, idle ones (header timeout), resets, and random datagrams.
junk() {
    python3 - "$work/stop" "$PORT" "$((PORT + 1))" <<'PY'
import os, random, socket, struct, sys, time
stop, ports = sys.argv[1], [int(p) for p in sys.argv[2:]]
rnd = random.Random(15)
sent = 0
while not os.path.exists(stop):
    port = rnd.choice(ports)
    kind = rnd.randrange(6)
    try:
        if kind == 5:
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for _ in range(20):
                n = rnd.randrange(0, 1500)
                d = bytes(rnd.getrandbits(8) for _ in range(n))
                if rnd.random() < 0.5 and n >= 6:
                    d = b"SMTU" + bytes([rnd.choice([1, 2]), rnd.choice([1, 2, 3, 4])]) + d[6:]
                u.sendto(d, ("127.0.0.1", port))
            u.close()
        else:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.settimeout(0.5)
            if kind == 0:  # random bytes
                s.sendall(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 4096))))
            elif kind == 1:  # a header with random fields, then random bytes
                h = b"SMTR" + bytes([rnd.choice([1, 1, 2]), rnd.choice([1, 2, 3, 4, 5, 16, 99])])
                h += struct.pack(">H", rnd.choice([16, 24, 7, 300])) + os.urandom(8 + rnd.randrange(0, 64))
                s.sendall(h)
            elif kind == 2:  # idle: the header never comes
                time.sleep(rnd.uniform(0, 1.5))
            elif kind == 3:  # reset mid-header
                s.sendall(b"SMTR\x01")
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:  # a valid rr header, then stop reading with requests queued
                s.sendall(b"SMTR\x01\x01\x00\x10" + struct.pack(">II", 1, 65536) + b"x" * 5000)
            try:
                s.recv(65536)
            except OSError:
                pass
            s.close()
        sent += 1
    except OSError:
        pass
    time.sleep(0.005)
print(sent)
PY
}

sample() { # PID -> "rss_kb fds threads"
    local rss threads fds
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status")
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$1/status")
    fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l)
    echo "$rss $fds $threads"
}

# No session left: descriptors and threads back at their values before any
# client (the junk's idle connections end at the 5 s header timeout); gives
# up after 30 s (the sample then shows what stayed).
quiet() { # PID "RSS FDS THREADS"
    local f t
    read -r _ f t <<<"$2"
    for _ in $(seq 300); do
        read -r _ fn tn <<<"$(sample "$1")"
        [[ $fn -le $f && $tn -le $t ]] && return 0
        sleep 0.1
    done
}

log "warm-up: one client of each kind against each responder"
idle_serve=$(sample "$serve_pid")
idle_c=$(sample "$cresp_pid")
for t in "${targets[@]}"; do
    for k in "${kinds[@]}"; do
        client "$k" "${t#*=}" >/dev/null 2>"$work/warm.err" || { log "warm-up $k ${t%%=*} failed: $(tail -n 1 "$work/warm.err")"; exit 1; }
    done
done
quiet "$serve_pid" "$idle_serve"
quiet "$cresp_pid" "$idle_c"
start_serve=$(sample "$serve_pid")
start_c=$(sample "$cresp_pid")

log "soak: ${SECONDS_TOTAL}s of mixed clients and junk"
loops=()
for t in "${targets[@]}"; do
    for k in "${kinds[@]}"; do
        loop "$k" "${t%%=*}" "${t#*=}" &
        loops+=("$!")
    done
done
junk >"$work/junk.count" &
loops+=("$!")
sleep "$SECONDS_TOTAL"
touch "$work/stop"
wait "${loops[@]}"
quiet "$serve_pid" "$idle_serve"
quiet "$cresp_pid" "$idle_c"
end_serve=$(sample "$serve_pid")
end_c=$(sample "$cresp_pid")

errors=0
[[ -f $work/errors ]] && errors=$(wc -l <"$work/errors")
status=0
echo "soak: ${SECONDS_TOTAL}s, serve (pid $serve_pid) and the C responder (pid $cresp_pid) on 127.0.0.1"
for t in "${targets[@]}"; do
    line="  clients against ${t%%=*}:"
    for k in "${kinds[@]}"; do
        line+=" $k $(wc -l <"$work/count.$k.${t%%=*}" 2>/dev/null || echo 0)"
    done
    echo "$line"
done
echo "  junk: $(cat "$work/junk.count") connections and datagram bursts"
echo "  valid-client errors: $errors"
[[ -f $work/errors ]] && sed 's/^/    /' "$work/errors" | head -n 20
for r in serve c; do
    if [[ $r == serve ]]; then read -r s0 f0 t0 <<<"$start_serve"; read -r s1 f1 t1 <<<"$end_serve"; pid=$serve_pid
    else read -r s0 f0 t0 <<<"$start_c"; read -r s1 f1 t1 <<<"$end_c"; pid=$cresp_pid; fi
    verdict=ok
    if [[ $f1 -ne $f0 || $t1 -ne $t0 || $s1 -gt $((s0 + RSS_TOL_KB)) ]]; then verdict=GREW; status=1; fi
    kill -0 "$pid" 2>/dev/null || { verdict=DIED; status=1; }
    printf '  %-6s rss %s -> %s KiB, fds %s -> %s, threads %s -> %s: %s\n' "$r" "$s0" "$s1" "$f0" "$f1" "$t0" "$t1" "$verdict"
done
[[ $errors -ne 0 ]] && status=1
echo "soak: $([[ $status -eq 0 ]] && echo PASS || echo FAIL)"
exit $status
