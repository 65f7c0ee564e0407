#!/usr/bin/env bash
# proxies/solidframe/build.sh - builds SolidFrame's TCP relay example
# (examples/frame/relay_server/example_relay_server.cpp, a proxy on
# solid::frame::aio) as OUT_DIR/solidframe (`make -C proxies solidframe`).
#
# Why a script: SolidFrame is another project's tree, which no package
# registry carries. The user names it (a tarball, or a folder of the tree
# at the pinned commit) in STACKMETER_SOLIDFRAME_SRC; this script copies it
# into a build folder of ours, applies our patches (the *.patch files
# beside this script, each says what and why), configures it with CMake
# without its configure-time downloads (offline.cmake) and builds the one
# relay target. Nothing is written into the user's tree.
#
# Usage: build.sh OUT_DIR
#   OUT_DIR/solidframe             the relay
#   OUT_DIR/solidframe-work/       the patched tree, CMake's build, its log
# Environment:
#   STACKMETER_SOLIDFRAME_SRC  SolidFrame's source: a .tar.xz/.tar.gz or a folder
#   JOBS                       make -j (the number of CPUs)
set -euo pipefail

# The commit our patches were written against.
SF_COMMIT=8277bc39d4aaa52908c08d884a0388ecef719860
SF_TARBALL_SHA256=263c04d312405285a06c12b2a7e65128e8fedf09b8ec0faf38151eadd3b76d1c
RELAY=examples/frame/relay_server/example_relay_server.cpp

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$out/solidframe-work
JOBS=${JOBS:-$(nproc)}

how="get it with: git clone https://github.com/solidoss/solidframe && git -C solidframe checkout $SF_COMMIT, then STACKMETER_SOLIDFRAME_SRC=\$PWD/solidframe make -C proxies solidframe (proxies/README.md)"
src=${STACKMETER_SOLIDFRAME_SRC:-}
if [ -z "$src" ]; then
    echo "solidframe: SolidFrame's source is not given (STACKMETER_SOLIDFRAME_SRC is not set); $how" >&2
    exit 1
fi
if [ ! -e "$src" ]; then
    echo "solidframe: STACKMETER_SOLIDFRAME_SRC=$src does not exist; $how" >&2
    exit 1
fi
for tool in cmake make g++ patch; do
    command -v "$tool" >/dev/null || {
        echo "solidframe: $tool not found (Debian: apt-get install cmake make g++ patch libssl-dev libcxxopts-dev)" >&2
        exit 1
    }
done

# unpack_tree DIR: SolidFrame's tree from $src into DIR, with our patches.
unpack_tree() {
    local tree=$1
    rm -rf "$tree"
    mkdir -p "$tree"
    if [ -d "$src" ]; then
        if [ -d "$src/.git" ]; then
            local have
            have=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
            [ "$have" = "$SF_COMMIT" ] ||
                echo "solidframe: warning: $src is at $have, not $SF_COMMIT; our patches may not apply" >&2
        fi
        (cd "$src" && tar --exclude=./.git --exclude=./build -cf - .) | (cd "$tree" && tar xf -)
    else
        local sum
        sum=$(sha256sum "$src" | cut -d' ' -f1)
        [ "$sum" = "$SF_TARBALL_SHA256" ] ||
            echo "solidframe: warning: $src's sha256 is $sum, not the pinned snapshot's; our patches may not apply" >&2
        tar -xf "$src" -C "$tree"
        # A tarball of the tree holds one top folder.
        if [ ! -f "$tree/CMakeLists.txt" ] && [ "$(find "$tree" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ]; then
            local top
            top=$(find "$tree" -mindepth 1 -maxdepth 1)
            mv "$top" "$tree.top" && rmdir "$tree" && mv "$tree.top" "$tree"
        fi
    fi
    [ -f "$tree/CMakeLists.txt" ] && [ -f "$tree/$RELAY" ] || {
        echo "solidframe: $src does not hold SolidFrame's tree (no CMakeLists.txt and $RELAY)" >&2
        exit 1
    }
    local p
    for p in "$here"/*.patch; do
        patch -s -d "$tree" -p1 <"$p" || {
            echo "solidframe: our patch $(basename "$p") does not apply to $src (written for commit $SF_COMMIT)" >&2
            exit 1
        }
    done
}

# The tree, unpacked again when the source or a patch changes (a stamp
# file holds the source's path and time and the patches' sums).
tree=$work/src
stamp="$src $(stat -c %Y "$src") $(cat "$here"/*.patch "$here/offline.cmake" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$work/.source" ] || [ "$(cat "$work/.source")" != "$stamp" ]; then
    unpack_tree "$tree"
    rm -rf "$work/cmake"
    echo "$stamp" >"$work/.source"
fi

t0=$(date +%s.%N)
log=$work/build.log
(
    cmake -S "$tree" -B "$work/cmake" -DCMAKE_BUILD_TYPE=release \
        -DCMAKE_PROJECT_INCLUDE="$here/offline.cmake" -DSOLID_TEST_ALL=OFF
    cmake --build "$work/cmake" --target example_relay_server -j "$JOBS"
) >"$log" 2>&1 || {
    echo "solidframe: the build failed; the last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
}
t1=$(date +%s.%N)
cp "$work/cmake/examples/frame/relay_server/example_relay_server" "$out/solidframe"
"$here/../record.sh" "$out" solidframe "$t0" "$t1"
