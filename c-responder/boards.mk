# The addresses built into the lab's images: generated from the lab's board
# table (crates/lab/src/boards.rs) by `stackmeter lab boards --make`, and checked
# against it by a test; change the table, then regenerate this file.
EMBOX_IP ?= 198.18.18.2
EMBOX_GW ?= 198.18.18.1
EMBOX_MAC ?= 02:53:4d:00:00:07
NUTTX_IP ?= 198.18.20.2
NUTTX_GW ?= 198.18.20.1
NUTTX_MAC ?= 02:53:4d:00:00:09
