/*
 * floor.c - the Cortex-A9 path floor: stackmeter's UDP echo (the `ping`
 * test) answered with no stack, on QEMU's vexpress-a9 with its emulated
 * SMSC LAN9118 behind a TAP device.
 *
 * Why this exists: a firmware's round trip on this board is QEMU's
 * LAN9118, the TAP device and the host, plus its stack and responder.
 * This is the first part alone: each frame is pulled through the board's
 * NIC (lan9118.c, behind smr_nic.h) and answered in place by the same
 * frame logic as the lab's other floors (c-responder/floor/frame_echo.c, which
 * bench/floor/nic_echo.c uses on the TAP and AF_XDP paths; the LM3S6965's
 * twin is firmware/mcu-smoltcp's `floor`): ARP for its address, a version
 * 1 echo request to its UDP port 24680 turned into the reply, both
 * responder times the receive time by the Cortex-A9 global timer;
 * anything else dropped.
 *
 * The address comes from the word QEMU's loader writes at the start of
 * RAM (a9.h: a9_ip). Two builds of these sources wait for frames in two
 * ways (floor.mk):
 *   - polling (a9-floor): the core spins on the NIC, as a polling driver
 *     does; no interrupts;
 *   - interrupts (a9-floor-irq, -DA9_FLOOR_IRQ): the core sleeps in WFI
 *     until the NIC's receive interrupt reaches it through the GIC, as
 *     the systems it is the floor for (Embox, Linux) idle, so that its
 *     round trip includes what QEMU costs to wake an idle vCPU. The
 *     interrupt is never taken as an exception (the CPSR masks IRQs,
 *     start.S): it only ends the WFI; the floor then acknowledges it at
 *     the GIC, clears its cause at the NIC, ends it, and reads every frame
 *     waiting before it sleeps again. The cause is cleared before the
 *     FIFO is read, so a frame that comes after the last read raises the
 *     line again and the next WFI returns at once: no wake-up is missed.
 * Once up it prints one line on the console,
 *   floor: answering udp A.B.C.D:24680 with no stack, ready
 * (polling) or
 *   floor: answering udp A.B.C.D:24680 with no stack (interrupts), ready
 * and answers forever.
 */
#include "a9.h"
#include "frame_echo.h"
#include "smr_nic.h"

#include <stddef.h>

#ifdef A9_FLOOR_IRQ
#define FLOOR_MODE " (interrupts)"
#else
#define FLOOR_MODE ""
#endif

/* The address word as bytes, a.b.c.d: 0 when none was written. */
static int floor_address(uint8_t ip[4]) {
    uint32_t w = a9_ip();
    int i;
    for (i = 0; i < 4; i++) ip[i] = (uint8_t)(w >> (24 - 8 * i));
    return w != 0;
}

static void floor_ready(const uint8_t ip[4]) {
    int i;
    a9_say("floor: answering udp ");
    for (i = 0; i < 4; i++) {
        a9_say_uint(ip[i]);
        a9_say(i < 3 ? "." : ":");
    }
    a9_say_uint(FRAME_ECHO_PORT);
    a9_say(" with no stack" FLOOR_MODE ", ready\n");
}

/* One frame, if one is waiting: read it, answer it. 1 when there was
 * one, 0 when none was waiting. */
static int floor_poll(uint8_t *f, const uint8_t mac[6], const uint8_t ip[4]) {
    size_t len = smr_nic_rx_len();
    uint64_t rx;
    if (len == 0) return 0;
    rx = a9_now_ns();
    smr_nic_rx_read(f, len);
    smr_nic_rx_done();
    len = frame_echo(f, len, mac, ip, FRAME_ECHO_PORT, rx);
    if (len != 0 && smr_nic_tx_begin(len) == 0) {
        smr_nic_tx_write(f, len);
        (void)smr_nic_tx_end();
    }
    return 1;
}

#ifdef A9_FLOOR_IRQ
/* The NIC's receive interrupt, from the chip through the GIC to core 0. */
static void floor_irq_start(void) {
    lan9118_rx_irq_on();
    a9_irq_enable(A9_IRQ_LAN9118);
}

/* Sleeps until the interrupt comes, then takes it: acknowledged at the
 * GIC, its cause cleared at the NIC (before the end of interrupt, or the
 * still-high line would make it pending again), ended. */
static void floor_sleep(void) {
    uint32_t iar = a9_irq_wait();
    lan9118_rx_irq_clear();
    a9_irq_done(iar);
}
#endif

int main(void) {
    static uint8_t f[SMR_NIC_FRAME_MAX];
    uint8_t mac[6], ip[4];
    a9_console_init();
    a9_timer_start();
    if (!floor_address(ip)) {
        a9_say("floor: no address at 0x60000000 (-device loader,addr=0x60000000,data=0xC6121802,data-len=4 "
               "is 198.18.24.2), stopped\n");
        return 1;
    }
    if (smr_nic_open(NULL, mac) != 0) {
        a9_say("floor: the LAN9118 at 0x4e000000 does not answer, stopped\n");
        return 1;
    }
#ifdef A9_FLOOR_IRQ
    floor_irq_start();
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
