#!/usr/bin/env bash
# bench/path-floors.sh - how much of each lab stack's round trip is its
# path, as a Markdown report on stdout.
#
# Why this exists: a lab stack is a path (a TAP device; an AF_XDP socket
# on a veth pair; QEMU's emulated MAC behind a TAP device) with a stack
# and a responder on it. To say whether the stack or the path is the
# bottleneck, each path is measured alone: a floor that answers
# stackmeter's UDP echo with no stack at all (bench/floor/nic_echo.c on
# the TAP and AF_XDP paths, built on the lab's own drivers;
# firmware/mcu-smoltcp's `floor` binary on the board's), beside every lab
# stack on the same kind of path, with the same client: `stackmeter ping`
# (64-byte UDP echo), COUNT round trips each, every target and floor in
# turn, REPEAT rounds, all of them up at once.
# "stack + responder" is a target's p50 less its path's floor's p50.
#
# Every responder and floor is pinned to SERVER_CPU, the client to
# CLIENT_CPU. A report, not a test: it exits non-zero only when it cannot
# run.
#
# Usage: bash bench/path-floors.sh > bench/results/DAY-path-floors.md (root)
# Environment (default):
#   STACKMETER   stackmeter binary (target/release/stackmeter)
#   COUNT        round trips per measurement (2000)
#   REPEAT       rounds over every target and floor (5)
#   SERVER_CPU/CLIENT_CPU  pinning (1/0)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACKMETER=${STACKMETER:-target/release/stackmeter}
[[ $STACKMETER == /* ]] || STACKMETER=$REPO_ROOT/$STACKMETER
COUNT=${COUNT:-2000}
REPEAT=${REPEAT:-5}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
# shellcheck source=bench/lib.sh
source "$REPO_ROOT/bench/lib.sh"

need_lab "TAP and veth devices, AF_XDP"

PIDS=()
floors_down() { # the floors' processes and devices (lab_done takes the lab down)
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for d in smfl1 smfl2 smfl3; do ip link del "$d" 2>/dev/null || true; done
}
LAB_CLEANUP=floors_down
lab_work path-floors

note "building the lab's programs, both firmwares and the floors"
C=$REPO_ROOT/c-responder
make -s -C "$C" all lwip xdp mcu mcu-smoltcp >&2
FLOOR_ELF=$C/mcu/build/stackmeter-mcu-floor.elf
cc -std=c99 -O2 -I"$C/src" -I"$C/floor" -o "$WORK/nic_echo" "$REPO_ROOT/bench/floor/nic_echo.c" \
    "$C/floor/frame_echo.c" "$C/src/smr_nic_tap.c" || die "could not build bench/floor/nic_echo.c"
cc -std=c99 -O2 -DFL_XDP -I"$C/src" -I"$C/floor" -o "$WORK/nic_echo_xdp" "$REPO_ROOT/bench/floor/nic_echo.c" \
    "$C/floor/frame_echo.c" "$C/src/smr_nic_xdp.c" -lxdp -lbpf ||
    die "could not build bench/floor/nic_echo.c for AF_XDP"

# Every target: label=addr, and the path it is on.
declare -A PATH_OF=([kernel-c]=loopback [lwip-raw]=TAP [lwip-sock]=TAP [smoltcp]=TAP
    [lwip-xdp]=AF_XDP [mcu]=QEMU [mcu-smoltcp]=QEMU
    [floor-tap]=TAP [floor-xdp]=AF_XDP [floor-qemu]=QEMU)

p50() { # ADDR: the p50 round trip of COUNT pings, us
    taskset -c "$CLIENT_CPU" "$STACKMETER" ping "$1" -c "$COUNT" --json --no-store 2>"$WORK/ping.err" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["rtt_us"]["p50"])' ||
        die "ping $1: $(tail -1 "$WORK/ping.err")"
}

measure() { # FILE LABEL=ADDR...: REPEAT rounds over the targets, one line each
    local out=$1 r t
    shift
    for ((r = 1; r <= REPEAT; r++)); do
        for t in "$@"; do
            echo "${t%%=*} $(p50 "${t#*=}")" >>"$out"
        done
    done
}

note "the floors: TAP, AF_XDP, QEMU (subnets 198.18.21-23, beside the lab's)"
ip tuntap add dev smfl1 mode tap
ip addr add 198.18.21.1/24 dev smfl1
ip link set smfl1 mtu 1500 up
taskset -c "$SERVER_CPU" "$WORK/nic_echo" smfl1 198.18.21.2 "$SERVER_CPU" 2>>"$WORK/floors.log" &
PIDS+=($!)
ip link add smfl2 type veth peer name smfl2x
ip addr add 198.18.22.1/24 dev smfl2
ip link set smfl2 mtu 1500 up
ip link set smfl2x mtu 1500 up
"$WORK/nic_echo_xdp" smfl2x 198.18.22.2 "$SERVER_CPU" smfl2 2>>"$WORK/floors.log" &
PIDS+=($!)
ip tuntap add dev smfl3 mode tap
ip addr add 198.18.23.1/24 dev smfl3
ip link set smfl3 mtu 1500 up
ip neigh replace 198.18.23.2 lladdr 02:53:4d:00:00:07 dev smfl3 nud permanent
# The provisioning block (c-responder/mcu/smr_mcu.c's layout): address,
# netmask, gateway, port; no secret, no limits.
python3 - "$WORK/prov.bin" <<'EOF'
import struct, sys
b = b"SMRP" + bytes([1, 0]) + struct.pack("<H", 24680) + bytes([198, 18, 23, 2, 255, 255, 255, 0, 198, 18, 23, 1])
open(sys.argv[1], "wb").write(b + bytes(124 - len(b)))
EOF
taskset -c "$SERVER_CPU" qemu-system-arm -M lm3s6965evb -display none -monitor none \
    -serial "file:$WORK/floor.console" -kernel "$FLOOR_ELF" -device "loader,file=$WORK/prov.bin,addr=0x3fc00" \
    -nic tap,ifname=smfl3,script=no,downscript=no,mac=02:53:4d:00:00:07 2>>"$WORK/floors.log" &
PIDS+=($!)
for _ in $(seq 100); do
    grep -q "ready" "$WORK/floor.console" 2>/dev/null && break
    sleep 0.1
done
grep -q "ready" "$WORK/floor.console" || die "the board's floor did not start: $(cat "$WORK/floor.console" "$WORK/floors.log")"
sleep 0.5
FLOORS=(floor-tap=198.18.21.2:24680 floor-xdp=198.18.22.2:24680 floor-qemu=198.18.23.2:24680)

note "lab up all; every stack and floor measured, round after round"
"$STACKMETER" lab up all --cpu "$SERVER_CPU" >"$WORK/targets" 2>"$WORK/up.err" || die "lab up all: $(cat "$WORK/up.err")"
mapfile -t TARGETS <"$WORK/targets"
measure "$WORK/p50" "${TARGETS[@]}" "${FLOORS[@]}"

# The median over the rounds of each label's p50.
declare -A MED
while read -r label value; do MED[$label]=$value; done < <(
    sort -k1,1 -k2,2g "$WORK/p50" | awk '{ v[$1] = v[$1] " " $2; n[$1]++ }
        END { for (l in v) { split(substr(v[l], 2), a, " "); print l, a[int((n[l] + 1) / 2)] } }'
)
floor_of() { case ${PATH_OF[$1]} in TAP) echo floor-tap ;; AF_XDP) echo floor-xdp ;; QEMU) echo floor-qemu ;; *) echo "" ;; esac; }

cat <<EOF
# Each lab stack against the floor of its path

$(machine_line); responders and floors on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; \`bash bench/path-floors.sh\` (COUNT=$COUNT, REPEAT=$REPEAT).

\`stackmeter ping\` (64-byte UDP echo), the median over $REPEAT rounds of each target's p50 round trip. A floor answers the same echo on the same kind of path with no stack (bench/floor/nic_echo.c on TAP and AF_XDP, firmware/mcu-smoltcp's \`floor\` on QEMU); "stack + responder" is the target's p50 less its floor's.

| target | path | p50 (us) | path floor p50 (us) | stack + responder (us) | path's share |
|---|---|---:|---:|---:|---:|
EOF
for t in "${TARGETS[@]}" "${FLOORS[@]}"; do
    l=${t%%=*}
    f=$(floor_of "$l")
    if [[ -z $f || $l == floor-* ]]; then
        printf '| %s | %s | %s | | | |\n' "$l" "${PATH_OF[$l]:-?}" "${MED[$l]}"
    else
        awk -v l="$l" -v p="${PATH_OF[$l]}" -v t="${MED[$l]}" -v f="${MED[$f]}" \
            'BEGIN { printf "| %s | %s | %.1f | %.1f | %.1f | %.0f%% |\n", l, p, t, f, t - f, 100 * f / t }'
    fi
done
echo
echo "Raw p50s, one line per measurement (label, us):"
echo
echo '```'
cat "$WORK/p50"
echo '```'
