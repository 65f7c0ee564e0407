# floor/floor.mk - what the bare-metal path floors' builds share (included
# by a9/floor/floor.mk and virt/floor/floor.mk; paths from c-responder/).
# Each board's floor is its own files (its folder: board.h, board.c, its
# NIC's driver, its linker script) and these: the loop (floor_main.c), the
# PL011 console and the GIC (floor_arm.c), the start-up (start.S), the four
# string.h functions (libc.c), the sections (floor.ld) and the frame logic
# (frame_echo.c), built twice: polling, and with -DFLOOR_IRQ, sleeping in
# WFI until the NIC's interrupt wakes it through the GIC.
# Bare metal with no C library, ARM state, no unaligned accesses (the MMU
# stays off). Toolchain: Debian's gcc-arm-none-eabi (libgcc only).
ifndef FLOOR_SRC
ifndef SMR_WARN
include flags.mk
endif
FLOOR_CC ?= arm-none-eabi-gcc
FLOOR_ARCH = -marm -mfloat-abi=soft -mno-unaligned-access
FLOOR_OPT = -O2 -g -ffreestanding -nostdlib -fno-tree-loop-distribute-patterns \
	-ffunction-sections -fdata-sections
FLOOR_SRC = floor/start.S floor/libc.c floor/floor_arm.c floor/floor_main.c floor/frame_echo.c
FLOOR_DEPS = $(FLOOR_SRC) floor/floor_board.h floor/frame_echo.h floor/floor.ld floor/floor.mk \
	src/smr_nic.h flags.mk
# Set per target by the board's floor.mk: the board's folder (its board.h
# and linker script), its -mcpu, its linker script; and what selects the
# build: nothing (polling), -DFLOOR_IRQ (interrupts).
FLOOR_BOARD =
FLOOR_CPU =
FLOOR_LD =
FLOOR_MODE =

# The recipe of a floor's ELF, from the sources among its prerequisites.
define FLOOR_LINK
@mkdir -p $(@D)
$(FLOOR_CC) $(SMR_WARN) $(FLOOR_MODE) $(FLOOR_CPU) $(FLOOR_ARCH) $(FLOOR_OPT) -Isrc -Ifloor -I$(FLOOR_BOARD) \
	-T $(FLOOR_LD) -Lfloor -Wl,--gc-sections -Wl,-Map=$(@:.elf=.map) -o $@ $(filter %.c %.S,$^) -lgcc
endef
endif
