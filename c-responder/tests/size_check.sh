#!/bin/sh
# Asserts the .text section of a binary is at most LIMIT bytes (footprint
# goal of the small POSIX build). Usage: size_check.sh BINARY LIMIT
set -eu
bin=$1
limit=$2
text=$(size -A "$bin" | awk '$1 == ".text" { print $2 }')
size -A "$bin" | awk '$1 ~ /^\.(text|rodata|data|bss)$/'
if [ -z "$text" ]; then
    echo "size_check: error: no .text section in $bin" >&2
    exit 1
fi
if [ "$text" -gt "$limit" ]; then
    echo "size_check: FAIL: .text of $bin is $text bytes, limit $limit" >&2
    exit 1
fi
echo "size_check: ok: .text of $bin is $text bytes (limit $limit)"
