/*
 * lwIP sockets-API backend (the "application" path of seed 000): the POSIX
 * poll() loop of smr_posix.c, compiled against lwip_socket/lwip_poll/...,
 * with lwIP running in this process on a TAP device.
 * Usage: lwip-sock TAP-DEVICE IPV4-ADDRESS [--listen ADDR:PORT] [flags]
 */
#define _GNU_SOURCE
#include <limits.h> /* SSIZE_MAX before lwIP's arch.h */

#define SMR_LWIP 1
#define SMR_NAME "stackmeter-lwip-sock"
#define SMR_SOCK(name) lwip_##name

#include "lwip/sockets.h"
#include "smr_lwip_common.h"

#include "smr_posix.c"
