#!/usr/bin/env bash
# c-responder/virt/nuttx/build.sh - the NuttX image with the C responder in
# it, for QEMU's virt machine (Cortex-A7, virtio-net on a TAP device;
# `make -C c-responder nuttx` runs this).
#
# Why a script: NuttX builds with its own make system from its own trees
# (nuttx/ and apps/), which no package registry carries, and its virtio
# and device tree drivers download three more projects at build time
# (dtc's libfdt, libmetal, open-amp). The user names NuttX's source in
# STACKMETER_NUTTX_SRC (a tarball holding nuttx/ and apps/, or a folder
# holding both) and the other three as tarballs beside it (or in
# STACKMETER_NUTTX_DEPS). This script unpacks everything into a build
# folder of ours, puts each download where NuttX's make looks for it (with
# NuttX's own openamp/*.patch applied, as its download rule would, and an
# empty .git so that make takes the folder as a checkout and downloads
# nothing), adds our application folder (app/: the responder's sources
# copied from c-responder/src, its Makefile, Kconfig and init task, the
# shared driver stamps from c-responder/stamps and NuttX's hooks from
# stamps/) as apps/stackmeter, applies
# our patch to NuttX's virtio-net driver (stamps/virtio-net-stamps.patch:
# the times of the responder's UDP frames at the driver, for the
# stack/application split), configures qemu-armv7a:nsh with our changes
# (defconfig.fragment), and runs NuttX's build. Nothing is written into
# the user's trees. The checks and the responder's files are the RTOS
# builds' shared ones (c-responder/rtos-build.sh).
#
# Usage: build.sh OUT_DIR
#   OUT_DIR/stackmeter-nuttx.elf   the image (QEMU -kernel)
#   OUT_DIR/stackmeter-nuttx.addr  the address and MAC it was built for
#   OUT_DIR/nuttx-size.txt         its sections, and the build's time
# Environment:
#   STACKMETER_NUTTX_SRC   NuttX's source: a .tar.xz/.tar.gz or a folder,
#                          either holding nuttx/ and apps/
#   STACKMETER_NUTTX_DEPS  the folder of dtc-1.7.0, libmetal-2025.10.0 and
#                          open-amp-2025.10.0 (.tar.xz or .tar.gz; default:
#                          the tarball's folder, or the source folder's)
#   NUTTX_IP NUTTX_GW NUTTX_MAC  the board's address, its gateway and MAC
#                          (make gives the lab's, from c-responder/boards.mk)
#   JOBS                   make -j (the number of CPUs)
set -euo pipefail

# The commits our fragment and app were written against, and the pinned
# snapshots' sums (a different one is a warning, not an error).
NUTTX_COMMIT=4ebc8a7291df955dece09073b8798db2dfd6490b
APPS_COMMIT=a71c329cfb0d40c853ddff6c943aed22e34b71a6
NUTTX_TARBALL_SHA256=d471cd734c8a0d9f11f9144f9397b4a62b7b696cf097943f64f56e4d1dabc8d7
DEPS=(dtc-1.7.0 libmetal-2025.10.0 open-amp-2025.10.0)
declare -A DEP_SHA256=(
    [dtc-1.7.0]=e5387cd542dce2cf08bf26347aaea87d4db911ea06001d16d978cad9d37bf749
    [libmetal-2025.10.0]=2333873cce62a746ba0c281d962e8e95e86586c7ad3a0690ea808a1c024b654f
    [open-amp-2025.10.0]=d9a47a2f8ea3f2f30ca62d4708f0c718c67a0bc7a024eb233de81bc9fec22608
)
declare -A DEP_GIT=(
    [dtc-1.7.0]="git clone -b v1.7.0 https://github.com/dgibson/dtc dtc-1.7.0"
    [libmetal-2025.10.0]="git clone -b v2025.10.0 https://github.com/OpenAMP/libmetal libmetal-2025.10.0"
    [open-amp-2025.10.0]="git clone -b v2025.10.0 https://github.com/OpenAMP/open-amp open-amp-2025.10.0"
)

RTOS=nuttx
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=c-responder/rtos-build.sh
source "$here/../../rtos-build.sh"
cdir=$RTOS_DIR
out_dir "${1:?usage: build.sh OUT_DIR}"
need_vars NUTTX_IP NUTTX_GW NUTTX_MAC
JOBS=${JOBS:-$(nproc)}

how="get it with: git clone https://github.com/apache/nuttx nuttx && git -C nuttx checkout $NUTTX_COMMIT; git clone https://github.com/apache/nuttx-apps apps && git -C apps checkout $APPS_COMMIT; beside them dtc v1.7.0, libmetal and open-amp v2025.10.0 as dtc-1.7.0.tar.xz, libmetal-2025.10.0.tar.xz, open-amp-2025.10.0.tar.xz; then STACKMETER_NUTTX_SRC=\$PWD make -C c-responder nuttx (c-responder/virt/README.md)"

# An IPv4 address as the hex word Kconfig's NETINIT options take.
hex_ip() {
    local a b c d
    IFS=. read -r a b c d <<<"$1"
    for x in "$a" "$b" "$c" "$d"; do
        [[ $x =~ ^[0-9]+$ ]] && [ "$x" -le 255 ] || die "$1 is not an IPv4 address (NUTTX_IP, NUTTX_GW)"
    done
    printf '0x%02x%02x%02x%02x' "$a" "$b" "$c" "$d"
}

# The source: checked, and where the three others are.
need_source STACKMETER_NUTTX_SRC NuttX "$how"
if [ -d "$src" ]; then
    [ -f "$src/nuttx/Makefile" ] && [ -f "$src/apps/Makefile" ] ||
        die "$src does not hold nuttx/ and apps/ (NuttX and nuttx-apps side by side); $how"
    deps=${STACKMETER_NUTTX_DEPS:-$src}
else
    deps=${STACKMETER_NUTTX_DEPS:-$(dirname "$src")}
fi
declare -A dep_file
for d in "${DEPS[@]}"; do
    f=$(ls "$deps/$d".tar.xz "$deps/$d".tar.gz "$deps/$d".tgz 2>/dev/null | head -n 1 || true)
    [ -n "$f" ] || die "$d's source is not in $deps ($d.tar.xz; STACKMETER_NUTTX_DEPS names the folder): get it with: ${DEP_GIT[$d]} && tar -cJf $d.tar.xz --exclude=.git $d"
    dep_file[$d]=$f
done
need_tools "gcc-arm-none-eabi kconfig-frontends-nox make patch xz-utils" arm-none-eabi-gcc kconfig-conf make patch xz

# Copies nuttx/ and apps/ out of the source into $1.
unpack_source() {
    local tree=$1 r
    if [ -d "$src" ]; then
        check_commit "$src/nuttx" "$NUTTX_COMMIT"
        check_commit "$src/apps" "$APPS_COMMIT"
        for r in nuttx apps; do
            mkdir -p "$tree/$r"
            (cd "$src/$r" && tar --exclude=./.git -cf - .) | (cd "$tree/$r" && tar xf -)
        done
    else
        check_sum "$src" "$NUTTX_TARBALL_SHA256"
        tar -xf "$src" -C "$tree"
    fi
    [ -f "$tree/nuttx/Makefile" ] && [ -f "$tree/apps/Makefile" ] ||
        die "$src does not hold nuttx/ and apps/ at its top; $how"
}

# Unpacks dependency $1 into folder $2 (replacing it), with an empty .git.
unpack_dep() {
    local d=$1 dst=$2
    check_sum "${dep_file[$d]}" "${DEP_SHA256[$d]}"
    rm -rf "$dst" "$dst.tmp"
    mkdir -p "$dst.tmp"
    tar -xf "${dep_file[$d]}" -C "$dst.tmp"
    mv "$dst.tmp/$d" "$dst"
    rmdir "$dst.tmp"
    mkdir -p "$dst/.git"
}

# NuttX's own patches for libmetal or open-amp ($1: the .defs file that
# names them), in its order, from openamp/ with -p0 as its rule does.
apply_openamp_patches() {
    local defs=$1 p
    for p in $(sed -n 's/.*patch -p0 < \([^ ]*\.patch\).*/\1/p' "$tree/nuttx/openamp/$defs"); do
        (cd "$tree/nuttx/openamp" && patch -s -p0 <"$p") || die "NuttX's openamp/$p does not apply"
    done
}

# The trees, unpacked once per source (its path and time in a stamp file).
tree=$out/nuttx-tree
stamp="$src $(stat -c %Y "$src") ${dep_file[*]} $(sha256sum <"$here/stamps/virtio-net-stamps.patch" | cut -c 1-16)"
if [ ! -f "$tree/.stackmeter-source" ] || [ "$(cat "$tree/.stackmeter-source")" != "$stamp" ]; then
    rm -rf "$tree"
    mkdir -p "$tree"
    unpack_source "$tree"
    unpack_dep dtc-1.7.0 "$tree/nuttx/libs/libc/fdt/dtc"
    unpack_dep libmetal-2025.10.0 "$tree/nuttx/openamp/libmetal"
    unpack_dep open-amp-2025.10.0 "$tree/nuttx/openamp/open-amp"
    apply_openamp_patches libmetal.defs
    apply_openamp_patches open-amp.defs
    patch -s -d "$tree/nuttx" -p1 <"$here/stamps/virtio-net-stamps.patch" ||
        die "our virtio-net stamps patch does not apply to $src (written for commit $NUTTX_COMMIT)"
    echo "$stamp" >"$tree/.stackmeter-source"
fi

# Our application, written anew on every build (it is small).
app=$tree/apps/stackmeter
rm -rf "$app"
mkdir -p "$app"
copy_responder "$app"
cp "$cdir/flags.mk" "$here"/app/* "$here"/stamps/*.c "$app/"

# The configuration: the board's, then ours, then checked.
fragment=$out/nuttx-fragment.config
sed -e "s/@IPADDR@/$(hex_ip "$NUTTX_IP")/" -e "s/@DRIPADDR@/$(hex_ip "$NUTTX_GW")/" \
    "$here/defconfig.fragment" | grep '^CONFIG_' >"$fragment"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$cdir/../Cargo.toml" 2>/dev/null | head -n 1)
t0=$(date +%s)
(
    cd "$tree/nuttx"
    if [ ! -f .config ] || ! cmp -s "$fragment" .stackmeter-fragment; then
        make -s distclean >/dev/null 2>&1 || true
        ./tools/configure.sh -a ../apps qemu-armv7a:nsh >/dev/null
        cat "$fragment" >>.config
        make -s olddefconfig >/dev/null
        cp "$fragment" .stackmeter-fragment
    fi
    make -j"$JOBS" -s SMR_VERSION="${version:-unknown}"
) >"$out/nuttx-build.log" 2>&1 || {
    rm -f "$tree/nuttx/.stackmeter-fragment"
    echo "nuttx: NuttX's build failed; its errors in $out/nuttx-build.log:" >&2
    grep -E -m 10 -A 3 'error:|Error [0-9]' "$out/nuttx-build.log" | cut -c 1-300 >&2 || tail -c 2000 "$out/nuttx-build.log" >&2
    exit 1
}
t1=$(date +%s)
# Every line of the fragment must hold in the configuration NuttX built.
while IFS= read -r line; do
    name=${line%%=*}
    case $line in
    *=n) grep -qx "$name=y" "$tree/nuttx/.config" && bad=$line || bad= ;;
    *) grep -qxF "$line" "$tree/nuttx/.config" && bad= || bad=$line ;;
    esac
    [ -z "$bad" ] || {
        rm -f "$tree/nuttx/.stackmeter-fragment"
        die "$line (defconfig.fragment) does not hold in NuttX's configuration: a dependency is missing ($tree/nuttx/.config)"
    }
done <"$fragment"

cp "$tree/nuttx/nuttx" "$out/stackmeter-nuttx.elf"
# The address the image was built with, for `stackmeter lab up nuttx`.
echo "$NUTTX_IP $NUTTX_MAC" >"$out/stackmeter-nuttx.addr"
{
    echo "build: $((t1 - t0)) s with make -j$JOBS"
    arm-none-eabi-size "$out/stackmeter-nuttx.elf" | awk 'NR == 2 {
        printf "image: text %d, data %d, bss %d bytes (the heap is the rest of CONFIG_RAM_SIZE)\n", $1, $2, $3 }'
    grep '^CONFIG_RAM_SIZE=' "$tree/nuttx/.config"
    echo "file: $(stat -c %s "$out/stackmeter-nuttx.elf") bytes (with debug information)"
} >"$out/nuttx-size.txt"
arm-none-eabi-size "$out/stackmeter-nuttx.elf"
echo "nuttx: $out/stackmeter-nuttx.elf ($((t1 - t0)) s)"
