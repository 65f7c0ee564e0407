/*
 * floor_main.c - the bare-metal path floor's loop: stackmeter's UDP echo
 * (the `ping` test) answered with no stack, on an emulated board's NIC
 * behind a TAP device; one copy for QEMU's vexpress-a9 with its LAN9118
 * (a9/floor) and QEMU's virt with virtio-net (virt/floor).
 *
 * Why this exists: a system's round trip on such a board (Embox or Linux
 * on the Cortex-A9, NuttX or Linux on virt) is QEMU's NIC, the TAP device
 * and the host, plus its stack and responder. This is the first part
 * alone: each frame is pulled through the board's NIC (its driver behind
 * smr_nic.h) and answered in place by the same frame logic as the lab's
 * other floors (frame_echo.c, which bench/floor/nic_echo.c uses on the
 * TAP and AF_XDP paths; the LM3S6965's twin is firmware/mcu-smoltcp's
 * `floor`): ARP for its address, a version 1 echo request to its UDP port
 * 24680 turned into the reply, both responder times the receive time by
 * the board's clock; anything else dropped.
 *
 * The address comes from the word QEMU's loader writes into the board's
 * provisioning area (floor_board.h: floor_ip_word). Two builds of these
 * sources wait for frames in two ways (floor.mk):
 *   - polling (a9-floor, virt-floor): the core spins on the NIC, as a
 *     polling driver does; no interrupts;
 *   - interrupts (a9-floor-irq, virt-floor-irq, -DFLOOR_IRQ): the core
 *     sleeps in WFI until the NIC's receive interrupt reaches it through
 *     the GIC, as the systems it is the floor for idle, so that its round
 *     trip includes what QEMU costs to wake an idle vCPU. The interrupt
 *     is never taken as an exception (the CPSR masks IRQs, start.S): it
 *     only ends the WFI; the floor then acknowledges it at the GIC, clears
 *     its cause at the NIC, ends it, and reads every frame waiting before
 *     it sleeps again. The cause is cleared before the NIC is read, so a
 *     frame that comes after the last read raises the line again and the
 *     next WFI returns at once: no wake-up is missed.
 * Once up it prints one line on the console,
 *   floor: answering udp A.B.C.D:24680 with no stack..., ready
 * (the board's words for the build after "no stack": board.h's
 * FLOOR_READY_POLL, FLOOR_READY_IRQ) and answers forever.
 */
#include "floor_board.h"
#include "frame_echo.h"
#include "smr_nic.h"

#include <stddef.h>

#ifdef FLOOR_IRQ
#define FLOOR_MODE FLOOR_READY_IRQ
#else
#define FLOOR_MODE FLOOR_READY_POLL
#endif

/* The address word as bytes, a.b.c.d: 0 when none was written. */
static int floor_address(uint8_t ip[4]) {
    uint32_t w = floor_ip_word;
    int i;
    for (i = 0; i < 4; i++) ip[i] = (uint8_t)(w >> (24 - 8 * i));
    return w != 0;
}

static void floor_ready(const uint8_t ip[4]) {
    int i;
    floor_say("floor: answering udp ");
    for (i = 0; i < 4; i++) {
        floor_say_uint(ip[i]);
        floor_say(i < 3 ? "." : ":");
    }
    floor_say_uint(FRAME_ECHO_PORT);
    floor_say(" with no stack" FLOOR_MODE ", ready\n");
}

/* One frame, if one is waiting: read it, answer it. 1 when there was
 * one, 0 when none was waiting. */
static int floor_poll(uint8_t *f, const uint8_t mac[6], const uint8_t ip[4]) {
    size_t len = smr_nic_rx_len();
    uint64_t rx;
    if (len == 0) return 0;
    rx = floor_now_ns();
    smr_nic_rx_read(f, len);
    smr_nic_rx_done();
    len = frame_echo(f, len, mac, ip, FRAME_ECHO_PORT, rx);
    if (len != 0 && smr_nic_tx_begin(len) == 0) {
        smr_nic_tx_write(f, len);
        (void)smr_nic_tx_end();
    }
    return 1;
}

#ifdef FLOOR_IRQ
/* Sleeps until the NIC's interrupt comes, then takes it: acknowledged at
 * the GIC, its cause cleared at the NIC (before the end of interrupt, or
 * the still-high line would make it pending again), ended. */
static void floor_sleep(void) {
    uint32_t iar = floor_irq_wait();
    floor_nic_irq_clear();
    floor_irq_done(iar);
}
#endif

int main(void) {
    static uint8_t f[SMR_NIC_FRAME_MAX];
    uint8_t mac[6], ip[4];
    floor_console_init();
    floor_clock_start();
    if (!floor_address(ip)) {
        floor_say("floor: " FLOOR_NO_ADDR ", stopped\n");
        return 1;
    }
    if (smr_nic_open(NULL, mac) != 0) {
        floor_say("floor: " FLOOR_NO_NIC ", stopped\n");
        return 1;
    }
#ifdef FLOOR_IRQ
    /* The NIC's line raised first: the GIC then lets it through. */
    floor_irq_enable(floor_nic_irq_on());
    floor_ready(ip);
    for (;;) {
        while (floor_poll(f, mac, ip)) {
        }
        floor_sleep();
    }
#else
    floor_ready(ip);
    for (;;) (void)floor_poll(f, mac, ip);
#endif
}
