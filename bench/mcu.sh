#!/usr/bin/env bash
# bench/mcu.sh: the C responder's microcontroller firmware (QEMU's
# lm3s6965evb, c-responder/mcu/) measured from this host, in a network
# namespace of its own that this script creates and removes (nothing in
# the machine's own namespace is touched). Root; after
# `make -C c-responder all lwip mcu` and `cargo build --release -p stackmeter`.
#
#   bash bench/mcu.sh compare   the built-in `mcu` plan (suite, interleaved
#                               repetitions) against the kernel stack
#                               (kernel-c), lwIP on Linux (lwip-raw on a TAP)
#                               and the firmware, from one client
#   bash bench/mcu.sh hostile   the firmware with a shared secret: rr and
#                               ping, then junk TCP and UDP, 1,000 connects,
#                               a flood past its connection table
#                               (bench/mcu_hostile.py) and wrong secrets,
#                               then rr and ping again
#   bash bench/mcu.sh soak [S]  the firmware under a mixed run for S seconds
#                               (default 600): rr, crr, ping, TCP up and down,
#                               junk, in turn; then the same checks
#
# Every check after a hostile part also reads the firmware's serial console:
# one boot line (no reset) and no panic. The responders are pinned to
# SERVER_CPU (default 1), the client to CLIENT_CPU (default 0). Every
# figure is QEMU's (docs/porting.md, "What emulation tells").
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-compare}
soak_s=${2:-600}
S=${STACKMETER:-$PWD/target/release/stackmeter}
C=$PWD/c-responder
FW=$C/mcu/build/stackmeter-mcu.elf
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
NS=smmcu-bench-$$
WORK=$(mktemp -d)
PIDS=()
note() { printf '# %s\n' "$*" >&2; }
cleanup() {
    local pid
    # The responders (started with `ip netns exec`, which executes them, so
    # each pid is the responder's own), and anything else left in the
    # namespace: it is this script's alone.
    for pid in "${PIDS[@]}" $(ip netns pids "$NS" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    ip netns del "$NS" 2>/dev/null || true
    if [ "${KEEP_LOGS:-0}" = 1 ]; then note "console, logs and outputs kept in $WORK"; else rm -rf -- "$WORK"; fi
}
trap cleanup EXIT INT TERM
for f in "$S" "$FW"; do [ -e "$f" ] || { note "missing $f (see the top of $0)"; exit 1; }; done
in_ns() { ip netns exec "$NS" "$@"; }
client() { in_ns taskset -c "$CLIENT_CPU" env HOME="$WORK" STACKMETER_DB="$WORK/results.db" "$S" "$@"; }
tap() { # NAME HOST-ADDRESS/24 [NEIGHBOUR MAC]
    in_ns ip tuntap add dev "$1" mode tap
    in_ns ip addr add "$2" dev "$1"
    in_ns ip link set "$1" up
    [ $# -lt 3 ] || in_ns ip neigh replace "$3" lladdr "$4" dev "$1" nud permanent
}
ip netns add "$NS"
in_ns ip link set lo up

# The firmware's provisioning block (c-responder/mcu/smr_mcu.c): address,
# port, 16 random bytes, the secret (hostile and soak), no limits.
secret=
if [ "$mode" != compare ]; then
    secret=$WORK/secret
    (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret")
    (umask 077 && echo wrong-secret-of-the-same-length-000000000 >"$WORK/wrong")
fi
python3 - "$WORK/prov.bin" "$secret" <<'PY'
import os, struct, sys
secret = open(sys.argv[2], "rb").read() if sys.argv[2] else b""
b = b"SMRP" + bytes([1, len(secret)]) + struct.pack("<H", 24680)
b += bytes([198, 18, 16, 2, 255, 255, 255, 0, 198, 18, 16, 1]) + os.urandom(16)
b += secret.ljust(64, b"\0") + bytes(24)
open(sys.argv[1], "wb").write(b)
PY
MAC=02:53:4d:00:00:03
tap smq0 198.18.16.1/24 198.18.16.2 "$MAC"
t0=$(date +%s%N)
ip netns exec "$NS" taskset -c "$SERVER_CPU" qemu-system-arm -M lm3s6965evb -display none -monitor none \
    -serial "file:$WORK/console" -kernel "$FW" -device "loader,file=$WORK/prov.bin,addr=0x3fc00" \
    -nic "tap,ifname=smq0,script=no,downscript=no,mac=$MAC" 2>"$WORK/qemu.log" &
PIDS+=($!)
for _ in $(seq 200); do grep -q ', ready ' "$WORK/console" 2>/dev/null && break; sleep 0.05; done
grep -q ', ready ' "$WORK/console" || { cat "$WORK/console" "$WORK/qemu.log" >&2; note "the firmware did not boot"; exit 1; }
note "firmware ready $((($(date +%s%N) - t0) / 1000000)) ms after QEMU started: $(grep ', ready ' "$WORK/console" | tr -d '\r')"
MCU=198.18.16.2:24680
sec=()
[ -z "$secret" ] || sec=(--secret-file "$secret")

healthy() { # what every check ends with: answers, one boot, no panic
    client rr "$MCU" "${sec[@]}" --sizes 1:1,64:64,1K:1 -n 200 --no-store | grep -E '^ +[0-9]'
    client ping "$MCU" "${sec[@]}" -c 200 --no-store | grep -E 'round trip|received|mismatch' || true
    local boots
    boots=$(grep -c ', booting' "$WORK/console")
    note "console: $boots boot line(s), $(grep -c 'panic' "$WORK/console" || true) panic(s), $(grep -c 'refused\|session ended' "$WORK/console" || true) event line(s)"
    [ "$boots" -eq 1 ] && ! grep -q panic "$WORK/console"
}

case $mode in
compare)
    tap sml0 198.18.17.1/24
    ip netns exec "$NS" "$C/lwip-raw" sml0 198.18.17.2 24680 "$SERVER_CPU" 2>"$WORK/lwip.log" &
    PIDS+=($!)
    ip netns exec "$NS" "$C/stackmeter-responder" --listen 127.0.0.1:24690 --affinity "$SERVER_CPU" --quiet \
        2>"$WORK/kernel.log" &
    PIDS+=($!)
    sleep 1
    client suite mcu --repeat "${REPEAT:-3}" --no-store \
        --target kernel-c=127.0.0.1:24690 --target lwip-raw=198.18.17.2:24680 --target mcu="$MCU"
    healthy
    ;;
hostile)
    note "before"
    healthy
    note "hostile clients"
    in_ns python3 bench/mcu_hostile.py 198.18.16.2 24680 8
    note "wrong secrets"
    if client rr "$MCU" --secret-file "$WORK/wrong" --sizes 1:1 -n 10 --no-store >"$WORK/wrong.out" 2>&1; then
        note "FAILED: rr with a wrong secret was served"; exit 1
    fi
    grep -m1 -i 'auth\|secret' "$WORK/wrong.out" >&2 || true
    if client ping "$MCU" --secret-file "$WORK/wrong" -c 20 --no-store >"$WORK/wrongp.out" 2>&1; then
        note "FAILED: ping with a wrong secret was answered"; exit 1
    fi
    grep -m1 -i 'received\|no reply\|lost\|answer' "$WORK/wrongp.out" >&2 || true
    note "after"
    healthy
    ;;
soak)
    end=$(($(date +%s) + soak_s))
    rounds=0 failures=0
    step() { # one part of a round; a failure is counted and logged, the soak goes on
        if ! "$@" >>"$WORK/soak.log" 2>&1; then
            failures=$((failures + 1))
            note "soak: round $rounds at $(date +%T) failed: $*"
            tail -n 2 "$WORK/soak.log" >&2
        fi
    }
    while [ "$(date +%s)" -lt "$end" ]; do
        step client rr "$MCU" "${sec[@]}" --sizes 1:1,1:1K,1K:1,1:8K -n 200 --no-store
        step client crr "$MCU" "${sec[@]}" -n 100 --no-store
        step client ping "$MCU" "${sec[@]}" -c 500 --no-store
        step client stream "$MCU" "${sec[@]}" --direction up -t 2 --no-store
        step client stream "$MCU" "${sec[@]}" --direction down -t 2 --no-store
        step in_ns python3 bench/mcu_hostile.py 198.18.16.2 24680 8
        rounds=$((rounds + 1))
    done
    note "soak: $rounds rounds in $soak_s s, $failures failed part(s)"
    [ "$failures" -eq 0 ] || { tail -n 20 "$WORK/console" >&2; exit 1; }
    healthy
    ;;
*)
    note "usage: $0 compare|hostile|soak [SECONDS]"
    exit 2
    ;;
esac
