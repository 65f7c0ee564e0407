/*
 * floor.c - the virt path floor: stackmeter's UDP echo (the `ping` test)
 * answered with no stack, on QEMU's virt machine with its virtio-net
 * device behind a TAP device.
 *
 * Why this exists: a system's round trip on this board (NuttX, Linux:
 * virt/virt.mk) is QEMU's virtio-net, the TAP device and the host, plus
 * its stack and responder. This is the first part alone, as
 * a9/floor/floor.c is on vexpress-a9's LAN9118: each frame is pulled
 * through the board's NIC (virtio_net.c, behind smr_nic.h) and answered
 * in place by the same frame logic as the lab's other floors
 * (c-responder/floor/frame_echo.c): ARP for its address, a version 1 echo
 * request to its UDP port 24680 turned into the reply, both responder
 * times the receive time by the architected timer; anything else
 * dropped.
 *
 * The address comes from the word QEMU's loader writes 1 MiB into RAM
 * (virt.h: virt_ip). Two builds of these sources wait for frames in two
 * ways (floor.mk):
 *   - polling (virt-floor): the core spins on the used ring, as a polling
 *     driver does; no interrupts;
 *   - interrupts (virt-floor-irq, -DVIRT_FLOOR_IRQ): the core sleeps in
 *     WFI until the device's interrupt reaches it through the GIC, as the
 *     systems it is the floor for idle. The interrupt is never taken as
 *     an exception: it only ends the WFI; the floor then acknowledges it
 *     at the GIC, at the device (InterruptACK), ends it, and reads every
 *     frame waiting before it sleeps again. The device's cause is
 *     cleared before the ring is read, so a frame that comes after the
 *     last read raises the line again and the next WFI returns at once.
 * Once up it prints one line on the console,
 *   floor: answering udp A.B.C.D:24680 with no stack (virtio-net), ready
 * (with ", interrupts" after virtio-net in the interrupt build) and
 * answers forever.
 */
#include "frame_echo.h"
#include "smr_nic.h"
#include "virt.h"

#include <stddef.h>

#ifdef VIRT_FLOOR_IRQ
#define FLOOR_MODE " (virtio-net, interrupts)"
#else
#define FLOOR_MODE " (virtio-net)"
#endif

/* The address word as bytes, a.b.c.d: 0 when none was written. */
static int floor_address(uint8_t ip[4]) {
    uint32_t w = virt_ip();
    int i;
    for (i = 0; i < 4; i++) ip[i] = (uint8_t)(w >> (24 - 8 * i));
    return w != 0;
}

static void floor_ready(const uint8_t ip[4]) {
    int i;
    virt_say("floor: answering udp ");
    for (i = 0; i < 4; i++) {
        virt_say_uint(ip[i]);
        virt_say(i < 3 ? "." : ":");
    }
    virt_say_uint(FRAME_ECHO_PORT);
    virt_say(" with no stack" FLOOR_MODE ", ready\n");
}

/* One frame, if one is waiting: read it, answer it. 1 when there was
 * one, 0 when none was waiting. */
static int floor_poll(uint8_t *f, const uint8_t mac[6], const uint8_t ip[4]) {
    size_t len = smr_nic_rx_len();
    uint64_t rx;
    if (len == 0) return 0;
    rx = virt_now_ns();
    smr_nic_rx_read(f, len);
    smr_nic_rx_done();
    len = frame_echo(f, len, mac, ip, FRAME_ECHO_PORT, rx);
    if (len != 0 && smr_nic_tx_begin(len) == 0) {
        smr_nic_tx_write(f, len);
        (void)smr_nic_tx_end();
    }
    return 1;
}

#ifdef VIRT_FLOOR_IRQ
/* Sleeps until the device's interrupt comes, then takes it: acknowledged
 * at the GIC, at the device (before the end of interrupt, or the
 * still-high line would make it pending again), ended. */
static void floor_sleep(void) {
    uint32_t iar = virt_irq_wait();
    virtio_net_irq_clear();
    virt_irq_done(iar);
}
#endif

int main(void) {
    static uint8_t f[SMR_NIC_FRAME_MAX];
    uint8_t mac[6], ip[4];
    virt_console_init();
    if (!floor_address(ip)) {
        virt_say("floor: no address at 0x40100000 (-device loader,addr=0x40100000,data=0xC6121602,data-len=4 "
                 "is 198.18.22.2), stopped\n");
        return 1;
    }
    if (smr_nic_open(NULL, mac) != 0) {
        virt_say("floor: no virtio-net device on the virtio-mmio transports at 0x0a000000 "
                 "(-nic tap,...,model=virtio-net-device), stopped\n");
        return 1;
    }
#ifdef VIRT_FLOOR_IRQ
    virt_irq_enable(virtio_net_irq());
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
