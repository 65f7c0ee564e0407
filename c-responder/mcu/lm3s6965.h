/*
 * lm3s6965.h: the registers of the Stellaris LM3S6965 (Cortex-M3) the
 * firmware uses: UART0 (the console), the Ethernet MAC, SysTick and the
 * NVIC. Addresses from the part's data sheet; QEMU's lm3s6965evb board
 * emulates them at the same places.
 */
#ifndef SMR_LM3S6965_H
#define SMR_LM3S6965_H

#include <stdint.h>

#define SMR_REG(a) (*(volatile uint32_t *)(uintptr_t)(a))

/* UART0 (PL011): data, flags (bit 5: transmit FIFO full). */
#define UART0_DR SMR_REG(0x4000C000u)
#define UART0_FR SMR_REG(0x4000C018u)
#define UART_FR_TXFF (1u << 5)

/* Ethernet MAC. */
#define MAC_BASE 0x40048000u
#define MAC_RIS SMR_REG(MAC_BASE + 0x00) /* read: raw interrupt status; write: acknowledge */
#define MAC_IM SMR_REG(MAC_BASE + 0x04)
#define MAC_RCTL SMR_REG(MAC_BASE + 0x08)
#define MAC_TCTL SMR_REG(MAC_BASE + 0x0c)
#define MAC_DATA SMR_REG(MAC_BASE + 0x10)
#define MAC_IA0 SMR_REG(MAC_BASE + 0x14)
#define MAC_IA1 SMR_REG(MAC_BASE + 0x18)
#define MAC_THR SMR_REG(MAC_BASE + 0x1c)
#define MAC_NP SMR_REG(MAC_BASE + 0x34)
#define MAC_TR SMR_REG(MAC_BASE + 0x38)
#define MAC_INT_RX 0x01u
#define MAC_INT_TXER 0x02u
#define MAC_INT_TXEMP 0x04u
#define MAC_INT_FOV 0x08u
#define MAC_RCTL_RXEN 0x01u
#define MAC_RCTL_BADCRC 0x08u
#define MAC_RCTL_RSTFIFO 0x10u
#define MAC_TCTL_TXEN 0x01u
#define MAC_TCTL_PADEN 0x02u
#define MAC_TCTL_CRC 0x04u
#define MAC_TCTL_DUPLEX 0x08u
#define MAC_IRQ 42u

/* SysTick and the NVIC. */
#define SYST_CSR SMR_REG(0xE000E010u)
#define SYST_RVR SMR_REG(0xE000E014u)
#define SYST_CVR SMR_REG(0xE000E018u)
#define NVIC_ISER(n) SMR_REG(0xE000E100u + 4u * (n))
/* The system clock after reset (RCC's reset value: 200 MHz PLL / 16),
 * which SysTick counts with CLKSOURCE set. */
#define SMR_CPU_HZ 12500000u

#endif
