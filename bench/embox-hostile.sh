#!/usr/bin/env bash
# bench/embox-hostile.sh - Embox under the lab's hostile clients, round
# after round, until it crashes or survives them all: the repro of the
# write-after-free in Embox's network buffers (c-responder/a9/embox/
# FINDINGS.md) and the proof of its fix. Brings Embox up in a lab of its
# own (`stackmeter lab up embox`), adds the test's second address on its
# TAP, runs bench/embox_hostile.py (the mix of crates/cli/tests/suite/
# lab.rs's `hostile`, its parts at once with --concurrent), and takes the
# lab down on every exit.
#
# Usage: bench/embox-hostile.sh [--rounds N] [--sequential] [--elf FILE]
#   --rounds N     rounds of the mix (20)
#   --sequential   the parts one after another, as the test runs them
#                  (the crash then takes more rounds)
#   --elf FILE     boot this Embox image instead of the one built in
#                  c-responder/a9/build (e.g. one built without the fix)
# Environment: STACKMETER (the stackmeter binary; `stackmeter` on PATH),
# STACKMETER_LAB_DIR (/run/sm-embox-hostile). Root (TAP devices).
# Exit: 0 every round survived, 1 Embox crashed or stopped answering,
# 2 a setup error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=20
mode=--concurrent
elf=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --sequential) mode=; shift ;;
    --elf) elf=${2:?--elf takes a file}; shift 2 ;;
    *) echo "embox-hostile: unknown argument $1 (see the usage at the top of $0)" >&2; exit 2 ;;
    esac
done
sm=${STACKMETER:-$(command -v stackmeter || true)}
[ -n "$sm" ] && [ -x "$sm" ] || {
    echo "embox-hostile: no stackmeter binary (set STACKMETER=path/to/stackmeter, or cargo build --release)" >&2
    exit 2
}
[ "$(id -u)" = 0 ] || { echo "embox-hostile: needs root (the lab makes a TAP device)" >&2; exit 2; }
export STACKMETER_LAB_DIR=${STACKMETER_LAB_DIR:-/run/sm-embox-hostile}

# The lab boots the image in BIN_DIR/a9/build; another image is given a
# folder of that shape.
bin_dir=$repo/c-responder
scratch=
if [ -n "$elf" ]; then
    [ -f "$elf" ] || { echo "embox-hostile: $elf does not exist" >&2; exit 2; }
    scratch=$(mktemp -d)
    mkdir -p "$scratch/a9/build"
    cp "$elf" "$scratch/a9/build/stackmeter-embox.elf"
    cp "$bin_dir/a9/build/stackmeter-embox.addr" "$scratch/a9/build/" 2>/dev/null ||
        echo "198.18.18.2 02:53:4d:00:00:07" >"$scratch/a9/build/stackmeter-embox.addr"
    bin_dir=$scratch
fi
[ -f "$bin_dir/a9/build/stackmeter-embox.elf" ] || {
    echo "embox-hostile: no Embox image; build it: STACKMETER_EMBOX_SRC=... make -C c-responder embox" >&2
    exit 2
}

cleanup() {
    "$sm" lab down >/dev/null 2>&1 || true
    [ -z "$scratch" ] || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A lab left behind by an earlier run that was killed.
"$sm" lab down >/dev/null 2>&1 || true
read -r board _ <"$bin_dir/a9/build/stackmeter-embox.addr"
net=${board%.*}
"$sm" lab up embox --bin-dir "$bin_dir" >/dev/null || {
    echo "embox-hostile: lab up embox failed (its message is above)" >&2
    exit 2
}
ip addr add "$net.3/24" dev smlab7 || exit 2
python3 "$here/embox_hostile.py" --console "$STACKMETER_LAB_DIR/embox.console" \
    --rounds "$rounds" $mode --stackmeter "$sm" \
    --host "$net.1" --second "$net.3" --board "$board"
