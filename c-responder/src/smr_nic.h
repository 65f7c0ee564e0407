/*
 * smr_nic.h: what an Ethernet controller's driver gives the netif glue
 * (smr_netif.c), in plain bytes: no lwIP type crosses this line. One
 * driver is linked into each program: smr_nic_tap.c (a Linux TAP device,
 * the lab), smr_nic_xdp.c (an AF_XDP socket on a network device, the
 * lab's kernel-bypass path) or mcu/smr_nic_stellaris.c (the LM3S6965's
 * MAC, the firmware).
 * This is the part a board vendor writes for its own controller; the glue
 * is the same on every board.
 *
 * Receive is pull-shaped, as a FIFO or a descriptor ring is: the glue asks
 * for the length of the next frame, allocates buffers of that size, reads
 * the frame into them piece by piece, then releases it. Send is the same
 * in reverse: the length first, then the pieces, then the end.
 */
#ifndef SMR_NIC_H
#define SMR_NIC_H

#include <stddef.h>
#include <stdint.h>

/* Largest frame either way: 1500 bytes of MTU, 14 of Ethernet header, 4
 * of a VLAN tag; no FCS (the controller checks and adds it). */
#define SMR_NIC_FRAME_MAX 1518u
/* Smallest frame worth passing up: an Ethernet header. */
#define SMR_NIC_FRAME_MIN 14u

/* Brings the controller up (receive and send enabled, interrupts as the
 * driver uses them) and reports its MAC address; `name` selects a device
 * where there are several (a TAP device's name), NULL elsewhere. 0 on
 * success, -1 on failure. */
int smr_nic_open(const char *name, uint8_t mac[6]);

/* Length of the next received frame (the controller's FCS excluded), or 0
 * when none is waiting. A frame outside [SMR_NIC_FRAME_MIN,
 * SMR_NIC_FRAME_MAX] is dropped by the driver and never reported. */
size_t smr_nic_rx_len(void);
/* Copies the next n bytes of that frame to dst; never reads past its end
 * (the rest of dst is left alone). */
void smr_nic_rx_read(void *dst, size_t n);
/* Done with the frame (whatever was not read is dropped). */
void smr_nic_rx_done(void);

/* Starts a frame of len bytes (at most SMR_NIC_FRAME_MAX): 0 when the
 * controller can take it now, -1 when it cannot (busy past the driver's
 * bounded wait, or too long); then smr_nic_tx_write() the pieces, in
 * order, len bytes in all, and smr_nic_tx_end(). */
int smr_nic_tx_begin(size_t len);
void smr_nic_tx_write(const void *src, size_t n);
/* Sends the frame: 0, or -1 when the controller refused it. */
int smr_nic_tx_end(void);

/* Hosted drivers only (TAP, AF_XDP): the descriptor a program waits on
 * with poll() before it pulls frames. */
int smr_nic_fd(void);

#endif
