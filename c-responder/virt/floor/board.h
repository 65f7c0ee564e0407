/*
 * board.h - the board under the virt path floor: QEMU's virt machine
 * (Cortex-A7 or A15, GICv2, virtio-mmio), as the floor's shared files
 * (floor_board.h) and this folder's see it.
 *
 * Why this exists: the shared console and GIC code, the loop's messages
 * and the virtio-net driver need this board's addresses and words, and
 * one header keeps them in one place, as a9/floor/board.h does for
 * vexpress-a9.
 *
 * The map (QEMU's hw/arm/virt.c, 32-bit): RAM at 0x40000000, whose first
 * bytes hold the device tree QEMU makes (it puts it at the start of RAM
 * for a kernel that is not Linux); the GICv2's distributor at 0x08000000
 * and its CPU interface at 0x08010000; PL011 UART0 at 0x09000000; 32
 * virtio-mmio transports from 0x0a000000, 0x200 apart, transport n's
 * interrupt being shared peripheral interrupt 16 + n, GIC ID 48 + n. The
 * clock is the architected timer (board.c).
 *
 * The address word is 1 MiB into RAM, past QEMU's device tree (virt.ld:
 * PROV, 0x40100000): -device loader,addr=0x40100000,data=0xC6121602,
 * data-len=4 is 198.18.22.2.
 */
#ifndef BOARD_H
#define BOARD_H

#define FLOOR_UART0 0x09000000u
#define FLOOR_GICD 0x08000000u
#define FLOOR_GICC 0x08010000u
#define VIRT_IRQ_VIRTIO0 48u

#define FLOOR_NO_ADDR \
    "no address at 0x40100000 (-device loader,addr=0x40100000,data=0xC6121602,data-len=4 is 198.18.22.2)"
#define FLOOR_NO_NIC \
    "no virtio-net device on the virtio-mmio transports at 0x0a000000 (-nic tap,...,model=virtio-net-device)"
#define FLOOR_READY_POLL " (virtio-net)"
#define FLOOR_READY_IRQ " (virtio-net, interrupts)"

#endif
