/*
 * smr_lwip_raw.h: the lwIP raw callback API backend (smr_lwip_raw.c), the
 * engine inside lwIP's own context. Everything it needs from the program
 * around it is below: a clock and a place for event lines. Two programs
 * use it: the lab's lwip-raw on a Linux TAP device (smr_lwip_tap.c) and
 * the microcontroller firmware (mcu/). Both run lwIP without its tcpip
 * thread: one loop pulls frames from the NIC (smr_netif_poll), runs
 * lwIP's timers (sys_check_timeouts) and calls smr_raw_timers().
 */
#ifndef SMR_LWIP_RAW_H
#define SMR_LWIP_RAW_H

#include "smr.h"
#include "smr_admit.h"

/* Binds TCP and UDP `port` on every address of lwIP's netifs and serves
 * them with the engine configured by cfg (a secret in it: smr_auth_key;
 * seed: 16 random bytes for challenge nonces, unused without a secret)
 * and admission rules adm (both copied), then says its limits in one
 * event line (smr_limits_line). Call once lwIP is up, from its context.
 * 0, or -1 when lwIP has no room for the two listeners. */
int smr_raw_start(const struct smr_config *cfg, const struct smr_admit *adm, const uint8_t seed[16], uint16_t port);

/* Deadlines (header and idle timeouts, lingers, drains) and whatever a
 * pass left to send; call every few milliseconds, from lwIP's context. */
void smr_raw_timers(void);

/* The program's: a monotonic clock in ns, and one event line (a refusal,
 * an aborted session; no newline) for its log or console. */
uint64_t smr_raw_clock(void);
void smr_raw_event(const char *line);

#endif
