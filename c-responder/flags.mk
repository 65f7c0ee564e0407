# The C responder's compile flags and source lists, written once. Four
# builds read this file: the Makefile (include) with the firmware's
# mcu/mcu.mk, CMakeLists.txt and crates/engine/build.rs (each parses it). Keep it to plain lines of
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

# Sources, in c-responder/src: the pure part every build compiles (the
# protocol engine and the admission rules), the POSIX backend (without a
# main), and its main.
SMR_ENGINE_SRC = smr.c smr_header.c smr_objects.c smr_control.c smr_slots.c smr_udp.c smr_status.c smr_auth.c smr_admit.c
SMR_POSIX_SRC = smr_posix.c smr_sockets.c smr_wait.c smr_args.c smr_knobs.c smr_log.c smr_stamps.c
SMR_MAIN_SRC = smr_main.c
# The lwIP programs: the Ethernet netif glue under all three (the lab's
# lwip-sock and lwip-raw, the firmware), the lab's TAP device driver, the
# sockets API program's main, the raw API backend (lwip-raw and the
# firmware) and lwip-raw's main on the TAP device.
SMR_NETIF_SRC = smr_netif.c
SMR_NIC_TAP_SRC = smr_nic_tap.c
# lwip-xdp's controller: an AF_XDP socket (Debian libxdp-dev, libbpf-dev).
SMR_NIC_XDP_SRC = smr_nic_xdp.c
SMR_LWIP_SOCK_SRC = smr_lwip_sock.c
SMR_LWIP_RAW_SRC = smr_lwip_raw.c
SMR_LWIP_TAP_SRC = smr_lwip_tap.c
# The firmware's own files, in c-responder/mcu: the MAC's driver (behind
# src/smr_nic.h), and the board (main, vectors and reset).
SMR_MCU_NIC_SRC = smr_nic_stellaris.c
SMR_MCU_BOARD_SRC = smr_mcu.c startup.c
