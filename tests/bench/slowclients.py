#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile clients for `make bench` (tests/bench/run.sh).

  slowclients.py trickle PORT SOURCE COUNT SECONDS [INTERVAL [REOPEN]]
      Keep COUNT connections open from each SOURCE address to
      127.0.0.1:PORT for SECONDS, each sending a GET's headers one byte
      every INTERVAL seconds (default 10, the attack the front-door issue
      describes) and never finishing them; a connection the broker closes
      or refuses is opened again REOPEN seconds later (default INTERVAL),
      as slowloris-style tools do on their next round; REOPEN 0 reopens at
      once.  A small INTERVAL (1) turns the attack into a connection
      flood: each refused connection comes back every second.  SOURCE is
      one address or a range of the last byte ("127.0.0.10-73": 64
      addresses, standing in for the nodes of one user's job).  Prints how
      many connections were opened in all.

  slowclients.py upload PORT SOURCE COUNT PID
      COUNT concurrent POST /v1/reservations of ~1 MiB without a valid
      token, from SOURCE; samples VmRSS of process PID every 20 ms while
      they run and prints the largest value in MiB.

SOURCE is a loopback address other than the well-behaved client's
(127.0.0.1), so that the per-address limit applies to the attack only.
"""
import select
import socket
import sys
import threading
import time


def connect(port, source):
    s = socket.socket()
    s.bind((source, 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def sources(spec):
    """The addresses of "A.B.C.X" or "A.B.C.X-Y"."""
    head, _, last = spec.rpartition(".")
    lo, _, hi = last.partition("-")
    return ["%s.%d" % (head, i) for i in range(int(lo), int(hi or lo) + 1)]


def trickle(port, source, count, seconds, interval, reopen):
    end = time.monotonic() + seconds
    header = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Slow: "
    conns = {}  # socket -> bytes of header sent
    byfd = {}  # file descriptor -> socket
    owner = {}  # socket -> its source address
    poller = select.poll()  # select() stops at descriptor 1024

    def drop(s, when):
        poller.unregister(s)
        del byfd[s.fileno()]
        del conns[s]
        reopen_at.append((when, owner.pop(s)))
        s.close()
    # when each free slot may connect again, and from which address
    reopen_at = [(0.0, a) for a in sources(source) for _ in range(count)]
    opened = 0
    next_byte = 0.0
    while time.monotonic() < end:
        now = time.monotonic()
        due = [r for r in reopen_at if r[0] <= now]
        reopen_at = [r for r in reopen_at if r[0] > now]
        for _, addr in due:
            try:
                s = connect(port, addr)
            except OSError:
                reopen_at.append((now + max(reopen, 0.05), addr))
                continue
            conns[s] = 0
            byfd[s.fileno()] = s
            owner[s] = addr
            poller.register(s, select.POLLIN)
            opened += 1
        for fd, _ in poller.poll(50):
            s = byfd.get(fd)
            if s is None:
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                drop(s, time.monotonic() + reopen)
        now = time.monotonic()
        if now >= next_byte:
            next_byte = now + interval
            for s, n in list(conns.items()):
                try:
                    s.send(header[n:n + 1] if n < len(header) else b"a")
                    conns[s] = n + 1
                except OSError:
                    drop(s, now + reopen)
    print(opened)


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def upload(port, source, count, pid):
    body = b"{" + b" " * (1000000 - 2) + b"}"
    head = ("POST /v1/reservations HTTP/1.1\r\nHost: bench\r\n"
            "Authorization: Bearer not-a-token\r\n"
            "Content-Type: application/json\r\nExpect:\r\n"
            "Content-Length: %d\r\n\r\n" % len(body)).encode()

    def one():
        try:
            s = socket.socket()
            s.bind((source, 0))
            s.settimeout(30)
            s.connect(("127.0.0.1", port))
            s.sendall(head + body)
            s.recv(4096)
            s.close()
        except OSError:
            pass  # closed by the broker after its 401

    threads = [threading.Thread(target=one) for _ in range(count)]
    peak = rss_mib(pid)
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_mib(pid))
        time.sleep(0.02)
    for t in threads:
        t.join()
    print("%.3f" % max(peak, rss_mib(pid)))


def main():
    mode, port, source, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    if mode == "trickle":
        interval = float(sys.argv[6]) if len(sys.argv) > 6 else 10.0
        reopen = float(sys.argv[7]) if len(sys.argv) > 7 else interval
        trickle(port, source, count, float(sys.argv[5]), interval, reopen)
    else:
        upload(port, source, count, int(sys.argv[5]))


if __name__ == "__main__":
    main()
