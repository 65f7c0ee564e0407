/*
 * lwipopts.h: lwIP 2.1.3 configured for the firmware on the LM3S6965
 * (64 KiB of SRAM, docs/porting.md): raw API only, no OS (NO_SYS), IPv4
 * with ARP and ICMP echo, TCP and UDP; no IPv6, DHCP, fragmentation or
 * statistics. Every pool is a fixed static array, so the link map shows
 * lwIP's whole RAM and `make mcu-size` can hold it to the budget.
 *
 * Sizes, and why:
 *  - TCP_MSS 1460, MTU 1500: full-size segments both ways.
 *  - TCP_WND 4 segments: the receive window the pool can back
 *    (PBUF_POOL_SIZE frames of 1,536 bytes, some kept for UDP and ARP).
 *  - TCP_SND_BUF 4 segments per connection: responses are queued by
 *    reference from the engine's payload in flash (no RAM for the bytes),
 *    so only segment headers take the heap.
 *  - MEMP_NUM_TCP_PCB: the engine's connection slots (SMR_MAX_CONNS plus
 *    the spare ones that carry a Busy refusal) and two more for
 *    connections in TIME_WAIT; lwIP recycles the oldest TIME_WAIT one when
 *    the pool is empty, so crr keeps going.
 *  - TCP_MSL 2 s: TIME_WAIT lasts 4 s instead of 2 minutes. The firmware
 *    closes first after a refusal (junk, Busy, a header timeout), so its
 *    side holds TIME_WAIT while the client's port is free again; lwIP
 *    2.1.3 answers a new SYN from that port with an ACK (it does not take
 *    a new connection in TIME_WAIT as Linux does), the client resets, and
 *    its connect times out until TIME_WAIT ends. The 10-minute mixed run
 *    (bench/mcu.sh soak) saw it once a few minutes in with the default.
 *    On one link with no router, 4 s outlasts any old segment.
 */
#ifndef SMR_MCU_LWIPOPTS_H
#define SMR_MCU_LWIPOPTS_H

#define NO_SYS 1
#define SYS_LIGHTWEIGHT_PROT 0
#define LWIP_SOCKET 0
#define LWIP_NETCONN 0
#define LWIP_NETIF_API 0

#define MEM_ALIGNMENT 4
#define MEM_SIZE (12 * 1024)
#define PBUF_POOL_SIZE 10
#define MEMP_NUM_PBUF 24
#define MEMP_NUM_UDP_PCB 2
#define MEMP_NUM_TCP_PCB (SMR_MAX_CONNS + SMR_SPARE_CONNS + 2)
#define MEMP_NUM_TCP_PCB_LISTEN 1
#define MEMP_NUM_TCP_SEG 32
#define MEMP_NUM_REASSDATA 0
#define MEMP_NUM_FRAG_PBUF 0
#define MEMP_NUM_ARP_QUEUE 4
#define ARP_TABLE_SIZE 4
#define ARP_QUEUEING 1

#define LWIP_IPV4 1
#define LWIP_IPV6 0
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_ICMP 1
#define LWIP_RAW 0
#define LWIP_DHCP 0
#define LWIP_AUTOIP 0
#define LWIP_IGMP 0
#define LWIP_DNS 0
#define IP_REASSEMBLY 0
#define IP_FRAG 0
#define LWIP_UDP 1
#define LWIP_TCP 1

#define TCP_MSS 1460
#define TCP_WND (4 * TCP_MSS)
#define TCP_SND_BUF (4 * TCP_MSS)
#define TCP_SND_QUEUELEN (2 * TCP_SND_BUF / TCP_MSS + 2)
#define TCP_LISTEN_BACKLOG 0
#define LWIP_TCP_KEEPALIVE 0
#define TCP_QUEUE_OOSEQ 0
#define TCP_MSL 2000UL

#define LWIP_STATS 0
#define LWIP_NETIF_HOSTNAME 0
#define LWIP_NETIF_STATUS_CALLBACK 0
#define LWIP_NETIF_LINK_CALLBACK 0
#define LWIP_CHKSUM_ALGORITHM 3
/* Two bytes before each frame so the IP header after the 14-byte Ethernet
 * header is word-aligned (the MAC's FIFO has the same two bytes: its
 * length field). */
#define ETH_PAD_SIZE 2

#endif
