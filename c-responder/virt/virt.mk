# QEMU's virt machine (Cortex-A7/A15, virtio-net on virtio-mmio), included
# by c-responder/Makefile: the lab's second RTOS, NuttX, against Linux on
# the same emulated board (`stackmeter lab up nuttx linux-virt`,
# virt/README.md), and the board's path floor:
#   nuttx       virt/build/stackmeter-nuttx.elf: NuttX (qemu-armv7a:nsh
#               with our changes) with the C responder as an application,
#               started at boot (virt/nuttx/build.sh), from NuttX's source
#               at $(STACKMETER_NUTTX_SRC), a tarball or a folder
#   linux-virt  virt/build/linux-virt/{vmlinuz,initramfs.gz}: Debian's
#               armhf kernel, busybox and the C responder built static
#               (a9/linux/build.sh with the board virt), packages from
#               Debian's archive
#   virt-floor  virt/build/stackmeter-virt-floor.elf: the path floor, no
#               stack, polling (virt/floor/floor.mk)
#   virt-floor-irq
#               virt/build/stackmeter-virt-floor-irq.elf: the same floor
#               woken by the NIC's interrupt (virt/floor/floor.mk)
# Toolchains: Debian's gcc-arm-none-eabi (NuttX, the floor) with
# kconfig-frontends-nox (NuttX's configuration), gcc-arm-linux-gnueabihf
# (the Linux responder); cpio.
VIRT_OUT = virt/build
# The address built into NuttX's image (NUTTX_IP, NUTTX_GW, NUTTX_MAC):
# the lab's board table's, from boards.mk (the Makefile includes it); a
# command line or the environment may give others (the lab then refuses
# the image).
export NUTTX_IP NUTTX_GW NUTTX_MAC

include virt/floor/floor.mk

# Each rebuilt when one of its inputs changed: the responder's sources,
# our NuttX files and the RTOS builds' shared ones (rtos-build.sh, stamps/),
# or NuttX's source itself; the Linux init and script.
VIRT_NUTTX_ELF = $(VIRT_OUT)/stackmeter-nuttx.elf
VIRT_LINUX = $(VIRT_OUT)/linux-virt/initramfs.gz
VIRT_NUTTX_DEPS = $(DEPS) boards.mk rtos-build.sh $(wildcard stamps/*) $(shell find virt/nuttx -type f) $(wildcard $(STACKMETER_NUTTX_SRC))

.PHONY: nuttx linux-virt
nuttx: $(VIRT_NUTTX_ELF)
linux-virt: $(VIRT_LINUX)

$(VIRT_NUTTX_ELF): $(VIRT_NUTTX_DEPS)
	./virt/nuttx/build.sh $(VIRT_OUT)
$(VIRT_LINUX): $(DEPS) a9/linux/init a9/linux/build.sh
	./a9/linux/build.sh $(VIRT_OUT) virt
