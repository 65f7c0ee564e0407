# The virt path floor (included by virt/virt.mk, or alone:
# make -C c-responder -f virt/floor/floor.mk virt-floor virt-floor-irq;
# paths from c-responder/), two builds of the same sources:
#   virt-floor      virt/build/stackmeter-virt-floor.elf: stackmeter's UDP
#                   echo answered with no stack on QEMU's virt machine
#                   (Cortex-A15 or A7, virtio-net on virtio-mmio), the path
#                   floor of a system on that board (virt/floor/floor.c),
#                   built from the same frame logic as the lab's other floors
#                   (floor/frame_echo.c); it polls the NIC
#   virt-floor-irq  virt/build/stackmeter-virt-floor-irq.elf: the same floor
#                   built with -DVIRT_FLOOR_IRQ: it sleeps in WFI until the
#                   NIC's interrupt wakes it through the GIC (taken only as a
#                   wake-up, never as an exception)
# Bare metal with no C library, ARM state, no unaligned accesses (the MMU
# stays off). The start-up code and the four string.h functions are the
# Cortex-A9 floor's (a9/floor/start.S, a9/floor/libc.c: plain ARMv7-A).
# Boot either with its address in the word at 0x40100000 (virt/floor/virt.h):
#   qemu-system-arm -M virt,highmem=off -cpu cortex-a7 -m 256M -nographic \
#     -kernel virt/build/stackmeter-virt-floor.elf \
#     -device loader,addr=0x40100000,data=0xC6121602,data-len=4 \
#     -netdev tap,id=n0,ifname=TAP,script=no,downscript=no \
#     -device virtio-net-device,netdev=n0,mac=02:53:4d:00:00:0b
# Toolchain: Debian's gcc-arm-none-eabi (libgcc only).
ifndef SMR_WARN
include flags.mk
endif
VIRT_CC ?= arm-none-eabi-gcc
VIRT_BUILD = virt/build
VIRT_FLOOR_ELF = $(VIRT_BUILD)/stackmeter-virt-floor.elf
VIRT_FLOOR_IRQ_ELF = $(VIRT_BUILD)/stackmeter-virt-floor-irq.elf
VIRT_FLOOR_CPU = -mcpu=cortex-a7 -marm -mfloat-abi=soft -mno-unaligned-access
VIRT_FLOOR_OPT = -O2 -g -ffreestanding -nostdlib -fno-tree-loop-distribute-patterns \
	-ffunction-sections -fdata-sections
VIRT_FLOOR_INC = -Isrc -Ivirt/floor -Ifloor
VIRT_FLOOR_SRC = a9/floor/start.S virt/floor/board.c a9/floor/libc.c virt/floor/virtio_net.c \
	virt/floor/floor.c floor/frame_echo.c
VIRT_FLOOR_DEPS = $(VIRT_FLOOR_SRC) virt/floor/virt.h virt/floor/virt.ld virt/floor/floor.mk src/smr_nic.h \
	floor/frame_echo.h flags.mk
# What selects the build: nothing (polling), -DVIRT_FLOOR_IRQ (interrupts).
VIRT_FLOOR_MODE =
$(VIRT_FLOOR_IRQ_ELF): VIRT_FLOOR_MODE = -DVIRT_FLOOR_IRQ

.PHONY: virt-floor virt-floor-irq
virt-floor: $(VIRT_FLOOR_ELF)
virt-floor-irq: $(VIRT_FLOOR_IRQ_ELF)

$(VIRT_FLOOR_ELF) $(VIRT_FLOOR_IRQ_ELF): $(VIRT_FLOOR_DEPS)
	@mkdir -p $(@D)
	$(VIRT_CC) $(SMR_WARN) $(VIRT_FLOOR_MODE) $(VIRT_FLOOR_CPU) $(VIRT_FLOOR_OPT) $(VIRT_FLOOR_INC) \
		-T virt/floor/virt.ld -Wl,--gc-sections -Wl,-Map=$(@:.elf=.map) -o $@ $(VIRT_FLOOR_SRC) -lgcc
