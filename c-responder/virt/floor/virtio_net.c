/*
 * virtio_net.c - QEMU virt's virtio-net device on a virtio-mmio transport
 * as the controller of smr_nic.h, polled; and its interrupt, which the
 * floor's interrupt build sleeps on (floor_board.h).
 *
 * Why this exists: the virt path floor must pull its frames through the
 * NIC that NuttX and Linux use on this board (virtio-net, -nic
 * ...,model=virtio-net-device), so that its round trip is QEMU's
 * virtio-net and the TAP device and nothing more. Written against the
 * virtio 1.2 specification behind the lab's own driver interface
 * (c-responder/src/smr_nic.h), as a9/floor/lan9118.c is for the LAN9118.
 *
 * The device: smr_nic_open reads each of the 32 transports' magic
 * ("virt") and DeviceID and takes the first whose device is a network
 * card (1). QEMU 7.2's transports are legacy (Version 1) unless
 * -global virtio-mmio.force-legacy=false makes them modern (Version 2):
 * both are driven, the differences being three: the feature VERSION_1
 * (bit 32) is accepted and FEATURES_OK set only on a modern one; a
 * legacy queue is one page-aligned area given by its page number
 * (QueuePFN, with GuestPageSize and QueueAlign 4096), a modern one three
 * addresses and QueueReady; the header before each frame is 10 bytes on
 * a legacy device and 12 on a modern one (num_buffers). Only the MAC
 * feature is asked for: no checksum offload, no merged buffers, no event
 * index, so every frame is one buffer and the device interrupts (when it
 * does) on every frame received.
 *
 * The queues: receive (0) and send (1), VQ_N descriptors each, one
 * buffer of a frame's size a descriptor, laid out as a legacy device
 * wants (the descriptors, the available ring, the used ring on the next
 * page), which a modern one takes too. All of receive's buffers are
 * offered at open; each frame's buffer is offered again when the floor
 * is done with it. Send uses its descriptors in turn, waiting (bounded)
 * for the device to return one when all are out; send's interrupt is
 * turned off (VRING_AVAIL_F_NO_INTERRUPT), so only a received frame
 * raises the line. The MMU is off, so memory is strongly ordered and
 * uncached: the device sees each store in program order once it is
 * made; the compiler is kept from reordering by volatile accesses to
 * the rings, and a DSB precedes each notification.
 */
#include "floor_board.h"
#include "smr_nic.h"

#include <string.h>

#define VIRTIO_BASE 0x0a000000u
#define VIRTIO_STRIDE 0x200u
#define VIRTIO_COUNT 32u
#define MMIO_MAGIC 0x000
#define MMIO_VERSION 0x004
#define MMIO_DEVICE_ID 0x008
#define MMIO_DEVICE_FEATURES 0x010
#define MMIO_DEVICE_FEATURES_SEL 0x014
#define MMIO_DRIVER_FEATURES 0x020
#define MMIO_DRIVER_FEATURES_SEL 0x024
#define MMIO_GUEST_PAGE_SIZE 0x028 /* legacy */
#define MMIO_QUEUE_SEL 0x030
#define MMIO_QUEUE_NUM_MAX 0x034
#define MMIO_QUEUE_NUM 0x038
#define MMIO_QUEUE_ALIGN 0x03c /* legacy */
#define MMIO_QUEUE_PFN 0x040   /* legacy */
#define MMIO_QUEUE_READY 0x044 /* modern */
#define MMIO_QUEUE_NOTIFY 0x050
#define MMIO_INTERRUPT_STATUS 0x060
#define MMIO_INTERRUPT_ACK 0x064
#define MMIO_STATUS 0x070
#define MMIO_QUEUE_DESC_LOW 0x080 /* modern, and the five after it */
#define MMIO_QUEUE_DESC_HIGH 0x084
#define MMIO_QUEUE_DRIVER_LOW 0x090
#define MMIO_QUEUE_DRIVER_HIGH 0x094
#define MMIO_QUEUE_DEVICE_LOW 0x0a0
#define MMIO_QUEUE_DEVICE_HIGH 0x0a4
#define MMIO_CONFIG 0x100 /* virtio-net's: the MAC first */

#define VIRTIO_MAGIC 0x74726976u /* "virt" */
#define VIRTIO_ID_NET 1u
#define STATUS_ACKNOWLEDGE 1u
#define STATUS_DRIVER 2u
#define STATUS_DRIVER_OK 4u
#define STATUS_FEATURES_OK 8u
#define NET_F_MAC (1u << 5)
#define F_VERSION_1_HIGH (1u << 0) /* bit 32: the second features word's bit 0 */
#define DESC_F_WRITE 2u
#define AVAIL_F_NO_INTERRUPT 1u
#define USED_F_NO_NOTIFY 1u

#define PAGE 4096u
#define VQ_N 16u
#define RXQ 0u
#define TXQ 1u
#define HDR_LEGACY 10u
#define HDR_MODERN 12u
#define BUF_SIZE 1536u /* the largest header and frame, rounded up */
#define TX_WAIT 1000000u

struct vq_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};

struct vq_used_elem {
    uint32_t id;
    uint32_t len;
};

/* One queue in the legacy layout: the used ring on the page after. */
struct vq {
    struct vq_desc desc[VQ_N];
    uint16_t avail_flags;
    uint16_t avail_idx;
    uint16_t avail_ring[VQ_N];
    uint16_t used_event;
    uint8_t pad[PAGE - sizeof(struct vq_desc) * VQ_N - 2u * (3u + VQ_N)];
    uint16_t used_flags;
    uint16_t used_idx;
    struct vq_used_elem used_ring[VQ_N];
    uint16_t avail_event;
} __attribute__((aligned(4096)));

static struct vq rxq, txq;
static uint8_t rx_buf[VQ_N][BUF_SIZE] __attribute__((aligned(8)));
static uint8_t tx_buf[VQ_N][BUF_SIZE] __attribute__((aligned(8)));

static struct {
    uint32_t base;
    uint32_t version;
    uint32_t hdr;
    uint32_t irq;
    uint16_t rx_last;  /* used entries of receive taken */
    int rx_have;       /* a frame taken and not yet done */
    uint16_t rx_id;    /* its descriptor */
    uint32_t rx_len;   /* its length, the header excluded */
    uint32_t rx_off;   /* bytes of it read */
    uint16_t tx_slot;  /* the descriptor being filled */
    uint32_t tx_len;   /* its frame's length */
    uint32_t tx_off;   /* bytes of it written */
} nic;

#define MMIO(off) FLOOR_REG(nic.base + (off))
#define V16(p) (*(volatile uint16_t *)(p))
#define V32(p) (*(volatile uint32_t *)(p))

static void barrier(void) { __asm__ volatile("dsb" ::: "memory"); }

/* The first transport with a network card behind it, 0 if none. */
static uint32_t find_net(void) {
    uint32_t i;
    for (i = 0; i < VIRTIO_COUNT; i++) {
        uint32_t b = VIRTIO_BASE + i * VIRTIO_STRIDE;
        if (FLOOR_REG(b + MMIO_MAGIC) == VIRTIO_MAGIC && FLOOR_REG(b + MMIO_DEVICE_ID) == VIRTIO_ID_NET) {
            nic.irq = VIRT_IRQ_VIRTIO0 + i;
            return b;
        }
    }
    return 0;
}

/* Features: the MAC, and VERSION_1 on a modern device. 0, or -1 when the
 * device lacks what is needed or refuses them. */
static int negotiate(void) {
    uint32_t hi;
    MMIO(MMIO_DEVICE_FEATURES_SEL) = 1;
    hi = MMIO(MMIO_DEVICE_FEATURES);
    MMIO(MMIO_DEVICE_FEATURES_SEL) = 0;
    if (!(MMIO(MMIO_DEVICE_FEATURES) & NET_F_MAC)) return -1;
    MMIO(MMIO_DRIVER_FEATURES_SEL) = 0;
    MMIO(MMIO_DRIVER_FEATURES) = NET_F_MAC;
    if (nic.version == 1) return 0;
    if (!(hi & F_VERSION_1_HIGH)) return -1;
    MMIO(MMIO_DRIVER_FEATURES_SEL) = 1;
    MMIO(MMIO_DRIVER_FEATURES) = F_VERSION_1_HIGH;
    MMIO(MMIO_STATUS) = STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_FEATURES_OK;
    return (MMIO(MMIO_STATUS) & STATUS_FEATURES_OK) ? 0 : -1;
}

/* Gives queue n (its memory q) to the device. 0, or -1 when it is smaller
 * than VQ_N. */
static int queue_setup(uint32_t n, struct vq *q) {
    uint32_t a = (uint32_t)(uintptr_t)q;
    MMIO(MMIO_QUEUE_SEL) = n;
    if (MMIO(MMIO_QUEUE_NUM_MAX) < VQ_N) return -1;
    MMIO(MMIO_QUEUE_NUM) = VQ_N;
    if (nic.version == 1) {
        MMIO(MMIO_QUEUE_ALIGN) = PAGE;
        MMIO(MMIO_QUEUE_PFN) = a / PAGE;
        return 0;
    }
    MMIO(MMIO_QUEUE_DESC_LOW) = a;
    MMIO(MMIO_QUEUE_DESC_HIGH) = 0;
    MMIO(MMIO_QUEUE_DRIVER_LOW) = (uint32_t)(uintptr_t)&q->avail_flags;
    MMIO(MMIO_QUEUE_DRIVER_HIGH) = 0;
    MMIO(MMIO_QUEUE_DEVICE_LOW) = (uint32_t)(uintptr_t)&q->used_flags;
    MMIO(MMIO_QUEUE_DEVICE_HIGH) = 0;
    MMIO(MMIO_QUEUE_READY) = 1;
    return 0;
}

/* Tells the device that queue n has new buffers, unless it said it does
 * not want to be told. */
static void notify(uint32_t n, const struct vq *q) {
    barrier();
    if (!(V16(&q->used_flags) & USED_F_NO_NOTIFY)) MMIO(MMIO_QUEUE_NOTIFY) = n;
}

/* Offers receive buffer id to the device. */
static void rx_offer(uint16_t id) {
    uint16_t i = V16(&rxq.avail_idx);
    V16(&rxq.avail_ring[i % VQ_N]) = id;
    barrier();
    V16(&rxq.avail_idx) = (uint16_t)(i + 1u);
}

static void rings_init(void) {
    uint16_t i;
    memset(&rxq, 0, sizeof rxq);
    memset(&txq, 0, sizeof txq);
    for (i = 0; i < VQ_N; i++) {
        rxq.desc[i].addr = (uint32_t)(uintptr_t)rx_buf[i];
        rxq.desc[i].len = BUF_SIZE;
        rxq.desc[i].flags = DESC_F_WRITE;
        txq.desc[i].addr = (uint32_t)(uintptr_t)tx_buf[i];
        rx_offer(i);
    }
    txq.avail_flags = AVAIL_F_NO_INTERRUPT;
}

int smr_nic_open(const char *name, uint8_t mac[6]) {
    int i;
    (void)name;
    memset(&nic, 0, sizeof nic);
    nic.base = find_net();
    if (nic.base == 0) return -1;
    nic.version = MMIO(MMIO_VERSION);
    if (nic.version != 1 && nic.version != 2) return -1;
    nic.hdr = nic.version == 1 ? HDR_LEGACY : HDR_MODERN;
    MMIO(MMIO_STATUS) = 0; /* reset */
    MMIO(MMIO_STATUS) = STATUS_ACKNOWLEDGE;
    MMIO(MMIO_STATUS) = STATUS_ACKNOWLEDGE | STATUS_DRIVER;
    if (negotiate() != 0) return -1;
    if (nic.version == 1) MMIO(MMIO_GUEST_PAGE_SIZE) = PAGE;
    rings_init();
    if (queue_setup(RXQ, &rxq) != 0 || queue_setup(TXQ, &txq) != 0) return -1;
    for (i = 0; i < 6; i++) mac[i] = *(volatile uint8_t *)(uintptr_t)(nic.base + MMIO_CONFIG + (uint32_t)i);
    MMIO(MMIO_STATUS) = MMIO(MMIO_STATUS) | STATUS_DRIVER_OK;
    notify(RXQ, &rxq);
    return 0;
}

size_t smr_nic_rx_len(void) {
    while (!nic.rx_have && V16(&rxq.used_idx) != nic.rx_last) {
        const volatile struct vq_used_elem *e = &rxq.used_ring[nic.rx_last % VQ_N];
        uint32_t len = e->len;
        nic.rx_id = (uint16_t)e->id;
        nic.rx_last++;
        len = len > nic.hdr ? len - nic.hdr : 0;
        if (len < SMR_NIC_FRAME_MIN || len > SMR_NIC_FRAME_MAX || nic.rx_id >= VQ_N) {
            if (nic.rx_id < VQ_N) rx_offer(nic.rx_id);
            continue;
        }
        nic.rx_have = 1;
        nic.rx_len = len;
        nic.rx_off = 0;
    }
    return nic.rx_have ? nic.rx_len : 0;
}

void smr_nic_rx_read(void *dst, size_t n) {
    if (!nic.rx_have) return;
    if (n > nic.rx_len - nic.rx_off) n = nic.rx_len - nic.rx_off;
    memcpy(dst, rx_buf[nic.rx_id] + nic.hdr + nic.rx_off, n);
    nic.rx_off += (uint32_t)n;
}

void smr_nic_rx_done(void) {
    if (!nic.rx_have) return;
    nic.rx_have = 0;
    rx_offer(nic.rx_id);
    notify(RXQ, &rxq);
}

int smr_nic_tx_begin(size_t len) {
    uint32_t waited = 0;
    if (len > SMR_NIC_FRAME_MAX) return -1;
    /* A descriptor is free when fewer than VQ_N are out. */
    while ((uint16_t)(V16(&txq.avail_idx) - V16(&txq.used_idx)) >= VQ_N) {
        if (++waited == TX_WAIT) return -1;
    }
    nic.tx_slot = (uint16_t)(V16(&txq.avail_idx) % VQ_N);
    memset(tx_buf[nic.tx_slot], 0, nic.hdr);
    nic.tx_len = (uint32_t)len;
    nic.tx_off = 0;
    return 0;
}

void smr_nic_tx_write(const void *src, size_t n) {
    if (n > nic.tx_len - nic.tx_off) n = nic.tx_len - nic.tx_off;
    memcpy(tx_buf[nic.tx_slot] + nic.hdr + nic.tx_off, src, n);
    nic.tx_off += (uint32_t)n;
}

int smr_nic_tx_end(void) {
    uint16_t i = V16(&txq.avail_idx);
    V32(&txq.desc[nic.tx_slot].len) = nic.hdr + nic.tx_len;
    V16(&txq.desc[nic.tx_slot].flags) = 0;
    V16(&txq.avail_ring[i % VQ_N]) = nic.tx_slot;
    barrier();
    V16(&txq.avail_idx) = (uint16_t)(i + 1u);
    notify(TXQ, &txq);
    return 0;
}

int smr_nic_fd(void) { return -1; }

/* The device raises its line on every frame received from open on (send's
 * interrupt is off): nothing to turn on. */
uint32_t floor_nic_irq_on(void) { return nic.irq; }

void floor_nic_irq_clear(void) { MMIO(MMIO_INTERRUPT_ACK) = MMIO(MMIO_INTERRUPT_STATUS); }
