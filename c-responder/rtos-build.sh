# c-responder/rtos-build.sh - what the RTOS image builds share (sourced by
# a9/embox/build.sh and virt/nuttx/build.sh, not run): one-line errors and
# warnings named after the build, the checks of what the user gave (the
# board's address from make, the pinned source and the host's tools), and
# the responder's files every RTOS build copies into its tree.
#
# Why this exists: Embox and NuttX build from a third-party tree no
# registry carries, named in an environment variable, checked the same
# way (given, there, at the commit or tarball our patches were written
# against: a warning if not), and both compile the same responder sources
# (flags.mk) with the same driver stamps (c-responder/stamps). Sourcing
# defines functions and RTOS_DIR (this folder) only; the script sets RTOS,
# its name in messages (embox, nuttx), and then calls them.

RTOS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() {
    echo "$RTOS: $*" >&2
    exit 1
}

warn() { echo "$RTOS: warning: $*" >&2; }

# out_dir DIR: DIR made; its absolute path in $out.
out_dir() {
    mkdir -p "$1"
    out=$(cd "$1" && pwd)
}

# need_vars NAME...: each set (make sets them from c-responder/boards.mk).
need_vars() {
    local v
    for v in "$@"; do
        [ -n "${!v:-}" ] || die "$v is not set (make -C c-responder $RTOS sets it from c-responder/boards.mk)"
    done
}

# need_source VAR NAME HOW: the source the user named in VAR (NAME's),
# given and there, its absolute path in $src; HOW says how to get it.
need_source() {
    local var=$1 name=$2 how=$3
    src=${!var:-}
    [ -n "$src" ] || die "$name's source is not given ($var is not set); $how"
    [ -e "$src" ] || die "$var=$src does not exist; $how"
    src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
}

# need_tools PACKAGES TOOL...: each TOOL on PATH (PACKAGES: Debian's).
need_tools() {
    local packages=$1 tool
    shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install $packages)"
    done
}

# check_sum FILE SHA256: a warning unless the tarball is the pinned one.
check_sum() {
    local sum
    sum=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$sum" = "$2" ] || warn "$1's sha256 is $sum, not the pinned snapshot's; our patches may not apply"
}

# check_commit DIR COMMIT: a warning when the git checkout DIR is at
# another commit (nothing when DIR is no checkout).
check_commit() {
    local have
    [ -d "$1/.git" ] || return 0
    have=$(git -C "$1" rev-parse HEAD 2>/dev/null || echo unknown)
    [ "$have" = "$2" ] || warn "$1 is at $have, not $2; our patches may not apply"
}

# responder_sources: the responder's .c files an RTOS build compiles
# (flags.mk: the engine, the POSIX backend, its main), one a line.
responder_sources() {
    local list
    for list in SMR_ENGINE_SRC SMR_POSIX_SRC SMR_MAIN_SRC; do
        sed -n "s/^$list = //p" "$RTOS_DIR/flags.mk" | tr ' ' '\n'
    done
}

# copy_responder DIR: those sources, the responder's headers and the
# shared driver stamps (c-responder/stamps: smr_frames.[ch],
# smr_driver_stamps.c) copied into DIR.
copy_responder() {
    local f
    for f in $(responder_sources); do cp "$RTOS_DIR/src/$f" "$1/"; done
    cp "$RTOS_DIR"/src/*.h "$RTOS_DIR"/stamps/*.[ch] "$1/"
}
