#!/usr/bin/env bash
# proxies/asio-2010/build.sh - builds the boost::asio TCP proxy of
# SolidFrame's 2010 tree (example/extern/boost/asio/proxyserver.cpp), the
# asio side of the 2010 proxy comparison, as OUT_DIR/asio-2010
# (`make -C proxies asio-2010`).
#
# Why a script, and why edits made here: that file is GPL-3.0 (the tree's
# licence in 2010). It is built as a separate program, never linked with
# our code, and its text is never copied into our tree (proxies/LICENSES.md).
# The user names it in STACKMETER_ASIO_2010_SRC; this script copies it
# into our build folder and edits the copy there with the sed edits below
# (each one says what and why): three to build it against Boost 1.74, one
# so that it listens on 127.0.0.1 as it meant to, two so that a client
# connecting at once cannot crash it, one so that it serves with stdin
# closed instead of spinning.
#
# Usage: build.sh OUT_DIR
#   OUT_DIR/asio-2010                 the proxy
#   OUT_DIR/asio-2010-work/           the edited copy and the build log
# Environment:
#   STACKMETER_ASIO_2010_SRC  the folder holding proxyserver.cpp, or the file
#   CXX                       the C++ compiler (g++)
set -euo pipefail

# Where the file comes from, and the sum of the file at that commit.
OLD_COMMIT=d9f4c3fc39d67107178972b46b3f86fd532c195a
OLD_PATH=example/extern/boost/asio/proxyserver.cpp
OLD_SHA256=56a557d0b5cb7e5694e1c115a72f579dd663660818972de780b270836c790129

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$out/asio-2010-work
CXX=${CXX:-g++}

how="get it with: git clone https://github.com/solidoss/solidframe && git -C solidframe show $OLD_COMMIT:$OLD_PATH >proxyserver.cpp, then STACKMETER_ASIO_2010_SRC=\$PWD/proxyserver.cpp make -C proxies asio-2010 (proxies/README.md)"
src=${STACKMETER_ASIO_2010_SRC:-}
if [ -z "$src" ]; then
    echo "asio-2010: the 2010 proxy's source is not given (STACKMETER_ASIO_2010_SRC is not set); $how" >&2
    exit 1
fi
[ -d "$src" ] && src=$src/proxyserver.cpp
if [ ! -f "$src" ]; then
    echo "asio-2010: $src does not exist; $how" >&2
    exit 1
fi
[ -f /usr/include/boost/asio.hpp ] && [ -f /usr/include/boost/thread/thread.hpp ] || {
    echo "asio-2010: Boost's headers not found (Debian: apt-get install libboost-dev libboost-system-dev libboost-thread-dev)" >&2
    exit 1
}
sum=$(sha256sum "$src" | cut -d' ' -f1)
[ "$sum" = "$OLD_SHA256" ] ||
    echo "asio-2010: warning: $src's sha256 is $sum, not that of $OLD_PATH at $OLD_COMMIT; the edits may not apply" >&2

mkdir -p "$work"
copy=$work/proxyserver.cpp.new
cp "$src" "$copy"

# edit COUNT TEXT SED: TEXT must occur on COUNT lines of the copy
# (else the file is not the one these edits were written for); SED is
# applied to those lines.
edit() {
    local count=$1 text=$2 expr=$3
    local found
    found=$(grep -cF -- "$text" "$copy" || true)
    [ "$found" = "$count" ] || {
        echo "asio-2010: expected '$text' on $count line(s) of $src, found $found; is it $OLD_PATH at $OLD_COMMIT?" >&2
        exit 1
    }
    sed -i -e "$expr" "$copy"
}

# Boost 1.50 renamed boost::TIME_UTC to TIME_UTC_ (C11 defines a TIME_UTC
# macro). Only an unused helper, delay(), uses it.
edit 1 'boost::TIME_UTC)' 's/boost::TIME_UTC)/boost::TIME_UTC_)/'
# Boost 1.66 removed the non_blocking_io IO control; the socket's
# non_blocking(true) does the same. The declaration of the control goes
# (twice), its two uses become non_blocking(true).
edit 2 'tcp::socket::non_blocking_io non_blocking_io(true);' 's/tcp::socket::non_blocking_io non_blocking_io(true);//'
edit 2 '.io_control(non_blocking_io);' 's/\.io_control(non_blocking_io);/.non_blocking(true);/'
# The listener meant to bind 127.0.0.1, but called the static
# address_v4::from_string through an object and dropped its result, so it
# bound 0.0.0.0 (every interface). Assign the result, as intended.
edit 1 'localaddr.from_string("127.0.0.1");' \
    's/localaddr\.from_string("127\.0\.0\.1");/localaddr = boost::asio::ip::address_v4::from_string("127.0.0.1");/'
# main() started the I/O thread, which accepts connections, before it
# resolved the upstream address into the global resolved_endpoint that
# session::start() dereferences: a client that connects as soon as the port
# listens (a readiness probe) crashed it (SIGSEGV in 22 of 200 starts here).
# Resolve before listening, and drop the later resolve.
edit 1 'server s(io_service, atoi(argv[1]));' \
    's/server s(io_service, atoi(argv\[1\]));/resolved_endpoint = tcp::resolver(io_service).resolve(tcp::resolver::query(argv[2], argv[3])); &/'
edit 1 'resolved_endpoint = resolver.resolve(query);' 's/resolved_endpoint = resolver\.resolve(query);//'
# main() reads commands from stdin ("q" quits). At EOF `cin>>c` fails at
# once on every turn of its loop, which then spins at 100% CPU posting a
# message that prints a line. At EOF, stop reading stdin and keep serving:
# wait for the I/O thread, which runs until the process is killed
# (SIGTERM and SIGINT end it by their default action).
edit 1 'cin>>c;' 's/cin>>c;/if (!(cin >> c)) { thrd.join(); break; }/'

# Built already from the same edited file: nothing to do.
if [ -f "$out/asio-2010" ] && cmp -s "$copy" "$work/proxyserver.cpp"; then
    rm "$copy"
    exit 0
fi
mv "$copy" "$work/proxyserver.cpp"
copy=$work/proxyserver.cpp

t0=$(date +%s.%N)
log=$work/build.log
# BOOST_BIND_GLOBAL_PLACEHOLDERS: the file uses boost::bind's _1 style
# placeholders from the global namespace; this keeps Boost 1.74 quiet.
"$CXX" -std=c++17 -O2 -DBOOST_BIND_GLOBAL_PLACEHOLDERS -o "$out/asio-2010" "$copy" \
    -lboost_thread -lboost_system -pthread >"$log" 2>&1 || {
    echo "asio-2010: the build failed; the last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
}
t1=$(date +%s.%N)
"$here/../record.sh" "$out" asio-2010 "$t0" "$t1"
