/*
 * arch/cc.h: lwIP's compiler and platform port for the firmware (bare
 * metal, no OS, one thread). Diagnostics and assertions go to the serial
 * console through smr_mcu_panic() (smr_mcu.c) without printf: an assertion
 * prints its file and line and stops the board, never continues on bad
 * state. Random numbers (TCP's first local ports) come from a xorshift
 * seeded with the provisioned seed (smr_mcu.c).
 */
#ifndef SMR_MCU_CC_H
#define SMR_MCU_CC_H

#include <stdint.h>

void smr_mcu_panic(const char *what, const char *file, int line);
uint32_t smr_mcu_rand(void);

#define LWIP_PLATFORM_DIAG(x) do { } while (0)
#define LWIP_PLATFORM_ASSERT(x) smr_mcu_panic(x, __FILE__, __LINE__)
#define LWIP_RAND() smr_mcu_rand()
/* lwIP's own errno values (no sockets here, nothing else reads them). */
#define LWIP_PROVIDE_ERRNO 1
#define BYTE_ORDER LITTLE_ENDIAN

#endif
