/*
 * startup.c: what runs before main() on the LM3S6965: the vector table
 * (initial stack pointer, reset, the faults, SysTick, the Ethernet MAC's
 * interrupt), the reset handler (copies .data from flash, zeroes .bss,
 * calls main), and a fault handler that names the fault on the console
 * and stops. Symbols come from lm3s6965.ld.
 */
#include "lm3s6965.h"

#include <stdint.h>
#include <string.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);
void smr_mcu_systick(void);
void smr_nic_stellaris_irq(void);
void smr_mcu_panic(const char *what, const char *file, int line);

void smr_reset(void);
static void smr_fault(void) { smr_mcu_panic("fault", "startup.c", 0); }
static void smr_unused(void) { smr_mcu_panic("unexpected interrupt", "startup.c", 0); }

/* 16 system vectors, then the part's interrupts up to the MAC's (42). */
__attribute__((section(".vectors"), used)) static void (*const smr_vectors[16 + MAC_IRQ + 1])(void) = {
    [0] = (void (*)(void))(uintptr_t)&_estack,
    [1] = smr_reset,
    [2] = smr_fault,  /* NMI */
    [3] = smr_fault,  /* HardFault */
    [4] = smr_fault,  /* MemManage */
    [5] = smr_fault,  /* BusFault */
    [6] = smr_fault,  /* UsageFault */
    [11] = smr_unused, /* SVCall */
    [14] = smr_unused, /* PendSV */
    [15] = smr_mcu_systick,
    [16 + MAC_IRQ] = smr_nic_stellaris_irq,
};

void smr_reset(void) {
    memcpy(&_sdata, &_sidata, (size_t)((char *)&_edata - (char *)&_sdata));
    memset(&_sbss, 0, (size_t)((char *)&_ebss - (char *)&_sbss));
    main();
    smr_mcu_panic("main returned", "startup.c", 0);
}
