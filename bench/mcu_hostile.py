#!/usr/bin/env python3
"""bench/mcu_hostile.py: hostile clients against one responder (run by
bench/mcu.sh against the microcontroller firmware): junk TCP, junk UDP,
1,000 connection attempts that send nothing, and a flood that holds more
connections open than the responder has slots. Prints one line per part
with what it saw and exits 1 when a connection hung (no answer, no reset,
no close within the timeout) or the flood was not refused cleanly.

Usage: mcu_hostile.py HOST PORT SLOTS
  SLOTS: the responder's connection slots (sessions plus spare ones); the
  flood opens three times as many.
"""
import os
import random
import socket
import sys
import time

HOST, PORT, SLOTS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
TIMEOUT = 3.0
rng = random.Random(25)
failed = []


def conn():
    s = socket.create_connection((HOST, PORT), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def ends(s):
    """How a connection the responder should give up on ends: 'status N'
    (a refusal record), 'reset', 'closed', or 'hung'."""
    try:
        b = s.recv(64)
        if len(b) >= 6 and b[:4] == b"SMTR":
            return "status %d" % b[5]
        return "closed" if not b else "bytes"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "hung"


def tally(results):
    out = {}
    for r in results:
        out[r] = out.get(r, 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(out.items()))


# Junk TCP: connections that send random bytes instead of a header (a
# whole header's worth or more: refused at once), then four at a time that
# send less than a header and stop (refused when the header timeout, 5 s,
# runs out).
res = []
for i in range(200):
    try:
        s = conn()
        s.sendall(os.urandom(rng.randint(16, 64)))
        res.append(ends(s))
        s.close()
    except OSError as e:
        res.append("connect failed: %s" % e.__class__.__name__)
print("junk tcp: 200 connections, 16-64 random bytes: %s" % tally(res))
if "hung" in res:
    failed.append("junk tcp")
res = []
for k in range(2):
    short = []
    for i in range(4):
        s = conn()
        s.settimeout(8.0)
        s.sendall(os.urandom(rng.randint(1, 15)))
        short.append(s)
    res += [ends(s) for s in short]
    for s in short:
        s.close()
print("junk tcp: 8 connections, 1-15 random bytes then nothing: %s" % tally(res))
if "hung" in res:
    failed.append("short junk tcp")

# Junk UDP: random datagrams of random sizes; none may be answered.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(0.2)
for i in range(5000):
    u.sendto(os.urandom(rng.randint(1, 1472)), (HOST, PORT))
    if i % 100 == 0:
        time.sleep(0.005)
answered = 0
try:
    while True:
        u.recvfrom(2048)
        answered += 1
except socket.timeout:
    pass
print("junk udp: 5000 datagrams, %d answered" % answered)
if answered:
    failed.append("junk udp")

# 1,000 connection attempts that send nothing and close at once.
ok = 0
for i in range(1000):
    try:
        s = conn()
        s.close()
        ok += 1
    except OSError:
        pass
print("connect and close: 1000 attempts, %d connected" % ok)
if ok < 900:
    failed.append("connect and close")

# A flood past the connection table: 3 x SLOTS connections held open,
# each sending a partial header; every one past the table must be
# refused cleanly (Busy status, a reset, or never accepted), none hang.
held, res = [], []
for i in range(3 * SLOTS):
    try:
        s = conn()
        s.sendall(b"SMTR")
        held.append(s)
    except OSError as e:
        res.append("not accepted")
time.sleep(0.5)
for s in held:
    s.settimeout(0.3)
    try:
        b = s.recv(64)
        res.append(("status %d" % b[5]) if len(b) >= 6 and b[:4] == b"SMTR" else ("closed" if not b else "bytes"))
    except ConnectionResetError:
        res.append("reset")
    except socket.timeout:
        res.append("waiting for its header")
for s in held:
    s.close()
print("flood: %d connections at once (%d slots): %s" % (3 * SLOTS, SLOTS, tally(res)))
waiting = res.count("waiting for its header")
if waiting > SLOTS:
    failed.append("flood: %d held past the table" % waiting)

if failed:
    print("FAILED: " + "; ".join(failed))
    sys.exit(1)
