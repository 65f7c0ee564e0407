/*
 * smr_mcu.c: main() of the microcontroller firmware (LM3S6965, no OS):
 * the C responder's engine in lwIP's raw API (src/smr_lwip_raw.c) over
 * the board's Ethernet MAC (smr_nic_stellaris.c behind src/smr_netif.c),
 * a 1 kHz SysTick for lwIP's timers and the engine's clock, and the
 * serial console (UART0) for the boot lines and the engine's events.
 *
 * The loop is the lab's lwip-raw loop (src/smr_lwip_tap.c) with WFI in
 * place of poll(): the core sleeps until a frame (the MAC's interrupt) or
 * the next tick, then pulls every waiting frame into lwIP, runs lwIP's
 * timers and the engine's. Interrupts are masked between the last look at
 * the MAC and WFI, so a frame that comes in between still wakes it.
 *
 * Provisioning: the last 1 KiB of flash (smr_prov, lm3s6965.ld) holds
 * the board's address, port, secret, limits and 16 random bytes, written
 * once per board (by `stackmeter lab up mcu` through QEMU's loader; by a
 * flash programmer on real hardware). Layout, little-endian, offsets:
 *   0 "SMRP"  4 version (1)  5 secret length (0-64)  6 port (u16)
 *   8 IPv4 address  12 netmask  16 gateway  20 seed (16 bytes)
 *   36 secret (64 bytes)  100 longest test (s, u32)  104 tests per
 *   client (u32)  108 connects per second per address (u32)  112 sessions
 *   still sending their header per address (u32)  116 highest rate
 *   (bit/s, u64)
 * Without it (erased flash) the board runs as 198.18.16.2/24 on port
 * 24680 with no secret and no limits, and says so on the console.
 */
#include "lm3s6965.h"
#include "smr_lwip_raw.h"
#include "smr_netif.h"

#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/timeouts.h"

#include <string.h>

#define SMR_NAME "stackmeter-mcu"
#ifndef SMR_VERSION
#define SMR_VERSION "unknown"
#endif
/* The engine's deadlines are looked at this often (ms). */
#define SMR_TIMER_MS 5u
/* Frames pulled per look before the timers get a turn. */
#define SMR_FRAMES_PER_LOOK 16u
/* Event lines printed per second at most: the console is polled, and on
 * a real UART at 115,200 baud a line costs about 7 ms, so a flood of
 * refusals must not turn into a flood of lines. The rest are counted and
 * the count printed once a second. */
#define SMR_EVENTS_PER_S 10u
#define SMR_PROV_LEN 124u

extern const uint8_t smr_prov[SMR_PROV_LEN];

static volatile uint32_t smr_ms; /* SysTick's count since it started */
static uint32_t smr_ev_second, smr_ev_lines, smr_ev_dropped;
static uint32_t smr_rng = 2463534242u;

void smr_mcu_systick(void) { smr_ms++; }

static void smr_putc(char c) {
    while (UART0_FR & UART_FR_TXFF) {
    }
    UART0_DR = (uint32_t)(unsigned char)c;
}

static void smr_puts(const char *s) {
    while (*s) smr_putc(*s++);
}

static void smr_putu(uint32_t v) {
    char b[11];
    int k = 10;
    b[k] = 0;
    do b[--k] = (char)('0' + v % 10); while ((v /= 10) && k);
    smr_puts(b + k);
}

static void smr_put_ip(const uint8_t *a) {
    int i;
    for (i = 0; i < 4; i++) {
        if (i) smr_putc('.');
        smr_putu(a[i]);
    }
}

void smr_mcu_panic(const char *what, const char *file, int line) {
    __asm__ volatile("cpsid i");
    smr_puts(SMR_NAME ": panic: ");
    smr_puts(what);
    smr_puts(" at ");
    smr_puts(file);
    smr_putc(':');
    smr_putu((uint32_t)line);
    smr_puts("\r\n");
    for (;;) __asm__ volatile("wfi");
}

uint32_t smr_mcu_rand(void) {
    smr_rng ^= smr_rng << 13;
    smr_rng ^= smr_rng >> 17;
    smr_rng ^= smr_rng << 5;
    return smr_rng;
}

uint64_t smr_raw_clock(void) {
    uint32_t ms, v;
    do {
        ms = smr_ms;
        v = SYST_CVR;
    } while (ms != smr_ms);
    /* SysTick counts down from SMR_CPU_HZ / 1000 - 1 once per ms. */
    return (uint64_t)ms * 1000000u + (uint64_t)(SMR_CPU_HZ / 1000u - 1u - v) * (1000000000u / SMR_CPU_HZ);
}

u32_t sys_now(void) { return smr_ms; }

/* Prints how many event lines the last second did not print, once its
 * second is over; called with every event and from the loop. */
static void smr_event_second(void) {
    uint32_t second = smr_ms / 1000u;
    if (second == smr_ev_second) return;
    if (smr_ev_dropped) {
        smr_puts(SMR_NAME ": ");
        smr_putu(smr_ev_dropped);
        smr_puts(" more event lines not printed (at most 10 a second)\r\n");
    }
    smr_ev_second = second;
    smr_ev_lines = smr_ev_dropped = 0;
}

void smr_raw_event(const char *line) {
    smr_event_second();
    if (smr_ev_lines >= SMR_EVENTS_PER_S) {
        smr_ev_dropped++;
        return;
    }
    smr_ev_lines++;
    smr_puts(SMR_NAME ": ");
    smr_puts(line);
    smr_puts("\r\n");
}

static uint32_t smr_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(void) {
    static struct netif nif;
    static struct smr_admit adm;
    static struct smr_config cfg;
    const uint8_t *pv = smr_prov;
    uint8_t ip[4] = {198, 18, 16, 2}, mask[4] = {255, 255, 255, 0}, gw[4] = {198, 18, 16, 1}, seed[16] = {0};
    uint16_t port = SMR_DEFAULT_PORT;
    ip4_addr_t a, m, g;
    uint32_t next;
    int provisioned = memcmp(pv, "SMRP", 4) == 0 && pv[4] == 1 && pv[5] <= 64;

    SYST_RVR = SMR_CPU_HZ / 1000u - 1u;
    SYST_CVR = 0;
    SYST_CSR = 7; /* core clock, interrupt, enabled */
    smr_puts("\r\n" SMR_NAME " " SMR_VERSION ": LM3S6965, lwIP " LWIP_VERSION_STRING ", booting\r\n");
    smr_default_config(&cfg);
    if (provisioned) {
        port = (uint16_t)(pv[6] | pv[7] << 8);
        memcpy(ip, pv + 8, 4);
        memcpy(mask, pv + 12, 4);
        memcpy(gw, pv + 16, 4);
        memcpy(seed, pv + 20, 16);
        if (pv[5]) smr_auth_key(&cfg, pv + 36, pv[5]);
        cfg.max_test_s = smr_le32(pv + 100);
        cfg.max_tests_per_client = smr_le32(pv + 104);
        adm.max_cps = smr_le32(pv + 108);
        adm.max_idle = smr_le32(pv + 112);
        cfg.max_rate_bps = (uint64_t)smr_le32(pv + 116) | (uint64_t)smr_le32(pv + 120) << 32;
    } else {
        smr_puts(SMR_NAME ": not provisioned (no block at the end of flash): defaults\r\n");
    }
    smr_rng ^= smr_le32(seed) ^ smr_le32(seed + 4);
    if (!smr_rng) smr_rng = 1;
    IP4_ADDR(&a, ip[0], ip[1], ip[2], ip[3]);
    IP4_ADDR(&m, mask[0], mask[1], mask[2], mask[3]);
    IP4_ADDR(&g, gw[0], gw[1], gw[2], gw[3]);
    lwip_init();
    if (!netif_add(&nif, &a, &m, &g, NULL, smr_netif_init, netif_input))
        smr_mcu_panic("no Ethernet MAC", __FILE__, __LINE__);
    netif_set_default(&nif);
    netif_set_up(&nif);
    netif_set_link_up(&nif);
    if (smr_raw_start(&cfg, &adm, seed, port) != 0) smr_mcu_panic("cannot listen", __FILE__, __LINE__);
    smr_puts(SMR_NAME ": listening on tcp and udp ");
    smr_put_ip(ip);
    smr_putc(':');
    smr_putu(port);
    smr_puts(cfg.key_len ? ", secret required" : ", no secret");
    smr_puts(", ready ");
    smr_putu(smr_ms);
    smr_puts(" ms after reset\r\n");
    next = smr_ms + SMR_TIMER_MS;
    for (;;) {
        __asm__ volatile("cpsid i" ::: "memory");
        if (MAC_NP == 0 && (int32_t)(smr_ms - next) < 0) __asm__ volatile("wfi");
        __asm__ volatile("cpsie i" ::: "memory");
        while (smr_netif_poll(&nif, SMR_FRAMES_PER_LOOK) == SMR_FRAMES_PER_LOOK) sys_check_timeouts();
        sys_check_timeouts();
        if ((int32_t)(smr_ms - next) >= 0) {
            smr_event_second();
            smr_raw_timers();
            next = smr_ms + SMR_TIMER_MS;
        }
    }
}
