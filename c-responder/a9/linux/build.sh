#!/usr/bin/env bash
# c-responder/a9/linux/build.sh - Linux on the same emulated boards as the
# RTOS images, with the C responder in it: the Cortex-A9 of the Embox
# image (`make -C c-responder linux-a9`) and QEMU's virt machine of the
# NuttX image (`make -C c-responder linux-virt`, c-responder/virt/virt.mk).
#
# Why: the UDP echo write-up compared Embox with GNU/Linux on one board,
# and the lab does the same for NuttX on virt. This is the Linux half,
# made from Debian's own armhf packages, so that nothing is built from a
# kernel tree: Debian's multiplatform kernel (linux-image-armmp, which
# boots on QEMU's vexpress-a9 with its vexpress-v2p-ca9.dtb, and on virt
# with the tree QEMU makes itself), the board's NIC driver as modules (the
# LAN9118's smsc911x.ko and its PHY library libphy.ko on vexpress-a9;
# virtio_mmio.ko, virtio_net.ko and the failover pair virtio_net needs on
# virt), busybox-static for a shell and `ip`, and the C responder built
# static with Debian's armhf cross compiler. The packages come from
# Debian's archive through an apt configuration of our own (armhf only,
# its lists and cache in OUT_DIR), so the host's dpkg and apt state are
# untouched. The initramfs is assembled with cpio; its init (init beside
# this script) is the same for both boards and reads the board's name and
# modules from /etc/smr-board and /lib/modules.list.
#
# Usage: build.sh OUT_DIR [BOARD]
#   BOARD a9 (the default): QEMU's vexpress-a9, OUT_DIR/linux-a9/
#     vmlinuz          the kernel (QEMU -kernel)
#     vexpress.dtb     the board (QEMU -dtb)
#     initramfs.gz     init, busybox, the modules, the responder
#     size.txt         what went in, and the build's time
#   BOARD virt: QEMU's virt, OUT_DIR/linux-virt/, the same files but the
#     dtb (QEMU's virt makes its own)
# Environment:
#   DEBIAN_MIRROR  (http://deb.debian.org/debian) the archive
#   ARM_CC         (arm-linux-gnueabihf-gcc) the cross compiler
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cdir=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUT_DIR [a9|virt]}
board=${2:-a9}
# Each board: its name (the output folder, and the name init prints), its
# dtb in the kernel package (none: QEMU makes it), and its NIC's modules
# under the kernel's modules folder, in the order they load.
case $board in
a9)
    name=linux-a9
    dtb=vexpress-v2p-ca9.dtb
    modules="drivers/net/phy/libphy.ko drivers/net/ethernet/smsc/smsc911x.ko"
    ;;
virt)
    name=linux-virt
    dtb=
    modules="net/core/failover.ko drivers/net/net_failover.ko drivers/virtio/virtio_mmio.ko drivers/net/virtio_net.ko"
    ;;
*)
    echo "linux: no board $board (a9 or virt)" >&2
    exit 1
    ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
dst=$out/$name
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ARM_CC=${ARM_CC:-arm-linux-gnueabihf-gcc}
for tool in apt-get dpkg-deb cpio gzip "$ARM_CC"; do
    command -v "$tool" >/dev/null || {
        echo "$name: $tool not found (Debian: apt-get install apt dpkg cpio gzip gcc-arm-linux-gnueabihf)" >&2
        exit 1
    }
done
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || {
    echo "$name: $keyring not found (Debian: apt-get install debian-archive-keyring)" >&2
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
        echo "$name: apt-get update from $MIRROR failed: $(tail -n 1 "$apt/log/update.log")" >&2
        exit 1
    }
fi
# linux-image-armmp names the current kernel package.
kpkg=$(apt-cache depends linux-image-armmp 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-armmp\)$/\1/p' | head -n 1)
[ -n "$kpkg" ] || {
    echo "$name: Debian's archive names no armmp kernel (apt-cache depends linux-image-armmp)" >&2
    exit 1
}
kver=${kpkg#linux-image-}
(
    cd "$apt/debs"
    for p in "$kpkg" busybox-static; do
        ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -qq "$p" >/dev/null
    done
) || {
    echo "$name: could not download $kpkg and busybox-static from $MIRROR" >&2
    exit 1
}

# The packages unpacked, and the parts taken from them.
x=$out/$name-unpacked
rm -rf "$x" "$dst"
mkdir -p "$x" "$dst"
for d in "$apt/debs/${kpkg}"_*.deb "$apt/debs"/busybox-static_*.deb; do dpkg-deb -x "$d" "$x"; done
cp "$x/boot/vmlinuz-$kver" "$dst/vmlinuz"
[ -z "$dtb" ] || cp "$x/usr/lib/linux-image-$kver/$dtb" "$dst/vexpress.dtb"

# The initramfs: busybox, the NIC's modules, init, the responder (static,
# with Linux's knobs and kernel stamps: the build every Linux host runs).
root=$out/$name-root
rm -rf "$root"
mkdir -p "$root"/{bin,etc,lib,proc,sys,dev,tmp}
cp "$x/bin/busybox" "$root/bin/busybox"
echo "$name" >"$root/etc/smr-board"
for m in $modules; do
    cp "$x/lib/modules/$kver/kernel/$m" "$root/lib/"
    basename "$m" >>"$root/lib/modules.list"
done
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
echo "$name: $dst ($kpkg, $((t1 - t0)) s)"
