#!/usr/bin/env bash
# Fetches lwIP's source for the firmware (never committed): Debian's lwip
# source package at one pinned version, its three files checked against the
# SHA-256 sums below, unpacked with Debian's patches applied (dpkg-source)
# into c-responder/mcu/build/lwip (ignored by git). Needs a deb-src entry
# for the Debian archive the machine uses; as root it adds one
# (/etc/apt/sources.list.d/stackmeter-src.sources) when apt knows no
# source for lwip. Does nothing when the tree is already there.
# Usage: mcu/fetch-lwip.sh [BUILD-DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/build}
ver=2.1.3+dfsg1-2
sums="8d8f944db8e6d542fc2d6f01559078fb1b5dda71651c67ee5fa3571ed1342c50  lwip_2.1.3+dfsg1-2.dsc
0a8276d09fc4e97bbba2f953d74af2388fc2195ea156be9d7589e297a68fde24  lwip_2.1.3+dfsg1.orig.tar.xz
c5a48413d362cc757032cdd58f528f75eb64ee781ca46ca24f010b49b0e62a90  lwip_2.1.3+dfsg1-2.debian.tar.xz"
[ -f "$build/lwip/.stackmeter-$ver" ] && exit 0
dl=$build/lwip-src
mkdir -p "$dl"
cd "$dl"
if ! echo "$sums" | sha256sum --status -c - 2>/dev/null; then
    if ! apt-cache showsrc lwip 2>/dev/null | grep -q "^Version: $ver\$"; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "fetch-lwip: apt has no source for lwip $ver; add a deb-src entry for your Debian archive and run apt-get update (or run this as root)" >&2
            exit 1
        fi
        # The same archive and suites as the machine's own entry, for sources.
        src=/etc/apt/sources.list.d/stackmeter-src.sources
        uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
        cat >"$src" <<EOT
Types: deb-src
URIs: ${uri:-http://deb.debian.org/debian}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
        apt-get update -qq
    fi
    # apt downloads as its own user, _apt, where that user may write.
    [ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
    apt-get source -qq --download-only "lwip=$ver" >/dev/null
    if ! echo "$sums" | sha256sum --quiet -c -; then
        echo "fetch-lwip: the downloaded lwip $ver does not match its pinned SHA-256 sums" >&2
        exit 1
    fi
fi
rm -rf "$build/lwip"
dpkg-source --no-check -x "lwip_$ver.dsc" "$build/lwip" >/dev/null
touch "$build/lwip/.stackmeter-$ver"
echo "fetch-lwip: lwip $ver in $build/lwip"
