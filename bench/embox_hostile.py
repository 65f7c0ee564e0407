#!/usr/bin/env python3
"""bench/embox_hostile.py: the lab test's hostile clients (crates/cli/tests/
suite/lab.rs, `hostile`) in a loop against a board that is already up,
watching its console for a crash: the repro of Embox's write-after-free in
its network buffers (c-responder/a9/embox/FINDINGS.md). bench/embox-hostile.sh
brings Embox up, runs this and tears it down.

One round is the test's mix: a flood of idle connections from a second
address on the TAP network (slots + 8 of them), an rr 64:64 from the first
address beside it (`stackmeter rr`, when --stackmeter is given), the flood
dropped, 20 connections sending 16-64 junk bytes instead of a header, 4
sending 1-13 bytes and then nothing until the header timeout, 500 junk UDP
datagrams of 1-1472 bytes (one of 1,471 bytes: a 1,513-byte frame, the
size whose FCS word Embox's driver wrote into the next buffer). With
--concurrent the junk TCP, the held connections, the junk UDP and a second
flood run at the same time (more buffers in use at once, as a loaded
board has them). After every round: an ICMP echo must be answered within
10 s and the console must show no exception.

Usage: embox_hostile.py --console FILE [--rounds N] [--concurrent]
         [--stackmeter BIN] [--host 198.18.18.1] [--second 198.18.18.3]
         [--board 198.18.18.2] [--port 24680] [--slots 20]
Exit: 0 all rounds survived, 1 the board crashed or stopped answering,
2 a usage or setup error. Prints one line per round and, on a crash, the
console's last lines.
"""
import argparse
import socket
import subprocess
import sys
import threading
import time

CRASH_WORDS = ("exception", "panic", "assert", "Unresolvable")


class Junk:
    """The test's xorshift64 junk: the same bytes in the same order."""

    def __init__(self):
        self.x = 0x2545F4914F6CDD1D

    def take(self, n):
        out = bytearray()
        m = (1 << 64) - 1
        for _ in range(n):
            self.x ^= (self.x << 13) & m
            self.x ^= self.x >> 7
            self.x ^= (self.x << 17) & m
            out.append(self.x & 0xFF)
        return bytes(out)


def connect(src, to, timeout=2.0, tries=1):
    for _ in range(tries):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.bind((src, 0))
            s.connect(to)
            return s
        except OSError:
            s.close()
    return None


def ends(s, t):
    """How a connection the responder gives up on ends: 'status N',
    'closed', 'reset' or 'hung'."""
    s.settimeout(t)
    try:
        b = s.recv(64)
        if len(b) >= 6 and b[:4] == b"SMTR":
            return "status %d" % b[5]
        return "closed"
    except socket.timeout:
        return "hung"
    except OSError:
        return "reset"


def flood(a, to, note):
    held = [s for s in (connect(a.second, to) for _ in range(a.slots + 8)) if s]
    note.append("flood %d" % len(held))
    return held


def rr(a, to, note):
    if not a.stackmeter:
        return
    p = subprocess.run(
        [a.stackmeter, "rr", "%s:%d" % to, "--sizes", "64:64", "-n", "50"],
        capture_output=True, text=True, timeout=60)
    note.append("rr %s" % ("ok" if p.returncode == 0 else "failed"))


def junk_tcp(a, to, junk, note):
    res = []
    for i in range(20):
        s = connect(a.host, to, tries=5)
        if not s:
            res.append("no connect")
            continue
        try:
            s.sendall(junk.take(16 + i * 2))
            res.append(ends(s, 3.0))
        except OSError:
            res.append("reset")
        s.close()
    note.append("junk tcp " + tally(res))


def held_header(a, to, junk, note):
    short = []
    for i in range(4):
        s = connect(a.host, to, tries=5)
        if s:
            try:
                s.sendall(junk.take(1 + i * 4))
            except OSError:
                pass
            short.append(s)
    res = [ends(s, 8.0) for s in short]
    for s in short:
        s.close()
    note.append("held " + tally(res))


def junk_udp(a, to, junk, note):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((a.host, 0))
    for i in range(500):
        try:
            u.sendto(junk.take(1 + (i * 37) % 1472), to)
        except OSError:
            pass
        if i % 50 == 49:
            time.sleep(0.005)
    u.settimeout(0.3)
    try:
        u.recvfrom(2048)
        note.append("udp ANSWERED")
    except socket.timeout:
        note.append("udp 500")
    u.close()


def tally(res):
    out = {}
    for r in res:
        out[r] = out.get(r, 0) + 1
    return "(" + ", ".join("%s %d" % kv for kv in sorted(out.items())) + ")"


def round_sequential(a, to, junk, note):
    held = flood(a, to, note)
    rr(a, to, note)
    for s in held:
        s.close()
    junk_tcp(a, to, junk, note)
    held_header(a, to, junk, note)
    junk_udp(a, to, junk, note)


def round_concurrent(a, to, junk, note):
    held = flood(a, to, note)
    rr(a, to, note)
    for s in held:
        s.close()
    # Each thread its own generator state (the bytes differ from the
    # sequential round's; the sizes are the test's).
    parts = [
        threading.Thread(target=junk_tcp, args=(a, to, Junk(), note)),
        threading.Thread(target=held_header, args=(a, to, Junk(), note)),
        threading.Thread(target=junk_udp, args=(a, to, Junk(), note)),
        threading.Thread(target=lambda: [s.close() for s in flood(a, to, note)]),
    ]
    for t in parts:
        t.start()
    for t in parts:
        t.join(60)


def console_crash(path, start):
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8", "replace")
    for line in text.splitlines():
        if any(w in line for w in CRASH_WORDS):
            return line.strip()
    return None


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def answers_ping(board, tries):
    """An ICMP echo (a raw socket: root) answered within 1 s, of `tries`."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(1.0)
    try:
        for seq in range(tries):
            body = b"embox_hostile" + bytes([seq]) * 43
            hdr = bytes([8, 0, 0, 0, 0x53, 0x4D, 0, seq])
            c = checksum(hdr + body)
            s.sendto(hdr[:2] + c.to_bytes(2, "big") + hdr[4:] + body, (board, 0))
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                try:
                    pkt, src = s.recvfrom(2048)
                except socket.timeout:
                    break
                icmp = pkt[(pkt[0] & 0xF) * 4:]
                if src[0] == board and icmp[0] == 0 and icmp[8:] == body:
                    return True
        return False
    finally:
        s.close()


def last_lines(path, n=25):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace").splitlines()[-n:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--console", required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--concurrent", action="store_true")
    p.add_argument("--stackmeter")
    p.add_argument("--host", default="198.18.18.1")
    p.add_argument("--second", default="198.18.18.3")
    p.add_argument("--board", default="198.18.18.2")
    p.add_argument("--port", type=int, default=24680)
    p.add_argument("--slots", type=int, default=20)
    a = p.parse_args()
    to = (a.board, a.port)
    try:
        start = len(open(a.console, "rb").read())
    except OSError as e:
        print("embox_hostile: cannot read the console %s: %s" % (a.console, e), file=sys.stderr)
        return 2
    junk = Junk()
    t0 = time.monotonic()
    for r in range(1, a.rounds + 1):
        note = []
        (round_concurrent if a.concurrent else round_sequential)(a, to, junk, note)
        # The board may still be closing the round's connections: up to
        # 10 s for an answer, then the console once more.
        alive = answers_ping(a.board, tries=10)
        crash = console_crash(a.console, start)
        print("round %d (%.0f s): %s; ping %s" % (
            r, time.monotonic() - t0, ", ".join(note), "answered" if alive else "NOT answered"),
            flush=True)
        if crash or not alive:
            print("CRASH after %d of %d rounds survived: %s" % (
                r - 1, a.rounds, crash or "the board answers no ping"))
            print("console's last lines:")
            for line in last_lines(a.console):
                print("  " + line)
            return 1
    print("survived %d of %d rounds (%.0f s)" % (a.rounds, a.rounds, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
