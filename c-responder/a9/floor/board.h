/*
 * board.h - the board under the Cortex-A9 path floor: QEMU's vexpress-a9
 * (the legacy "A-series" memory map), as the floor's shared files
 * (floor_board.h) and this folder's see it.
 *
 * Why this exists: the shared console and GIC code, the loop's messages
 * and the LAN9118's driver need this board's addresses and words, and one
 * header keeps them in one place. Only what the floor's two builds use is
 * here.
 *
 * The map: RAM at 0x60000000 (128 MiB by default), the LAN9118 at
 * 0x4e000000 (lan9118.c), PL011 UART0 at 0x10009000, the Cortex-A9's
 * private peripherals (PERIPHBASE) at 0x1e000000: the GIC's CPU interface
 * 0x100 above, its global timer 0x200 above (board.c), the GIC's
 * distributor 0x1000 above. The LAN9118's interrupt line is the board's
 * shared peripheral interrupt 15, GIC interrupt ID 32 + 15 = 47.
 *
 * The address word is at the start of RAM (a9.ld: PROV, 0x60000000):
 * -device loader,addr=0x60000000,data=0xC6121802,data-len=4 is
 * 198.18.24.2.
 */
#ifndef BOARD_H
#define BOARD_H

#define FLOOR_UART0 0x10009000u
#define FLOOR_GICC 0x1e000100u
#define FLOOR_GICD 0x1e001000u
#define A9_GTIMER 0x1e000200u
#define A9_IRQ_LAN9118 47u

#define FLOOR_NO_ADDR \
    "no address at 0x60000000 (-device loader,addr=0x60000000,data=0xC6121802,data-len=4 is 198.18.24.2)"
#define FLOOR_NO_NIC "the LAN9118 at 0x4e000000 does not answer"
#define FLOOR_READY_POLL ""
#define FLOOR_READY_IRQ " (interrupts)"

#endif
