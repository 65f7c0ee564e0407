/*
 * lan9118.c - the SMSC LAN9118 (vexpress-a9's Ethernet controller, at
 * 0x4e000000) as the controller of smr_nic.h, polled; and its receive
 * interrupt, which the floor's interrupt build sleeps on (floor_board.h).
 *
 * Why this exists: the Cortex-A9 path floor must pull its frames through
 * the NIC a firmware on this board would use, so that its round trip is
 * QEMU's LAN9118 and the TAP device and nothing more. Written against the
 * data sheet's registers behind the lab's own driver interface
 * (c-responder/src/smr_nic.h, as mcu/smr_nic_stellaris.c is for the
 * LM3S6965), so a stack on this board can use it unchanged.
 *
 * The chip moves frames through 32-bit FIFO ports, no DMA. Receive: the
 * RX status FIFO holds one word per frame (RX_FIFO_INF counts them), its
 * bits 29:16 the frame's length with the 4-byte FCS; the frame comes out
 * of the RX data FIFO as that many bytes rounded up to whole words, first
 * byte in the low byte of the first word. Send: two command words (A: the
 * buffer's size, first and last segment; B: the frame's length), then the
 * frame in words the same way; the chip adds the FCS. Each sent frame
 * leaves a status word, dropped here. The MAC's own registers (MAC_CR,
 * the address) sit behind MAC_CSR_CMD/MAC_CSR_DATA.
 *
 * Frames are moved byte-exactly through a one-word stash each way, so the
 * caller's buffer needs no alignment (the MMU is off: an unaligned word
 * would fault). Every wait on the chip is bounded.
 *
 * The interrupt: smr_nic_open leaves every source disabled (the polling
 * build). floor_nic_irq_on enables one, RSFL (the RX status FIFO holds
 * more status words than FIFO_INT's level, 0 after reset: a frame is
 * waiting), and the IRQ pin as an active-high push-pull output. Those two
 * IRQ_CFG bits matter on QEMU: its model drives the line inverted (high
 * when nothing is pending) unless both are set. The cause stays set in
 * INT_STS, and the line high, until written back as 1
 * (floor_nic_irq_clear), whatever the FIFO holds then.
 */
#include "floor_board.h"
#include "smr_nic.h"

#define LAN9118 0x4e000000u
#define LAN(off) FLOOR_REG(LAN9118 + (off))
#define RX_DATA_FIFO 0x00
#define TX_DATA_FIFO 0x20
#define RX_STATUS_FIFO 0x40
#define TX_STATUS_FIFO 0x48
#define IRQ_CFG 0x54
#define INT_STS 0x58
#define INT_EN 0x5c
#define BYTE_TEST 0x64
#define TX_CFG 0x70
#define HW_CFG 0x74
#define RX_FIFO_INF 0x7c
#define TX_FIFO_INF 0x80
#define PMT_CTRL 0x84
#define MAC_CSR_CMD 0xa4
#define MAC_CSR_DATA 0xa8

#define BYTE_TEST_VALUE 0x87654321u
#define HW_CFG_SRST (1u << 0)
#define PMT_CTRL_READY (1u << 0)
#define TX_CFG_TX_ON (1u << 1)
#define TX_CFG_TXSAO (1u << 2) /* a full TX status FIFO does not stop sending */
#define RX_FIFO_INF_RXSUSED(v) (((v) >> 16) & 0xffu)
#define TX_FIFO_INF_TXSUSED(v) (((v) >> 16) & 0xffu)
#define TX_FIFO_INF_TDFREE(v) ((v) & 0xffffu)
#define RX_STS_ES (1u << 15) /* error summary */
#define RX_STS_LEN(v) (((v) >> 16) & 0x3fffu)
#define TX_CMD_A_FIRST (1u << 13)
#define TX_CMD_A_LAST (1u << 12)
#define MAC_CSR_BUSY (1u << 31)
#define IRQ_CFG_EN (1u << 8)   /* the IRQ pin follows INT_STS & INT_EN */
#define IRQ_CFG_POL (1u << 4)  /* active high */
#define IRQ_CFG_TYPE (1u << 0) /* push-pull */
#define INT_RSFL (1u << 3)     /* INT_STS, INT_EN: RX status FIFO level */
#define MAC_CSR_READ (1u << 30)

/* MAC registers (MAC_CSR_CMD's index) and MAC_CR's bits. */
#define MAC_CR 1u
#define MAC_ADDRH 2u
#define MAC_ADDRL 3u
#define MAC_CR_FDPX (1u << 20)
#define MAC_CR_TXEN (1u << 3)
#define MAC_CR_RXEN (1u << 2)

#define LAN_FCS 4u
/* How many times a register is read before the chip is given up on. */
#define LAN_SPIN 100000u

static struct {
    size_t len, off;   /* the frame being read (FCS excluded): its length, bytes given */
    uint32_t words;    /* RX data FIFO words of that frame not yet read */
    uint32_t stash;    /* bytes of the last word read, not yet given */
    unsigned stash_n;
    size_t tx_left;    /* bytes of the frame being sent still to come */
    uint32_t acc;      /* the word being assembled for the TX data FIFO */
    unsigned acc_n;
} lan;

/* Waits until (register & mask) == want: 0, or -1 when it never did. */
static int lan_wait(uint32_t off, uint32_t mask, uint32_t want) {
    uint32_t spin;
    for (spin = 0; spin < LAN_SPIN; spin++) {
        if ((LAN(off) & mask) == want) return 0;
    }
    return -1;
}

static int lan_mac_read(uint32_t reg, uint32_t *v) {
    LAN(MAC_CSR_CMD) = MAC_CSR_BUSY | MAC_CSR_READ | reg;
    if (lan_wait(MAC_CSR_CMD, MAC_CSR_BUSY, 0) != 0) return -1;
    *v = LAN(MAC_CSR_DATA);
    return 0;
}

static int lan_mac_write(uint32_t reg, uint32_t v) {
    LAN(MAC_CSR_DATA) = v;
    LAN(MAC_CSR_CMD) = MAC_CSR_BUSY | reg;
    return lan_wait(MAC_CSR_CMD, MAC_CSR_BUSY, 0);
}

/* Soft reset: SRST clears itself, then the chip says it is ready. */
static int lan_reset(void) {
    LAN(HW_CFG) = HW_CFG_SRST;
    if (lan_wait(HW_CFG, HW_CFG_SRST, 0) != 0) return -1;
    return lan_wait(PMT_CTRL, PMT_CTRL_READY, PMT_CTRL_READY);
}

/* The address the chip has (QEMU's -nic ...,mac=, or its EEPROM's). */
static int lan_mac_address(uint8_t mac[6]) {
    uint32_t lo, hi;
    int i;
    if (lan_mac_read(MAC_ADDRL, &lo) != 0 || lan_mac_read(MAC_ADDRH, &hi) != 0) return -1;
    for (i = 0; i < 4; i++) mac[i] = (uint8_t)(lo >> (8 * i));
    mac[4] = (uint8_t)hi;
    mac[5] = (uint8_t)(hi >> 8);
    return 0;
}

int smr_nic_open(const char *name, uint8_t mac[6]) {
    (void)name;
    if (LAN(BYTE_TEST) != BYTE_TEST_VALUE || lan_reset() != 0) return -1;
    LAN(INT_EN) = 0;
    LAN(INT_STS) = 0xffffffffu;
    if (lan_mac_address(mac) != 0) return -1;
    /* Receive what is sent to this address and broadcasts (not
     * promiscuous, which is where QEMU's model starts); full duplex. */
    if (lan_mac_write(MAC_CR, MAC_CR_FDPX | MAC_CR_TXEN | MAC_CR_RXEN) != 0) return -1;
    LAN(TX_CFG) = TX_CFG_TX_ON | TX_CFG_TXSAO;
    return 0;
}

/* Called before the GIC lets the interrupt through (floor_irq_enable):
 * until IRQ_CFG is written QEMU's line is high, which the GIC would take
 * for a pending interrupt. Any cause already set is cleared first. */
uint32_t floor_nic_irq_on(void) {
    LAN(IRQ_CFG) = IRQ_CFG_EN | IRQ_CFG_POL | IRQ_CFG_TYPE;
    LAN(INT_STS) = INT_RSFL;
    LAN(INT_EN) = INT_RSFL;
    return A9_IRQ_LAN9118;
}

void floor_nic_irq_clear(void) { LAN(INT_STS) = INT_RSFL; }

static uint32_t lan_rx_word(void) {
    if (lan.words == 0) return 0;
    lan.words--;
    return LAN(RX_DATA_FIFO);
}

/* Done with the frame: whatever of it is left in the FIFO is read away. */
void smr_nic_rx_done(void) {
    while (lan.words != 0) (void)lan_rx_word();
    lan.len = 0;
    lan.stash_n = 0;
}

size_t smr_nic_rx_len(void) {
    while (lan.len == 0 && RX_FIFO_INF_RXSUSED(LAN(RX_FIFO_INF)) != 0) {
        uint32_t st = LAN(RX_STATUS_FIFO);
        size_t n = RX_STS_LEN(st);
        lan.words = (uint32_t)(n + 3) / 4;
        lan.off = 0;
        if ((st & RX_STS_ES) == 0 && n >= SMR_NIC_FRAME_MIN + LAN_FCS && n <= SMR_NIC_FRAME_MAX + LAN_FCS)
            lan.len = n - LAN_FCS;
        else
            smr_nic_rx_done();
    }
    return lan.len;
}

void smr_nic_rx_read(void *dst, size_t n) {
    uint8_t *d = dst;
    if (n > lan.len - lan.off) n = lan.len - lan.off;
    lan.off += n;
    for (; n > 0; n--) {
        if (lan.stash_n == 0) {
            lan.stash = lan_rx_word();
            lan.stash_n = 4;
        }
        *d++ = (uint8_t)lan.stash;
        lan.stash >>= 8;
        lan.stash_n--;
    }
}

/* Waits for room for a frame of len bytes and its two command words in
 * the TX data FIFO, and drops the status words of the frames sent before:
 * 0, or -1 when the room never came. */
static int lan_tx_room(size_t len) {
    uint32_t inf, spin, n;
    for (spin = 0; spin < LAN_SPIN; spin++) {
        inf = LAN(TX_FIFO_INF);
        if (TX_FIFO_INF_TDFREE(inf) >= len + 8) {
            for (n = TX_FIFO_INF_TXSUSED(inf); n > 0; n--) (void)LAN(TX_STATUS_FIFO);
            return 0;
        }
    }
    return -1;
}

int smr_nic_tx_begin(size_t len) {
    if (len == 0 || len > SMR_NIC_FRAME_MAX || lan_tx_room(len) != 0) return -1;
    LAN(TX_DATA_FIFO) = TX_CMD_A_FIRST | TX_CMD_A_LAST | (uint32_t)len;
    LAN(TX_DATA_FIFO) = (uint32_t)len << 16 | (uint32_t)len; /* tag: the length */
    lan.tx_left = len;
    lan.acc = 0;
    lan.acc_n = 0;
    return 0;
}

static void lan_tx_word(void) {
    LAN(TX_DATA_FIFO) = lan.acc;
    lan.acc = 0;
    lan.acc_n = 0;
}

void smr_nic_tx_write(const void *src, size_t n) {
    const uint8_t *s = src;
    if (n > lan.tx_left) n = lan.tx_left;
    lan.tx_left -= n;
    for (; n > 0; n--) {
        lan.acc |= (uint32_t)*s++ << (8 * lan.acc_n);
        if (++lan.acc_n == 4) lan_tx_word();
    }
}

/* Sends the frame; one cut short by its writer is padded with zeros (the
 * chip would otherwise take the next frame's commands as its data) and
 * reported as refused. */
int smr_nic_tx_end(void) {
    static const uint8_t zero;
    int short_frame = lan.tx_left != 0;
    while (lan.tx_left != 0) smr_nic_tx_write(&zero, 1);
    if (lan.acc_n != 0) lan_tx_word();
    return short_frame ? -1 : 0;
}
