#!/usr/bin/env python3
"""Holds many idle stackmeter sessions open (bench/sessions.sh's helper).

Why: the responder's cost per idle session can only be measured with real
connections that passed their header and then say nothing. One process
opens N TCP connections to HOST:PORT, each bound to a source address
127.0.0.x in turn (loopback has about 28,000 ephemeral ports per source
address, so 100,000 sessions need several), sends an rr session header
(1:1), reads the 8-byte accepted status record, and keeps every socket
open until stdin closes or READY_S seconds pass. Prints "ready N" on stdout
once all are accepted, then "closed" when it lets them go. Every wait is
bounded (TIMEOUT_S); a refusal or a timeout exits non-zero with one line.

usage: idle_sessions.py HOST PORT N [FIRST_SOURCE_OCTET] [SOURCES]
"""
import selectors
import socket
import struct
import sys
import time

TIMEOUT_S = 60
HOLD_S = 3600
HEADER = b"SMTR" + bytes([1, 1]) + struct.pack(">HII", 16, 1, 1)
BATCH = 512  # connections in flight at once while opening


def main():
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    sources = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    held = []
    sel = selectors.DefaultSelector()
    pending = {}
    deadline = time.monotonic() + TIMEOUT_S
    opened = 0
    while len(held) < n:
        while opened < n and len(pending) < BATCH:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((f"127.0.0.{first + opened % sources}", 0))
            s.settimeout(TIMEOUT_S)
            s.connect((host, port))
            s.sendall(HEADER)
            s.setblocking(False)
            pending[s] = b""
            sel.register(s, selectors.EVENT_READ)
            opened += 1
        left = deadline - time.monotonic()
        if left <= 0:
            sys.exit(f"idle_sessions.py: {len(held)} of {n} accepted before the {TIMEOUT_S} s timeout")
        for key, _ in sel.select(timeout=min(left, 1.0)):
            s = key.fileobj
            got = s.recv(8 - len(pending[s]))
            if not got:
                sys.exit(f"idle_sessions.py: the responder closed session {len(held) + 1} before its status")
            pending[s] += got
            if len(pending[s]) == 8:
                if pending[s][5] != 0:
                    sys.exit(f"idle_sessions.py: session {len(held) + 1} refused with code {pending[s][5]}")
                sel.unregister(s)
                del pending[s]
                held.append(s)
    print(f"ready {len(held)}", flush=True)
    sel.register(sys.stdin, selectors.EVENT_READ)
    sel.select(timeout=HOLD_S)
    for s in held:
        s.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
