# The virt path floor (included by virt/virt.mk, or alone:
# make -C c-responder -f virt/floor/floor.mk virt-floor virt-floor-irq;
# paths from c-responder/), two builds of the same sources:
#   virt-floor      virt/build/stackmeter-virt-floor.elf: stackmeter's UDP
#                   echo answered with no stack on QEMU's virt machine
#                   (Cortex-A15 or A7, virtio-net on virtio-mmio), the path
#                   floor of a system on that board (floor/floor_main.c),
#                   built from the same frame logic as the lab's other floors
#                   (floor/frame_echo.c); it polls the NIC
#   virt-floor-irq  virt/build/stackmeter-virt-floor-irq.elf: the same floor
#                   built with -DFLOOR_IRQ: it sleeps in WFI until the
#                   NIC's interrupt wakes it through the GIC (taken only as a
#                   wake-up, never as an exception)
# The board's own files are here (board.h, board.c: the architected timer,
# virtio_net.c, virt.ld); the rest is the floors' shared core
# (floor/floor.mk), the Cortex-A9 floor's too.
# Boot either with its address in the word at 0x40100000 (virt/floor/board.h):
#   qemu-system-arm -M virt,highmem=off -cpu cortex-a7 -m 256M -nographic \
#     -kernel virt/build/stackmeter-virt-floor.elf \
#     -device loader,addr=0x40100000,data=0xC6121602,data-len=4 \
#     -netdev tap,id=n0,ifname=TAP,script=no,downscript=no \
#     -device virtio-net-device,netdev=n0,mac=02:53:4d:00:00:0b
include floor/floor.mk
VIRT_BUILD = virt/build
VIRT_FLOOR_ELF = $(VIRT_BUILD)/stackmeter-virt-floor.elf
VIRT_FLOOR_IRQ_ELF = $(VIRT_BUILD)/stackmeter-virt-floor-irq.elf
$(VIRT_FLOOR_ELF) $(VIRT_FLOOR_IRQ_ELF): FLOOR_BOARD = virt/floor
$(VIRT_FLOOR_ELF) $(VIRT_FLOOR_IRQ_ELF): FLOOR_CPU = -mcpu=cortex-a7
$(VIRT_FLOOR_ELF) $(VIRT_FLOOR_IRQ_ELF): FLOOR_LD = virt/floor/virt.ld
$(VIRT_FLOOR_IRQ_ELF): FLOOR_MODE = -DFLOOR_IRQ

.PHONY: virt-floor virt-floor-irq
virt-floor: $(VIRT_FLOOR_ELF)
virt-floor-irq: $(VIRT_FLOOR_IRQ_ELF)

$(VIRT_FLOOR_ELF) $(VIRT_FLOOR_IRQ_ELF): $(FLOOR_DEPS) virt/floor/board.c virt/floor/virtio_net.c \
		virt/floor/board.h virt/floor/virt.ld virt/floor/floor.mk
	$(FLOOR_LINK)
