# The Cortex-A9 path floor (included by c-responder/Makefile, or alone:
# make -C c-responder -f a9/floor/floor.mk a9-floor a9-floor-irq; paths from
# c-responder/), two builds of the same sources:
#   a9-floor       a9/build/stackmeter-a9-floor.elf: stackmeter's UDP echo
#                  answered with no stack on QEMU's vexpress-a9 (Cortex-A9, SMSC
#                  LAN9118), the path floor of a firmware on that board
#                  (a9/floor/floor.c), built from the same frame logic as the
#                  lab's other floors (floor/frame_echo.c); it polls
#                  the NIC
#   a9-floor-irq   a9/build/stackmeter-a9-floor-irq.elf: the same floor built
#                  with -DA9_FLOOR_IRQ: it sleeps in WFI until the NIC's receive
#                  interrupt wakes it through the GIC, as the interrupt-driven
#                  systems on that board idle (the interrupt only wakes the
#                  core, it is never taken as an exception)
# Bare metal with no C library (a9/floor/libc.c has the four string.h functions
# it uses), ARM state, no unaligned accesses (the MMU stays off). Boot either
# with its address in the word at 0x60000000 (a9/floor/a9.h):
#   qemu-system-arm -M vexpress-a9 -m 128M -display none -monitor none -serial stdio \
#     -kernel a9/build/stackmeter-a9-floor.elf \
#     -device loader,addr=0x60000000,data=0xC6121802,data-len=4 \
#     -nic tap,ifname=TAP,script=no,downscript=no,model=lan9118,mac=02:53:4d:00:00:09
# Toolchain: Debian's gcc-arm-none-eabi (libgcc only).
ifndef SMR_WARN
include flags.mk
endif
A9_CC ?= arm-none-eabi-gcc
A9_BUILD = a9/build
A9_FLOOR_ELF = $(A9_BUILD)/stackmeter-a9-floor.elf
A9_FLOOR_IRQ_ELF = $(A9_BUILD)/stackmeter-a9-floor-irq.elf
A9_FLOOR_CPU = -mcpu=cortex-a9 -marm -mfloat-abi=soft -mno-unaligned-access
A9_FLOOR_OPT = -O2 -g -ffreestanding -nostdlib -fno-tree-loop-distribute-patterns \
	-ffunction-sections -fdata-sections
A9_FLOOR_INC = -Isrc -Ia9/floor -Ifloor
A9_FLOOR_SRC = a9/floor/start.S a9/floor/board.c a9/floor/libc.c a9/floor/lan9118.c \
	a9/floor/floor.c floor/frame_echo.c
A9_FLOOR_DEPS = $(A9_FLOOR_SRC) a9/floor/a9.h a9/floor/a9.ld a9/floor/floor.mk src/smr_nic.h \
	floor/frame_echo.h flags.mk
# What selects the build: nothing (polling), -DA9_FLOOR_IRQ (interrupts).
A9_FLOOR_MODE =
$(A9_FLOOR_IRQ_ELF): A9_FLOOR_MODE = -DA9_FLOOR_IRQ

.PHONY: a9-floor a9-floor-irq
a9-floor: $(A9_FLOOR_ELF)
a9-floor-irq: $(A9_FLOOR_IRQ_ELF)

$(A9_FLOOR_ELF) $(A9_FLOOR_IRQ_ELF): $(A9_FLOOR_DEPS)
	@mkdir -p $(@D)
	$(A9_CC) $(SMR_WARN) $(A9_FLOOR_MODE) $(A9_FLOOR_CPU) $(A9_FLOOR_OPT) $(A9_FLOOR_INC) \
		-T a9/floor/a9.ld -Wl,--gc-sections -Wl,-Map=$(@:.elf=.map) -o $@ $(A9_FLOOR_SRC) -lgcc
