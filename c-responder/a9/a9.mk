# The emulated Cortex-A9 board (QEMU's vexpress-a9 with its SMSC LAN9118),
# included by c-responder/Makefile. The UDP echo write-up compared Embox
# RTOS with GNU/Linux on one Cortex-A9 board; these build both for the
# lab (`stackmeter lab up embox linux-a9`, docs/lab.md) and the board's
# path floor:
#   embox      a9/build/stackmeter-embox.elf: Embox with the C responder
#              as a command (a9/embox/build.sh), from Embox's source at
#              $(STACKMETER_EMBOX_SRC), a tarball or a folder
#   linux-a9   a9/build/linux-a9/{vmlinuz,vexpress.dtb,initramfs.gz}:
#              Debian's armhf kernel, busybox and the C responder built
#              static (a9/linux/build.sh), packages from Debian's archive
#   a9-floor   a9/build/stackmeter-a9-floor.elf: the path floor, no stack,
#              polling (a9/floor/floor.mk)
#   a9-floor-irq
#              a9/build/stackmeter-a9-floor-irq.elf: the same floor woken
#              by the NIC's interrupt (a9/floor/floor.mk)
# Toolchains: Debian's gcc-arm-none-eabi (Embox, the floor) and
# gcc-arm-linux-gnueabihf (the Linux responder); cpio.
A9_OUT = a9/build
# The address built into Embox's image (EMBOX_IP, EMBOX_GW, EMBOX_MAC):
# the lab's board table's, from boards.mk (the Makefile includes it); a
# command line or the environment may give others (the lab then refuses
# the image).
export EMBOX_IP EMBOX_GW EMBOX_MAC

include a9/floor/floor.mk

# Each rebuilt when one of its inputs changed: the responder's sources,
# our Embox files and the RTOS builds' shared ones (rtos-build.sh, stamps/),
# or Embox's source itself; the Linux init.
A9_EMBOX_ELF = $(A9_OUT)/stackmeter-embox.elf
A9_LINUX = $(A9_OUT)/linux-a9/initramfs.gz
A9_EMBOX_DEPS = $(DEPS) boards.mk rtos-build.sh $(wildcard stamps/*) $(shell find a9/embox -type f) $(wildcard $(STACKMETER_EMBOX_SRC))

.PHONY: embox linux-a9
embox: $(A9_EMBOX_ELF)
linux-a9: $(A9_LINUX)

$(A9_EMBOX_ELF): $(A9_EMBOX_DEPS)
	./a9/embox/build.sh $(A9_OUT)
$(A9_LINUX): $(DEPS) a9/linux/init a9/linux/build.sh
	./a9/linux/build.sh $(A9_OUT)

# The responder for the Linux guest: the POSIX build, static, for armhf
# (a9/linux/build.sh runs this with the cross compiler).
stackmeter-responder-a9: $(DEPS)
	$(ARM_CC) $(WARN) $(SMR_OPT) -static -o $@ $(ENGINE_SRC) $(POSIX_SRC) $(MAIN_SRC)
