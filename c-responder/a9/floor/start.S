/*
 * start.S - what runs before main() on the Cortex-A9 path floor.
 *
 * Why this exists: QEMU's -kernel loads the floor's ELF and jumps to its
 * entry (a9_start) in SVC mode, with the MMU and the caches off and no
 * stack; C needs one, and a zeroed .bss. This sets up both on core 0
 * (any other core sleeps: the floor is one loop), masks every interrupt
 * for good (in both builds nothing is taken: the polling build polls the
 * NIC, the interrupt build lets the NIC's interrupt end a WFI, which it
 * does masked, and acknowledges it at the GIC itself), points VBAR at a
 * table that reports any exception on the console (board.c: a9_trap)
 * rather than running off into whatever is at address 0, and calls main.
 * If main returns, the core sleeps. Symbols come from a9.ld.
 */
    .syntax unified
    .arm

    .section .text.start, "ax", %progbits
    .global a9_start
    .type a9_start, %function
a9_start:
    cpsid   aif                     @ no interrupt is ever taken (WFI still wakes)
    mrc     p15, 0, r0, c0, c0, 5   @ MPIDR: bits 1:0 are the core's number
    ands    r0, r0, #3
    bne     a9_sleep
    ldr     r0, =a9_vectors
    mcr     p15, 0, r0, c12, c0, 0  @ VBAR
    ldr     sp, =__stack_top
    ldr     r0, =__bss_start
    ldr     r1, =__bss_end
    mov     r2, #0
1:  cmp     r0, r1
    strlo   r2, [r0], #4
    blo     1b
    bl      main
a9_sleep:
    wfi
    b       a9_sleep
    .size a9_start, . - a9_start

/* The exception vectors (VBAR wants them 32-byte aligned): each passes
 * its number and its mode's lr to a9_trap, on SVC mode's stack. */
    .balign 32
a9_vectors:
    b       a9_start
    b       a9_v1
    b       a9_v2
    b       a9_v3
    b       a9_v4
    b       a9_v5
    b       a9_v6
    b       a9_v7
a9_v1:  mov r0, #1
    b       a9_vtrap
a9_v2:  mov r0, #2
    b       a9_vtrap
a9_v3:  mov r0, #3
    b       a9_vtrap
a9_v4:  mov r0, #4
    b       a9_vtrap
a9_v5:  mov r0, #5
    b       a9_vtrap
a9_v6:  mov r0, #6
    b       a9_vtrap
a9_v7:  mov r0, #7
a9_vtrap:
    mov     r1, lr                  @ lr is banked: take it before leaving the mode
    cps     #0x13                   @ SVC mode, whose stack is set
    bl      a9_trap
    b       a9_sleep
