#!/usr/bin/env bash
# proxies/record.sh - writes one proxy's build time and size into
# OUT_DIR/NAME.size and gathers every NAME.size into OUT_DIR/sizes.txt
# (the Makefile and the build scripts call it after each build).
#
# Usage: record.sh OUT_DIR NAME T0 T1   (T0, T1: `date +%s.%N` around the build)
# A build that left the binary as it was (nothing to do) keeps the time of
# the build that made it.
set -euo pipefail

out=${1:?usage: record.sh OUT_DIR NAME T0 T1}
name=${2:?usage: record.sh OUT_DIR NAME T0 T1}
t0=${3:?usage: record.sh OUT_DIR NAME T0 T1}
t1=${4:?usage: record.sh OUT_DIR NAME T0 T1}
bin=$out/$name
[ -f "$bin" ] || { echo "record.sh: $bin does not exist (its build failed?)" >&2; exit 1; }

sum=$(sha256sum "$bin" | cut -d' ' -f1)
if ! grep -q "sha256 $sum" "$out/$name.size" 2>/dev/null; then
    size=$(stat -c %s "$bin")
    tmp=$(mktemp)
    strip -o "$tmp" "$bin"
    stripped=$(stat -c %s "$tmp")
    rm -f "$tmp"
    text=$(size "$bin" | awk 'NR == 2 { print $1 }')
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    printf '%-11s build %6s s   file %9d bytes   stripped %9d bytes   text %9d bytes   sha256 %s\n' \
        "$name" "$secs" "$size" "$stripped" "$text" "$sum" >"$out/$name.size"
fi
cat "$out"/*.size >"$out/sizes.txt"
cut -c1-100 "$out/$name.size"
