/*
 * smr_nic_tap.c: a Linux TAP device as the Ethernet controller of
 * smr_nic.h (the lab's lwip-raw and lwip-sock). The device must exist
 * (`ip tuntap add dev NAME mode tap`); it is opened without packet
 * information or a vnet header, so one read() is one frame and one
 * write() sends one. Non-blocking: the caller waits on smr_nic_fd()
 * (poll) and then pulls frames until none is left.
 *
 * A read lands in a buffer larger than any frame the device may give, so
 * an oversized frame is seen whole and dropped, never cut short into
 * something that looks valid. The glue then copies the frame into pbufs
 * of its size (one memcpy of at most 1,518 bytes, next to the syscall
 * that brought it). A frame to send is written with writev() straight
 * from the pbufs, as many pieces as it has, up to SMR_TAP_IOV.
 */
#define _GNU_SOURCE
#include "smr_nic.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

/* Pieces one frame may be sent in (lwIP chains a header pbuf before the
 * data; a TCP segment is rarely more than three). */
#define SMR_TAP_IOV 16

static struct {
    int fd;
    size_t len, off;   /* the frame held in rx: its length, bytes read */
    size_t tx_len, tx_got;
    int tx_n, tx_bad;  /* pieces of the frame being sent; a piece too many */
    struct iovec iov[SMR_TAP_IOV];
    uint8_t rx[65536]; /* more than the device may ever give: see above */
} smr_tap = {.fd = -1};

/* The TAP's descriptor, for the caller's poll(). */
int smr_nic_fd(void) { return smr_tap.fd; }

int smr_nic_open(const char *name, uint8_t mac[6]) {
    struct ifreq ifr;
    int fd;
    if (!name || strlen(name) >= IFNAMSIZ) return -1;
    fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, name, strlen(name));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
        close(fd);
        return -1;
    }
    smr_tap.fd = fd;
    /* A locally administered address (bit 1 of the first byte), fixed:
     * the host side has its own, and nothing else is on the link. */
    mac[0] = 0x02;
    mac[1] = 0x53;
    mac[2] = 0x4d;
    mac[3] = 0x00;
    mac[4] = 0x00;
    mac[5] = 0x02;
    return 0;
}

size_t smr_nic_rx_len(void) {
    while (smr_tap.len == 0) {
        ssize_t n = read(smr_tap.fd, smr_tap.rx, sizeof smr_tap.rx);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0; /* EAGAIN: nothing waits (or the device went away) */
        if ((size_t)n < SMR_NIC_FRAME_MIN || (size_t)n > SMR_NIC_FRAME_MAX) continue; /* dropped */
        smr_tap.len = (size_t)n;
        smr_tap.off = 0;
    }
    return smr_tap.len;
}

void smr_nic_rx_read(void *dst, size_t n) {
    if (n > smr_tap.len - smr_tap.off) n = smr_tap.len - smr_tap.off;
    memcpy(dst, smr_tap.rx + smr_tap.off, n);
    smr_tap.off += n;
}

void smr_nic_rx_done(void) { smr_tap.len = smr_tap.off = 0; }

int smr_nic_tx_begin(size_t len) {
    if (len < SMR_NIC_FRAME_MIN || len > SMR_NIC_FRAME_MAX) return -1;
    smr_tap.tx_len = len;
    smr_tap.tx_got = 0;
    smr_tap.tx_n = 0;
    smr_tap.tx_bad = 0;
    return 0;
}

void smr_nic_tx_write(const void *src, size_t n) {
    if (n == 0) return;
    if (smr_tap.tx_n == SMR_TAP_IOV) {
        smr_tap.tx_bad = 1;
        return;
    }
    smr_tap.iov[smr_tap.tx_n].iov_base = (void *)(uintptr_t)src; /* writev does not write to it */
    smr_tap.iov[smr_tap.tx_n].iov_len = n;
    smr_tap.tx_n++;
    smr_tap.tx_got += n;
}

int smr_nic_tx_end(void) {
    ssize_t w;
    if (smr_tap.tx_bad || smr_tap.tx_got != smr_tap.tx_len) return -1;
    do {
        w = writev(smr_tap.fd, smr_tap.iov, smr_tap.tx_n);
    } while (w < 0 && errno == EINTR);
    /* A full device queue (EAGAIN) drops the frame, as a busy wire would:
     * TCP sends it again. */
    return w == (ssize_t)smr_tap.tx_len ? 0 : -1;
}
