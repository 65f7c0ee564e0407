# The C responder's compile flags and source lists, written once. Three
# builds read this file: the Makefile (include), CMakeLists.txt and
# crates/engine/build.rs (each parses it). Keep it to plain lines of
# NAME = words (no make functions, no line continuations); # starts a
# comment line.

# Every build: the language and the warnings (build.rs drops -Werror: a
# newer compiler's new warning must not cost `cargo install` its
# embedded responder; the Makefile and CI keep it).
SMR_WARN = -std=c99 -Wall -Wextra -Werror -pedantic

# The default POSIX build (make, build.rs, CMake's stackmeter-responder).
SMR_OPT = -O2

# The small POSIX build, the embedded footprint (size-check: .text at most
# 16 KiB): smallest code, link-time optimisation, not PIE (as firmware),
# without kernel timestamps and the real-time knobs. Compile and link
# flags.
SMR_SMALL = -Oz -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -flto -fno-pie -DSMR_NO_TS -DSMR_NO_KNOBS -DSMR_POLL
SMR_SMALL_LINK = -s -Wl,--gc-sections -flto -no-pie

# AddressSanitizer and UndefinedBehaviorSanitizer: smr-test, the asan
# responder the Rust tests run, and (with -fsanitize=fuzzer) smr-fuzz.
SMR_SAN = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

# smr-test's engine, with small pools (its stock-limits check compiles
# tests/smr_stock.c without them).
SMR_TEST_DEFS = -DSMR_MAX_CONNS=8 -DSMR_SPARE_CONNS=2

# The 32-bit ARM cross build.
SMR_ARM = -Os

# The lab's lwIP responders: pool sizes (a board's RAM, not a host's),
# and receive buffers allocated at each frame's size from the heap
# (src/smr_netif.c: Debian's liblwip sizes its PBUF_POOL elements for
# glibc's TCP_MSS of 512, fills them for its own 1460), with POSIX's
# limits.h (the unix port wants SSIZE_MAX).
SMR_LWIP_DEFS = -DSMR_MAX_CONNS=64 -DSMR_MAX_TESTS=4 -DSMR_NETIF_RX_PBUF=PBUF_RAM -D_DEFAULT_SOURCE

# Sources, in c-responder/src: the engine (pure, every build), the POSIX
# backend (without a main, admission included), and its two mains.
SMR_ENGINE_SRC = smr.c smr_auth.c
SMR_POSIX_SRC = smr_posix.c smr_sockets.c smr_wait.c smr_admit.c smr_args.c smr_knobs.c smr_log.c smr_stamps.c
SMR_MAIN_SRC = smr_main.c
# The lab's lwIP programs: the Ethernet netif glue and the TAP device
# under both; lwip-raw is the raw API backend and its one-thread loop.
SMR_NETIF_TAP_SRC = smr_netif.c smr_nic_tap.c
SMR_LWIP_SOCK_SRC = smr_lwip_sock.c
SMR_LWIP_RAW_SRC = smr_lwip_raw.c smr_lwip_tap.c smr_admit.c
