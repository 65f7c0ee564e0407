#!/usr/bin/env python3
"""proxies/edge_checks.py: how a TCP proxy handles the edges of a
connection's life, checked from both ends (bench/proxies-race.sh runs it
against each proxy of proxies/). Each check plays the upstream server
itself, on UPSTREAM_PORT, and a client through the proxy on PROXY_PORT;
the proxy must have been started forwarding to 127.0.0.1:UPSTREAM_PORT.
Prints one line and exits 0 when the proxy behaved, 1 otherwise.

Usage: edge_checks.py CHECK PROXY_PORT UPSTREAM_PORT [N]
  halfclose  the client sends 64 KiB and shuts down its writes; the server
             reads to the end of stream, then answers 64 KiB and closes.
             A proxy that forwards the half-close delivers the answer.
  timeout    the upstream port accepts no connection (a listener whose
             backlog is full): how long the proxy keeps the client waiting
             before it gives up (bounded at 30 s).
  upstream-down  nothing listens on the upstream port: the client must
             see its connection end (closed or reset), not hang.
  capacity   N client connections at once (N: the 4th argument, 1000):
             how many reach the upstream within 30 s, and how long it took
             (this process needs 2 N open files).
"""
import hashlib
import socket
import sys
import threading
import time

CHECK, PROXY, UPSTREAM = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HOST = "127.0.0.1"
SIZE = 64 * 1024


def listener(backlog):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, UPSTREAM))
    s.listen(backlog)
    return s


def read_all(s, limit=10 * SIZE):
    data = b""
    while len(data) < limit:
        b = s.recv(65536)
        if not b:
            break
        data += b
    return data


def halfclose():
    srv = listener(4)
    srv.settimeout(10)
    got = {}

    def serve():
        try:
            c, _ = srv.accept()
            c.settimeout(10)
            got["request"] = read_all(c)
            c.sendall(hashlib.sha256(got["request"]).digest() * (SIZE // 32))
            c.close()
        except OSError as e:
            got["error"] = str(e)

    t = threading.Thread(target=serve)
    t.start()
    request = bytes(range(256)) * (SIZE // 256)
    c = socket.create_connection((HOST, PROXY), timeout=10)
    c.sendall(request)
    c.shutdown(socket.SHUT_WR)
    try:
        answer = read_all(c)
        how = "end of stream"
    except ConnectionResetError:
        answer, how = b"", "reset"
    except socket.timeout:
        answer, how = b"", "no answer in 10 s"
    t.join()
    c.close()
    srv.close()
    want = hashlib.sha256(request).digest() * (SIZE // 32)
    if got.get("request") == request and answer == want:
        print("halfclose: forwarded (%d bytes then FIN; the %d byte answer arrived)" % (len(request), len(answer)))
        return 0
    print("halfclose: answer lost (the server got %d bytes and FIN; the client got %d of %d answer bytes, then %s)"
          % (len(got.get("request", b"")), len(answer), len(want), how))
    return 1


def timeout():
    srv = listener(0)
    # Fill the accept queue (backlog 0 holds one), so further SYNs are dropped.
    fillers = []
    for _ in range(3):
        f = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        f.setblocking(False)
        f.connect_ex((HOST, UPSTREAM))
        fillers.append(f)
    time.sleep(0.3)
    c = socket.create_connection((HOST, PROXY), timeout=5)
    c.settimeout(30)
    t0 = time.monotonic()
    try:
        b = c.recv(64)
        how = "closed" if not b else "bytes"
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "still waiting"
    waited = time.monotonic() - t0
    c.close()
    for f in fillers:
        f.close()
    srv.close()
    print("timeout: the client's connection %s after %.1f s" % (how, waited))
    return 0 if how != "still waiting" else 1


def upstream_down():
    t0 = time.monotonic()
    try:
        # On loopback the proxy may accept, fail upstream and reset the
        # connection before connect() has even returned here.
        c = socket.create_connection((HOST, PROXY), timeout=5)
    except ConnectionResetError:
        print("upstream-down: the client's connection reset after %.3f s (during connect)" % (time.monotonic() - t0))
        return 0
    c.settimeout(10)
    try:
        b = c.recv(64)
        how = "closed" if not b else "bytes"
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "hung"
    print("upstream-down: the client's connection %s after %.3f s" % (how, time.monotonic() - t0))
    return 0 if how in ("closed", "reset") else 1


def capacity():
    want = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    srv = listener(4096)
    srv.settimeout(0.5)
    accepted = []
    t0 = time.monotonic()

    def serve():
        while len(accepted) < want and time.monotonic() - t0 < 30:
            try:
                accepted.append(srv.accept()[0])
            except socket.timeout:
                pass

    t = threading.Thread(target=serve)
    t.start()
    clients, failed = [], 0
    for _ in range(want):
        try:
            clients.append(socket.create_connection((HOST, PROXY), timeout=5))
        except OSError:
            failed += 1
    t.join()
    took = time.monotonic() - t0
    for c in clients + accepted:
        c.close()
    srv.close()
    print("capacity: %d of %d connections reached the upstream in %.1f s (%d connects failed)"
          % (len(accepted), want, took, failed))
    return 0 if len(accepted) == want else 1


sys.exit({"halfclose": halfclose, "timeout": timeout, "upstream-down": upstream_down,
          "capacity": capacity}[CHECK]())
