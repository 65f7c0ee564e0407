/*
 * frame_echo.h - the frame logic of a path floor: stackmeter's UDP echo
 * (the `ping` test) and ARP answered on one Ethernet frame, in place,
 * with no stack.
 *
 * Why this exists: the floors that measure a path with nothing on it
 * (bench/floor/nic_echo.c on the TAP and AF_XDP paths, and the
 * bare-metal floor_main.c on QEMU's emulated LAN9118 and virtio-net) must
 * answer exactly the same frames the same way, or their figures are not
 * the same floor. All are built from this one file, which needs nothing but string.h and
 * stdint.h, so it runs hosted and on bare metal alike. (firmware/
 * mcu-smoltcp's `floor` binary is the Rust twin of these rules.)
 */
#ifndef FRAME_ECHO_H
#define FRAME_ECHO_H

#include <stddef.h>
#include <stdint.h>

/* The port stackmeter's UDP echo goes to. */
#define FRAME_ECHO_PORT 24680u

/*
 * Turns the Ethernet frame f (len bytes, no FCS) into its answer, in
 * place, and returns the answer's length; 0 when the frame is to be
 * dropped. Answered are:
 *   - an ARP request for ip: the ARP reply from mac (42 bytes);
 *   - a UDP datagram to ip:port whose payload is a version 1 echo request
 *     ("SMTU", version 1, kind 1, at least 40 bytes): the echo reply (kind
 *     2, code 0, flags 1, both responder times rx_ns, big-endian; IPv4
 *     addresses, UDP ports and MAC addresses swapped, the source MAC mac;
 *     the UDP checksum 0, which IPv4 allows; the IPv4 header's checksum
 *     holds as it is, the swap not changing its sum), as long as the
 *     datagram it came in (trailing padding of a short frame dropped).
 * Everything else is dropped. Reads and writes bytes only, so f needs no
 * alignment.
 */
size_t frame_echo(uint8_t *f, size_t len, const uint8_t mac[6], const uint8_t ip[4], uint16_t port,
                  uint64_t rx_ns);

#endif
