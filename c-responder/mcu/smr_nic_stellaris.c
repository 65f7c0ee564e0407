/*
 * smr_nic_stellaris.c: the Ethernet MAC of the Stellaris LM3S6965 as the
 * controller of smr_nic.h (the firmware's driver; the lab's is
 * smr_nic_tap.c). This is the part a board vendor writes: about a hundred
 * lines against the data sheet's registers (lm3s6965.h).
 *
 * The MAC has a 2 KiB receive FIFO and a 2 KiB transmit FIFO, both read
 * and written one 32-bit word at a time through one data register; no
 * DMA. A received frame comes as [length: 2 bytes, little-endian, counting
 * itself, the frame and the FCS][frame][FCS: 4 bytes], padded to whole
 * words; NP counts the frames waiting. A frame to send is written as
 * [length of the frame after its 14-byte header: 2 bytes][frame], then
 * TR (transmission request) sends it; the MAC pads short frames and adds
 * the FCS itself.
 *
 * Frames are moved byte-exactly through a one-word stash, a word at a time
 * when the stash is empty (the Cortex-M3 stores unaligned words, so the
 * destination's alignment does not matter). The MAC's interrupt is used
 * only to wake the core from WFI when a frame comes (smr_mcu.c): the
 * handler acknowledges it and returns, frames are pulled by the main loop.
 */
#include "lm3s6965.h"
#include "smr_nic.h"

#include <string.h>

/* How many times TR is read before a frame is given up as unsendable
 * (the MAC still busy with the previous one). */
#define SMR_TX_SPIN 100000u

static struct {
    size_t len, off;   /* the frame being read: its length, bytes given */
    uint32_t words;    /* FIFO words of that frame not yet read */
    uint32_t stash;    /* bytes of the last word read, not yet given */
    unsigned stash_n;
    size_t tx_len, tx_got;
    uint32_t acc;      /* the word being assembled for the transmit FIFO */
    unsigned acc_n;
} smr_mac;

void smr_nic_stellaris_irq(void) { MAC_RIS = MAC_INT_RX | MAC_INT_FOV; }

int smr_nic_open(const char *name, uint8_t mac[6]) {
    uint32_t a0 = MAC_IA0, a1 = MAC_IA1;
    (void)name;
    MAC_IM = 0;
    MAC_RCTL = MAC_RCTL_RSTFIFO;
    MAC_RCTL = MAC_RCTL_RXEN | MAC_RCTL_BADCRC; /* frames with a bad FCS are dropped */
    MAC_TCTL = MAC_TCTL_TXEN | MAC_TCTL_PADEN | MAC_TCTL_CRC | MAC_TCTL_DUPLEX;
    MAC_THR = 0x3f; /* send on TR only, never from a threshold */
    MAC_RIS = 0x7f;
    /* The address: a board's boot code copies it from the USER0/USER1
     * flash registers into IA0/IA1; QEMU sets them from -nic mac=. */
    if ((a0 | (a1 & 0xffffu)) == 0) {
        a0 = 0x004d5302u; /* 02:53:4d:00, locally administered */
        a1 = 0x0300u;     /* :00:03 */
        MAC_IA0 = a0;
        MAC_IA1 = a1;
    }
    mac[0] = (uint8_t)a0;
    mac[1] = (uint8_t)(a0 >> 8);
    mac[2] = (uint8_t)(a0 >> 16);
    mac[3] = (uint8_t)(a0 >> 24);
    mac[4] = (uint8_t)a1;
    mac[5] = (uint8_t)(a1 >> 8);
    MAC_IM = MAC_INT_RX | MAC_INT_FOV;
    NVIC_ISER(MAC_IRQ / 32) = 1u << (MAC_IRQ % 32);
    return 0;
}

static void smr_rx_drain(void) {
    while (smr_mac.words) {
        (void)MAC_DATA;
        smr_mac.words--;
    }
    smr_mac.len = smr_mac.off = 0;
    smr_mac.stash_n = 0;
}

size_t smr_nic_rx_len(void) {
    while (smr_mac.len == 0) {
        uint32_t w, total;
        if (MAC_NP == 0) return 0;
        w = MAC_DATA;
        total = w & 0xffffu;
        smr_mac.words = total >= 4 ? (total + 3) / 4 - 1 : 0;
        smr_mac.stash = w >> 16;
        smr_mac.stash_n = 2;
        smr_mac.off = 0;
        if (total < SMR_NIC_FRAME_MIN + 6 || total > SMR_NIC_FRAME_MAX + 6) {
            smr_rx_drain(); /* dropped, never reported */
            continue;
        }
        smr_mac.len = total - 6;
    }
    return smr_mac.len;
}

void smr_nic_rx_read(void *dst, size_t n) {
    uint8_t *d = dst;
    if (n > smr_mac.len - smr_mac.off) n = smr_mac.len - smr_mac.off;
    smr_mac.off += n;
    while (n) {
        if (smr_mac.stash_n == 0) {
            uint32_t w;
            if (!smr_mac.words) return; /* cannot happen: the length said more */
            w = MAC_DATA;
            smr_mac.words--;
            if (n >= 4) {
                memcpy(d, &w, 4);
                d += 4;
                n -= 4;
                continue;
            }
            smr_mac.stash = w;
            smr_mac.stash_n = 4;
        }
        *d++ = (uint8_t)smr_mac.stash;
        smr_mac.stash >>= 8;
        smr_mac.stash_n--;
        n--;
    }
}

void smr_nic_rx_done(void) { smr_rx_drain(); }

int smr_nic_tx_begin(size_t len) {
    uint32_t spin = SMR_TX_SPIN;
    if (len < SMR_NIC_FRAME_MIN || len > SMR_NIC_FRAME_MAX) return -1;
    while ((MAC_TR & 1u) && --spin) {
    }
    if (!spin) return -1;
    if (MAC_RIS & MAC_INT_TXER) MAC_RIS = MAC_INT_TXER; /* also empties the FIFO */
    smr_mac.tx_len = len;
    smr_mac.tx_got = 0;
    smr_mac.acc = (uint32_t)(len - 14);
    smr_mac.acc_n = 2;
    return 0;
}

void smr_nic_tx_write(const void *src, size_t n) {
    const uint8_t *s = src;
    if (n > smr_mac.tx_len - smr_mac.tx_got) n = smr_mac.tx_len - smr_mac.tx_got;
    smr_mac.tx_got += n;
    while (n) {
        if (smr_mac.acc_n == 0 && n >= 4) {
            uint32_t w;
            memcpy(&w, s, 4);
            MAC_DATA = w;
            s += 4;
            n -= 4;
            continue;
        }
        smr_mac.acc |= (uint32_t)*s++ << (8 * smr_mac.acc_n);
        n--;
        if (++smr_mac.acc_n == 4) {
            MAC_DATA = smr_mac.acc;
            smr_mac.acc = 0;
            smr_mac.acc_n = 0;
        }
    }
}

int smr_nic_tx_end(void) {
    if (smr_mac.acc_n) MAC_DATA = smr_mac.acc;
    smr_mac.acc = 0;
    smr_mac.acc_n = 0;
    if (smr_mac.tx_got != smr_mac.tx_len) {
        MAC_RIS = MAC_INT_TXER; /* empties the FIFO: the frame is not sent */
        return -1;
    }
    MAC_TR = 1;
    return 0;
}
