#!/usr/bin/env bash
# c-responder/a9/linux/build.sh - Linux on the same emulated Cortex-A9 as
# the Embox image, with the C responder in it (`make -C c-responder
# linux-a9` runs this).
#
# Why: the UDP echo write-up compared Embox with GNU/Linux on one board.
# This is the Linux half, made from Debian's own armhf packages, so that
# nothing is built from a kernel tree: Debian's multiplatform kernel
# (linux-image-armmp, which boots on QEMU's vexpress-a9 with its
# vexpress-v2p-ca9.dtb), the LAN9118's driver and its PHY library as
# modules (smsc911x.ko, libphy.ko), busybox-static for a shell and `ip`,
# and the C responder built static with Debian's armhf cross compiler.
# The packages come from Debian's archive through an apt configuration of
# our own (armhf only, its lists and cache in OUT_DIR), so the host's
# dpkg and apt state are untouched. The initramfs is assembled with cpio.
#
# Usage: build.sh OUT_DIR
#   OUT_DIR/linux-a9/vmlinuz          the kernel (QEMU -kernel)
#   OUT_DIR/linux-a9/vexpress.dtb     the board (QEMU -dtb)
#   OUT_DIR/linux-a9/initramfs.gz     init, busybox, the modules, the responder
#   OUT_DIR/linux-a9/size.txt         what went in, and the build's time
# Environment:
#   DEBIAN_MIRROR  (http://deb.debian.org/debian) the archive
#   ARM_CC         (arm-linux-gnueabihf-gcc) the cross compiler
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cdir=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
dst=$out/linux-a9
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ARM_CC=${ARM_CC:-arm-linux-gnueabihf-gcc}
for tool in apt-get dpkg-deb cpio gzip "$ARM_CC"; do
    command -v "$tool" >/dev/null || {
        echo "linux-a9: $tool not found (Debian: apt-get install apt dpkg cpio gzip gcc-arm-linux-gnueabihf)" >&2
        exit 1
    }
done
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || {
    echo "linux-a9: $keyring not found (Debian: apt-get install debian-archive-keyring)" >&2
    exit 1
}
t0=$(date +%s)

# An apt of our own: armhf only, everything under $out/apt.
apt=$out/apt
mkdir -p "$apt/etc/apt.conf.d" "$apt/etc/preferences.d" "$apt/etc/sources.list.d" "$apt/lists/partial" \
    "$apt/cache/archives/partial" "$apt/log" "$apt/debs"
touch "$apt/status"
echo "deb [signed-by=$keyring] $MIRROR bookworm main" >"$apt/etc/sources.list"
cat >"$apt/apt.conf" <<EOF
APT::Architecture "armhf";
APT::Architectures { "armhf"; };
APT::Sandbox::User "root";
Dir::State "$apt";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
Dir::Etc "$apt/etc";
Dir::Etc::SourceList "$apt/etc/sources.list";
Dir::Etc::SourceParts "$apt/etc/sources.list.d";
Dir::Etc::Parts "$apt/etc/apt.conf.d";
Dir::Etc::Preferences "$apt/etc/preferences";
Dir::Etc::PreferencesParts "$apt/etc/preferences.d";
Dir::Log "$apt/log";
EOF
export APT_CONFIG=$apt/apt.conf
# The package lists once a day at most.
if [ -z "$(find "$apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
    apt-get update -qq >"$apt/log/update.log" 2>&1 || {
        echo "linux-a9: apt-get update from $MIRROR failed: $(tail -n 1 "$apt/log/update.log")" >&2
        exit 1
    }
fi
# linux-image-armmp names the current kernel package.
kpkg=$(apt-cache depends linux-image-armmp 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-armmp\)$/\1/p' | head -n 1)
[ -n "$kpkg" ] || {
    echo "linux-a9: Debian's archive names no armmp kernel (apt-cache depends linux-image-armmp)" >&2
    exit 1
}
kver=${kpkg#linux-image-}
(
    cd "$apt/debs"
    for p in "$kpkg" busybox-static; do
        ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -qq "$p" >/dev/null
    done
) || {
    echo "linux-a9: could not download $kpkg and busybox-static from $MIRROR" >&2
    exit 1
}

# The packages unpacked, and the parts taken from them.
x=$out/linux-a9-unpacked
rm -rf "$x" "$dst"
mkdir -p "$x" "$dst"
for d in "$apt/debs/${kpkg}"_*.deb "$apt/debs"/busybox-static_*.deb; do dpkg-deb -x "$d" "$x"; done
cp "$x/boot/vmlinuz-$kver" "$dst/vmlinuz"
cp "$x/usr/lib/linux-image-$kver/vexpress-v2p-ca9.dtb" "$dst/vexpress.dtb"

# The initramfs: busybox, the two modules, init, the responder (static,
# with Linux's knobs and kernel stamps: the build every Linux host runs).
root=$out/linux-a9-root
rm -rf "$root"
mkdir -p "$root"/{bin,lib,proc,sys,dev,tmp}
cp "$x/bin/busybox" "$root/bin/busybox"
mods=$x/lib/modules/$kver/kernel/drivers/net
cp "$mods/phy/libphy.ko" "$mods/ethernet/smsc/smsc911x.ko" "$root/lib/"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
make -s -C "$cdir" stackmeter-responder-a9 ARM_CC="$ARM_CC" >&2
cp "$cdir/stackmeter-responder-a9" "$root/bin/stackmeter-responder"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$dst/initramfs.gz"
rm -rf "$x"
t1=$(date +%s)
{
    echo "build: $((t1 - t0)) s"
    echo "kernel: $kpkg ($(stat -c %s "$dst/vmlinuz") bytes)"
    echo "initramfs: $(stat -c %s "$dst/initramfs.gz") bytes compressed"
    echo "responder: $(stat -c %s "$root/bin/stackmeter-responder") bytes, static"
    echo "busybox: $(stat -c %s "$root/bin/busybox") bytes"
} >"$dst/size.txt"
echo "linux-a9: $dst ($kpkg, $((t1 - t0)) s)"
