# The Cortex-A9 path floor (included by c-responder/Makefile, or alone:
# make -C c-responder -f a9/floor/floor.mk a9-floor a9-floor-irq; paths from
# c-responder/), two builds of the same sources:
#   a9-floor       a9/build/stackmeter-a9-floor.elf: stackmeter's UDP echo
#                  answered with no stack on QEMU's vexpress-a9 (Cortex-A9, SMSC
#                  LAN9118), the path floor of a firmware on that board
#                  (floor/floor_main.c), built from the same frame logic as the
#                  lab's other floors (floor/frame_echo.c); it polls
#                  the NIC
#   a9-floor-irq   a9/build/stackmeter-a9-floor-irq.elf: the same floor built
#                  with -DFLOOR_IRQ: it sleeps in WFI until the NIC's receive
#                  interrupt wakes it through the GIC, as the interrupt-driven
#                  systems on that board idle (the interrupt only wakes the
#                  core, it is never taken as an exception)
# The board's own files are here (board.h, board.c: the global timer,
# lan9118.c, a9.ld); the rest is the floors' shared core (floor/floor.mk).
# Boot either with its address in the word at 0x60000000 (a9/floor/board.h):
#   qemu-system-arm -M vexpress-a9 -m 128M -display none -monitor none -serial stdio \
#     -kernel a9/build/stackmeter-a9-floor.elf \
#     -device loader,addr=0x60000000,data=0xC6121802,data-len=4 \
#     -nic tap,ifname=TAP,script=no,downscript=no,model=lan9118,mac=02:53:4d:00:00:09
include floor/floor.mk
A9_BUILD = a9/build
A9_FLOOR_ELF = $(A9_BUILD)/stackmeter-a9-floor.elf
A9_FLOOR_IRQ_ELF = $(A9_BUILD)/stackmeter-a9-floor-irq.elf
$(A9_FLOOR_ELF) $(A9_FLOOR_IRQ_ELF): FLOOR_BOARD = a9/floor
$(A9_FLOOR_ELF) $(A9_FLOOR_IRQ_ELF): FLOOR_CPU = -mcpu=cortex-a9
$(A9_FLOOR_ELF) $(A9_FLOOR_IRQ_ELF): FLOOR_LD = a9/floor/a9.ld
$(A9_FLOOR_IRQ_ELF): FLOOR_MODE = -DFLOOR_IRQ

.PHONY: a9-floor a9-floor-irq
a9-floor: $(A9_FLOOR_ELF)
a9-floor-irq: $(A9_FLOOR_IRQ_ELF)

$(A9_FLOOR_ELF) $(A9_FLOOR_IRQ_ELF): $(FLOOR_DEPS) a9/floor/board.c a9/floor/lan9118.c a9/floor/board.h \
		a9/floor/a9.ld a9/floor/floor.mk
	$(FLOOR_LINK)
