# The microcontroller firmware (included by c-responder/Makefile):
#   mcu        mcu/build/stackmeter-mcu.elf: the engine and the lwIP raw
#              backend on the LM3S6965 (QEMU's lm3s6965evb), lwIP 2.1.3
#              fetched by mcu/fetch-lwip.sh (Debian's source package,
#              pinned and hashed; never committed)
#   mcu-size   flash and RAM per part (engine, backend, driver, board,
#              lwIP, C library), failing past the board's budget
#   mcu-run    boots it in QEMU with the console on stdout, no network
# Toolchain: Debian's gcc-arm-none-eabi with picolibc-arm-none-eabi.
MCU_CC ?= arm-none-eabi-gcc
MCU_BUILD = mcu/build
MCU_LWIP = $(MCU_BUILD)/lwip
MCU_OBJ = $(MCU_BUILD)/obj
MCU_ELF = $(MCU_BUILD)/stackmeter-mcu.elf
MCU_CPU = -mcpu=cortex-m3 -mthumb
MCU_OPT = -Os -g -ffunction-sections -fdata-sections -fno-common --specs=picolibc.specs
# The engine's pools for 64 KiB of SRAM: 6 sessions and 2 spare slots for
# Busy refusals, 2 throughput tests of 4 UDP streams each, small object
# and UDP buffers; responses are cut from an 8 KiB payload in flash. No
# kernel timestamps on this MAC (SMR_NO_TS). Authentication and the
# operator's limits stay in.
MCU_DEFS = -DSMR_MAX_CONNS=6 -DSMR_SPARE_CONNS=2 -DSMR_MAX_TESTS=2 -DSMR_MAX_STREAMS=4 \
	-DSMR_TX_CHUNK=8192 -DSMR_GEN_CHUNK=1024 -DSMR_RAW_UDP_MAX=1472 -DSMR_NO_TS \
	-DSMR_AUTH_PEERS=4 -DSMR_COUNT_PEERS=4 -DSMR_MAX_ALLOW=4 -DSMR_BUCKETS=8
MCU_INC = -Isrc -Imcu -Imcu/include -I$(MCU_LWIP)/src/include
# Budget: the board's flash less the 1 KiB provisioning block, its SRAM.
MCU_FLASH_MAX = 261120
MCU_RAM_MAX = 65536
# The C responder's files, from flags.mk's lists: the engine, the raw API
# backend and the netif glue, the MAC's driver and the board.
MCU_SMR_SRC = $(addprefix src/,$(SMR_ENGINE_SRC) $(SMR_LWIP_RAW_SRC) $(SMR_NETIF_SRC)) \
	$(addprefix mcu/,$(SMR_MCU_NIC_SRC) $(SMR_MCU_BOARD_SRC))
MCU_LWIP_SRC = $(addprefix $(MCU_LWIP)/src/,core/def.c core/inet_chksum.c core/init.c core/ip.c \
	core/mem.c core/memp.c core/netif.c core/pbuf.c core/tcp.c core/tcp_in.c core/tcp_out.c \
	core/timeouts.c core/udp.c core/ipv4/etharp.c core/ipv4/icmp.c core/ipv4/ip4.c \
	core/ipv4/ip4_addr.c netif/ethernet.c)
MCU_SMR_OBJ = $(patsubst %.c,$(MCU_OBJ)/smr/%.o,$(notdir $(MCU_SMR_SRC)))
MCU_LWIP_OBJ = $(patsubst $(MCU_LWIP)/src/%.c,$(MCU_OBJ)/lwip/%.o,$(MCU_LWIP_SRC))
MCU_HDRS = $(wildcard src/*.h mcu/*.h mcu/include/*.h mcu/include/arch/*.h) mcu/mcu.mk flags.mk

.PHONY: mcu mcu-size mcu-run mcu-lwip
mcu: $(MCU_ELF)

$(MCU_LWIP)/.stackmeter-2.1.3+dfsg1-2:
	./mcu/fetch-lwip.sh $(abspath $(MCU_BUILD))
mcu-lwip: $(MCU_LWIP)/.stackmeter-2.1.3+dfsg1-2

$(MCU_OBJ)/smr/%.o: src/%.c $(MCU_HDRS) | mcu-lwip
	@mkdir -p $(@D)
	$(MCU_CC) $(SMR_WARN) -DSMR_VERSION='"$(VERSION)"' $(MCU_CPU) $(MCU_OPT) $(MCU_DEFS) $(MCU_INC) -c -o $@ $<
$(MCU_OBJ)/smr/%.o: mcu/%.c $(MCU_HDRS) | mcu-lwip
	@mkdir -p $(@D)
	$(MCU_CC) $(SMR_WARN) -DSMR_VERSION='"$(VERSION)"' $(MCU_CPU) $(MCU_OPT) $(MCU_DEFS) $(MCU_INC) -c -o $@ $<
# lwIP's own sources: its language (gnu99), our options, no -Werror.
$(MCU_OBJ)/lwip/%.o: $(MCU_LWIP)/src/%.c $(MCU_HDRS) | mcu-lwip
	@mkdir -p $(@D)
	$(MCU_CC) -std=gnu99 -w $(MCU_CPU) $(MCU_OPT) $(MCU_DEFS) $(MCU_INC) -c -o $@ $<

$(MCU_ELF): $(MCU_SMR_OBJ) $(MCU_LWIP_OBJ) mcu/lm3s6965.ld
	$(MCU_CC) $(MCU_CPU) $(MCU_OPT) -nostartfiles -T mcu/lm3s6965.ld -Wl,--gc-sections \
		-Wl,-Map=$(MCU_BUILD)/stackmeter-mcu.map -o $@ $(MCU_SMR_OBJ) $(MCU_LWIP_OBJ)

# size.sh names each part by its files, the same lists.
mcu-size: $(MCU_ELF)
	SMR_PART_ENGINE="$(SMR_ENGINE_SRC)" SMR_PART_BACKEND="$(SMR_LWIP_RAW_SRC) $(SMR_NETIF_SRC)" \
	SMR_PART_DRIVER="$(SMR_MCU_NIC_SRC)" SMR_PART_BOARD="$(SMR_MCU_BOARD_SRC)" \
		./mcu/size.sh $(MCU_BUILD)/stackmeter-mcu.map $(MCU_FLASH_MAX) $(MCU_RAM_MAX)

mcu-run: $(MCU_ELF)
	qemu-system-arm -M lm3s6965evb -nographic -monitor none -serial stdio -kernel $(MCU_ELF)

# The Rust firmware (firmware/mcu-smoltcp: the Rust protocol core on
# smoltcp, for the same board), built by cargo for thumbv7m-none-eabi and
# copied beside the C firmware, so the lab finds both in one folder:
#   mcu-smoltcp       mcu/build/stackmeter-mcu-smoltcp.elf, and the
#                     board's path floor (no stack: bench/path-floors.sh)
#                     mcu/build/stackmeter-mcu-floor.elf
#   mcu-smoltcp-size  the firmware's flash and RAM per part, failing past
#                     the budget
# Toolchain: rustup's thumbv7m-none-eabi target (scripts/deps adds it).
MCU_SMOLTCP_DIR = ../firmware/mcu-smoltcp
MCU_SMOLTCP_ELF = $(MCU_BUILD)/stackmeter-mcu-smoltcp.elf
.PHONY: mcu-smoltcp mcu-smoltcp-size
mcu-smoltcp:
	cd $(MCU_SMOLTCP_DIR) && cargo build --release --locked --quiet --target-dir target
	@mkdir -p $(MCU_BUILD)
	cp $(MCU_SMOLTCP_DIR)/target/thumbv7m-none-eabi/release/stackmeter-mcu-smoltcp $(MCU_SMOLTCP_ELF)
	cp $(MCU_SMOLTCP_DIR)/target/thumbv7m-none-eabi/release/floor $(MCU_BUILD)/stackmeter-mcu-floor.elf
mcu-smoltcp-size: mcu-smoltcp
	$(MCU_SMOLTCP_DIR)/size.sh $(MCU_SMOLTCP_ELF) $(MCU_FLASH_MAX) $(MCU_RAM_MAX)
