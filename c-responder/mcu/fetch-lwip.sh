#!/usr/bin/env bash
# Fetches lwIP's source for the firmware (never committed): Debian's lwip
# source package at one pinned version, its three files checked against the
# SHA-256 sums below, unpacked with Debian's patches applied (dpkg-source)
# into c-responder/mcu/build/lwip (ignored by git). Needs a deb-src entry
# for the Debian archive the machine uses; as root it adds one
# (/etc/apt/sources.list.d/stackmeter-src.sources) when apt knows no
# source for lwip. Does nothing when the tree is already there.
# Usage: mcu/fetch-lwip.sh [BUILD-DIR]
#        mcu/fetch-lwip.sh --archive-uri APT-ETC-DIR   (what it reads from apt's configuration)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/build
[ "${1:-}" = --archive-uri ] || build=${1:-$build}
ver=2.1.3+dfsg1-2
sums="8d8f944db8e6d542fc2d6f01559078fb1b5dda71651c67ee5fa3571ed1342c50  lwip_2.1.3+dfsg1-2.dsc
0a8276d09fc4e97bbba2f953d74af2388fc2195ea156be9d7589e297a68fde24  lwip_2.1.3+dfsg1.orig.tar.xz
c5a48413d362cc757032cdd58f528f75eb64ee781ca46ca24f010b49b0e62a90  lwip_2.1.3+dfsg1-2.debian.tar.xz"
# One line saying what failed and how to get the source by hand, then exit
# 1; the deb-src entry this script added goes again (a wrong one would
# break every later apt-get update).
cannot() {
    [ -z "${src:-}" ] || rm -f "$src"
    echo "fetch-lwip: $1; to fetch lwIP's source yourself, add 'deb-src URI CODENAME main' for your Debian archive to /etc/apt/sources.list, run apt-get update, then apt-get source --download-only lwip=$ver in $dl" >&2
    exit 1
}

# The Debian archive the machine installs from, as apt's configuration in
# $1 (default /etc/apt) names it: the first URI of a deb822 entry
# (sources.list.d/*.sources), else of a one-line entry (sources.list,
# sources.list.d/*.list, options in brackets allowed); security archives
# are passed over. Prints nothing when there is none.
archive_uri() {
    local etc=${1:-/etc/apt} f uri
    for f in "$etc"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
        if [ -n "$uri" ]; then echo "$uri"; return 0; fi
    done
    for f in "$etc"/sources.list "$etc"/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(awk '$1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
            if ($i !~ /security/) { print $i; exit }
        }' "$f")
        if [ -n "$uri" ]; then echo "$uri"; return 0; fi
    done
}
# `fetch-lwip.sh --archive-uri DIR`: what archive_uri finds in DIR (its test).
if [ "${1:-}" = --archive-uri ]; then
    archive_uri "${2:-/etc/apt}"
    exit 0
fi
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
        # The same archive as the machine's own entry, for sources.
        src=/etc/apt/sources.list.d/stackmeter-src.sources
        uri=$(archive_uri)
        codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}" || true)
        cat >"$src" <<EOT
Types: deb-src
URIs: ${uri:-http://deb.debian.org/debian}
Suites: ${codename:-bookworm} ${codename:-bookworm}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
        apt-get update -qq || cannot "apt-get update failed after adding $src"
        apt-cache showsrc lwip 2>/dev/null | grep -q "^Version: $ver\$" \
            || cannot "apt still has no source for lwip $ver after adding $src (URIs: ${uri:-http://deb.debian.org/debian})"
    fi
    # apt downloads as its own user, _apt, where that user may write.
    [ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
    apt-get source -qq --download-only "lwip=$ver" >/dev/null || cannot "apt-get source lwip=$ver failed"
    if ! echo "$sums" | sha256sum --quiet -c -; then
        echo "fetch-lwip: the downloaded lwip $ver does not match its pinned SHA-256 sums" >&2
        exit 1
    fi
fi
rm -rf "$build/lwip"
dpkg-source --no-check -x "lwip_$ver.dsc" "$build/lwip" >/dev/null
touch "$build/lwip/.stackmeter-$ver"
echo "fetch-lwip: lwip $ver in $build/lwip"
