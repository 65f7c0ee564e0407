# c-responder/a9/embox/debug/catch-rx-overrun.py - the gdb script that
# caught the writer of Embox's skb pool corruption (FINDINGS.md): at every
# frame the LAN9118 driver has read from its RX FIFO it checks where the
# read ended, and stops when the words read ran past the skb's pool block
# into a block on the free list (the write that later crashes
# skb_data_alloc). Needs our build (the driver stamps' hook
# smr_embox_frame_rx(frame, len) is where it stops) and QEMU's gdbstub:
#   qemu-system-arm ... -gdb tcp:127.0.0.1:1234 -S   (the lab's arguments)
#   gdb-multiarch -q -batch -ex "file c-responder/a9/build/stackmeter-embox.elf" \
#       -ex "target remote 127.0.0.1:1234" -x c-responder/a9/embox/debug/catch-rx-overrun.py
# then send frames of 1513 bytes (UDP datagrams of 1471 bytes) in bursts.
import struct

import gdb


def num(expr):
    return int(gdb.parse_and_eval(expr))


HEAD = num("(unsigned)&skb_data_pool.free_blocks")
POOL = num("(unsigned)&__pool_storageskb_data_pool")
BLOCK = num("sizeof(__pool_storageskb_data_pool[0])")
COUNT = num("sizeof(__pool_storageskb_data_pool)") // BLOCK
DATA = num("(unsigned)&((struct sk_buff_data_fixed *)0)->data")
inf = gdb.selected_inferior()


def word(a):
    return struct.unpack("<I", bytes(inf.read_memory(a, 4)))[0]


def free_list():
    out, p = [], word(HEAD)
    while p != HEAD and len(out) <= COUNT:
        out.append(p)
        if not POOL <= p < POOL + COUNT * BLOCK:
            break
        p = word(p)
    return out


gdb.execute("set pagination off")
gdb.Breakpoint("smr_embox_frame_rx", internal=True)
frames = 0
while True:
    gdb.execute("continue", to_string=True)
    raw, plen = num("$r0"), num("$r1")
    frames += 1
    words = (plen + 4 + 3) // 4  # the FIFO entry: the frame and its FCS
    block = raw - DATA
    nxt = block + BLOCK
    if raw + words * 4 <= nxt:
        continue
    free = free_list()
    state = "on the free list (position %d)" % free.index(nxt) if nxt in free else "in use or never used"
    tail = bytes(inf.read_memory(raw + plen, words * 4 - plen)).hex()
    print("frame %d: %d bytes + FCS read as %d words into block 0x%x: %d bytes past it, into block 0x%x, %s; "
          "its first word is now 0x%08x; the bytes after the frame: %s"
          % (frames, plen, words, block, raw + words * 4 - nxt, nxt, state, word(nxt), tail), flush=True)
    if nxt in free:
        print(gdb.execute("bt 6", to_string=True), flush=True)
        break
