/*
 * start.S - what runs before main() on the bare-metal path floors, both
 * boards' (vexpress-a9's Cortex-A9, virt's Cortex-A7: plain ARMv7-A).
 *
 * Why this exists: QEMU's -kernel loads the floor's ELF and jumps to its
 * entry (floor_start) in SVC mode, with the MMU and the caches off and no
 * stack; C needs one, and a zeroed .bss. This sets up both on core 0
 * (any other core sleeps: the floor is one loop), masks every interrupt
 * for good (in both builds nothing is taken: the polling build polls the
 * NIC, the interrupt build lets the NIC's interrupt end a WFI, which it
 * does masked, and acknowledges it at the GIC itself), points VBAR at a
 * table that reports any exception on the console (floor_arm.c:
 * floor_trap) rather than running off into whatever is at address 0, and
 * calls main. If main returns, the core sleeps. Symbols come from the
 * board's linker script (floor.ld).
 */
    .syntax unified
    .arm

    .section .text.start, "ax", %progbits
    .global floor_start
    .type floor_start, %function
floor_start:
    cpsid   aif                     @ no interrupt is ever taken (WFI still wakes)
    mrc     p15, 0, r0, c0, c0, 5   @ MPIDR: bits 1:0 are the core's number
    ands    r0, r0, #3
    bne     floor_halt
    ldr     r0, =floor_vectors
    mcr     p15, 0, r0, c12, c0, 0  @ VBAR
    ldr     sp, =__stack_top
    ldr     r0, =__bss_start
    ldr     r1, =__bss_end
    mov     r2, #0
1:  cmp     r0, r1
    strlo   r2, [r0], #4
    blo     1b
    bl      main
floor_halt:
    wfi
    b       floor_halt
    .size floor_start, . - floor_start

/* The exception vectors (VBAR wants them 32-byte aligned): each passes
 * its number and its mode's lr to floor_trap, on SVC mode's stack. */
    .balign 32
floor_vectors:
    b       floor_start
    b       floor_v1
    b       floor_v2
    b       floor_v3
    b       floor_v4
    b       floor_v5
    b       floor_v6
    b       floor_v7
floor_v1:  mov r0, #1
    b       floor_vtrap
floor_v2:  mov r0, #2
    b       floor_vtrap
floor_v3:  mov r0, #3
    b       floor_vtrap
floor_v4:  mov r0, #4
    b       floor_vtrap
floor_v5:  mov r0, #5
    b       floor_vtrap
floor_v6:  mov r0, #6
    b       floor_vtrap
floor_v7:  mov r0, #7
floor_vtrap:
    mov     r1, lr                  @ lr is banked: take it before leaving the mode
    cps     #0x13                   @ SVC mode, whose stack is set
    bl      floor_trap
    b       floor_halt
