#!/usr/bin/env bash
# c-responder/a9/embox/build.sh - the Embox image with the C responder in
# it, for QEMU's vexpress-a9 (`make -C c-responder embox` runs this).
#
# Why a script: Embox builds with its own make system from its own tree,
# which no package registry carries. The user names that tree (a tarball
# or a folder of Embox at the pinned commit) in STACKMETER_EMBOX_SRC; this
# script unpacks it into a build folder of ours, adds our files as an
# Embox "ext_project" (the template in template/, the module Mybuild.in
# with the responder's sources copied from c-responder/src, smr_embox.h,
# the shared driver stamps from c-responder/stamps and Embox's hooks in
# stamps/), applies our fixes to Embox (patches/*.patch,
# in name order; each says in its header what was wrong and why the fix is
# right), then our patch to Embox's LAN9118 driver (stamps/lan9118-stamps.patch:
# the receive and send times of the responder's UDP frames), and runs
# Embox's build. Nothing is written into the user's tree. The checks and
# the responder's files are the RTOS builds' shared ones
# (c-responder/rtos-build.sh).
#
# Usage: build.sh OUT_DIR
#   OUT_DIR/stackmeter-embox.elf   the image (QEMU -kernel)
#   OUT_DIR/stackmeter-embox.addr  the address and MAC it was built with
#   OUT_DIR/embox-size.txt         its sections, and the build's time
# Environment:
#   STACKMETER_EMBOX_SRC  Embox's source: a .tar.xz/.tar.gz or a folder
#   EMBOX_IP EMBOX_GW EMBOX_MAC  the board's address, its gateway and MAC
#                         (make gives the lab's, from c-responder/boards.mk)
#   JOBS                  make -j (the number of CPUs)
set -euo pipefail

# The commit this template and patch were written against.
EMBOX_COMMIT=da1cd94fb3a308a8416edf155c065102fce892c3
EMBOX_TARBALL_SHA256=843a60393aebf9e80dfbc49ca4b40c1b48cc864d336cc7a5bdc57cb03b6ecfdf

RTOS=embox
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=c-responder/rtos-build.sh
source "$here/../../rtos-build.sh"
out_dir "${1:?usage: build.sh OUT_DIR}"
need_vars EMBOX_IP EMBOX_GW EMBOX_MAC
JOBS=${JOBS:-$(nproc)}

how="get it with: git clone https://github.com/embox/embox && git -C embox checkout $EMBOX_COMMIT, then STACKMETER_EMBOX_SRC=\$PWD/embox make -C c-responder embox (docs/lab.md, \"Embox and Linux on one Cortex-A9\")"
need_source STACKMETER_EMBOX_SRC Embox "$how"
need_tools "gcc-arm-none-eabi cpio make patch" arm-none-eabi-gcc cpio make patch

# The tree, unpacked and patched once per source and set of patches (the
# source's path and time and the patches' sum in a stamp file).
tree=$out/embox
patches_sum=$(cat "$here"/patches/*.patch "$here/stamps/lan9118-stamps.patch" | sha256sum | cut -c1-16)
stamp="$src $(stat -c %Y "$src") $patches_sum"
if [ ! -f "$tree/.stackmeter-source" ] || [ "$(cat "$tree/.stackmeter-source")" != "$stamp" ]; then
    rm -rf "$tree"
    mkdir -p "$tree"
    if [ -d "$src" ]; then
        check_commit "$src" "$EMBOX_COMMIT"
        (cd "$src" && tar --exclude=./.git --exclude=./build -cf - .) | (cd "$tree" && tar xf -)
    else
        check_sum "$src" "$EMBOX_TARBALL_SHA256"
        tar -xf "$src" -C "$tree"
        # A tarball of the tree holds one top folder.
        if [ ! -f "$tree/Makefile" ] && [ "$(find "$tree" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ]; then
            top=$(find "$tree" -mindepth 1 -maxdepth 1)
            mv "$top" "$tree.top" && rmdir "$tree" && mv "$tree.top" "$tree"
        fi
    fi
    [ -f "$tree/Makefile" ] && [ -d "$tree/templates" ] ||
        die "$src does not hold Embox's tree (no Makefile and templates/ at its top)"
    for p in "$here"/patches/*.patch; do
        patch -s -d "$tree" -p1 <"$p" ||
            die "our fix $(basename "$p") does not apply to $src (written for commit $EMBOX_COMMIT)"
    done
    patch -s -d "$tree" -p1 <"$here/stamps/lan9118-stamps.patch" ||
        die "our LAN9118 stamps patch does not apply to $src (written for commit $EMBOX_COMMIT)"
    echo "$stamp" >"$tree/.stackmeter-source"
fi

# Our ext_project, written anew on every build (it is small).
ext=$tree/ext_project/stackmeter
rm -rf "$ext"
mkdir -p "$ext/src" "$ext/templates/vexpress-a9"
copy_responder "$ext/src"
cp "$here/smr_embox.h" "$here/stamps/smr_embox_frames.c" "$ext/src/"
# The command's sources; smr_frames.c and smr_embox_frames.c are the
# library module's (Mybuild.in).
mapfile -t sources < <(responder_sources)
sources+=(smr_driver_stamps.c)
{
    printf '\t@Cflags("--include=smr_embox.h")\n\tsource '
    sep=""
    for f in "${sources[@]}"; do
        printf '%s"src/%s"' "$sep" "$f"
        sep=", "
    done
    printf '\n'
} >"$ext/sources.tmp"
awk -v list="$ext/sources.tmp" '/@SOURCES@/ { while ((getline l < list) > 0) print l; next } { print }' \
    "$here/Mybuild.in" >"$ext/Mybuild"
rm "$ext/sources.tmp"
cp -r "$here/template/." "$ext/templates/vexpress-a9/"
sed -i -e "s/@EMBOX_IP@/$EMBOX_IP/" -e "s/@EMBOX_GW@/$EMBOX_GW/" -e "s/@EMBOX_MAC@/$EMBOX_MAC/" \
    "$ext/templates/vexpress-a9/rootfs/network"

t0=$(date +%s)
(
    cd "$tree"
    make -s confload-ext_project/stackmeter/vexpress-a9 >/dev/null
    make -j"$JOBS" -s
) >"$out/embox-build.log" 2>&1 || {
    echo "embox: Embox's build failed; the last lines of $out/embox-build.log:" >&2
    tail -n 20 "$out/embox-build.log" >&2
    exit 1
}
t1=$(date +%s)
cp "$tree/build/base/bin/embox" "$out/stackmeter-embox.elf"
# The address the image was built with, for `stackmeter lab up embox`.
echo "$EMBOX_IP $EMBOX_MAC" >"$out/stackmeter-embox.addr"
{
    echo "build: $((t1 - t0)) s with make -j$JOBS"
    heaps=$(grep -o 'heap_size=0x[0-9a-fA-F]*' "$here/template/mods.conf" | cut -d= -f2 |
        while read -r h; do echo $((h)); done | awk '{ s += $1 } END { print s + 0 }')
    arm-none-eabi-size "$out/stackmeter-embox.elf" | awk -v heaps="$heaps" 'NR == 2 {
        printf "image: text %d, data %d, bss %d bytes; RAM without the heaps: %d bytes (the heaps: %d MiB, template/mods.conf)\n",
            $1, $2, $3, $1 + $2 + $3 - heaps, heaps / 1048576 }'
    echo "file: $(stat -c %s "$out/stackmeter-embox.elf") bytes (with debug information)"
} >"$out/embox-size.txt"
arm-none-eabi-size "$out/stackmeter-embox.elf"
echo "embox: $out/stackmeter-embox.elf ($((t1 - t0)) s)"
