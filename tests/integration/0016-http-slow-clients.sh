#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Slow clients cannot lock others out.  Connections from one address are
# limited (server.per_ip_connections), so a flood from one address leaves
# room for everyone else; and a request's headers and body must arrive
# within server.request_deadline_ms of its start, however the bytes
# trickle (libmicrohttpd's idle timeout restarts on every byte).
# Loopback accepts any 127.0.0.0/8 source, which stands in for other hosts.
. "$(dirname "$0")/lib.sh"

slow_clients_up 64 2000

# trickle SECONDS SPEC...: open connections, each SPEC being
# COUNT:SOURCE:KIND (KIND headers: a GET whose headers never end; body: a
# POST with a valid token whose body never ends), send one byte per
# connection every 0.25 s, and print "SOURCE KIND closed-after-seconds"
# per connection ("open" if still open after SECONDS).  Once every
# connection is open it creates the file $TRICKLE_READY.
trickle () {
    python3 - "$PORT" "$SCHED_TOKEN" "$@" <<'PY'
import os, select, socket, sys, time
port, token, until = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
conns = []
start = time.monotonic()
for spec in sys.argv[4:]:
    count, source, kind = spec.split(":")
    for _ in range(int(count)):
        s = socket.socket()
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        if kind == "headers":
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        else:
            s.sendall(("POST /v1/reservations HTTP/1.1\r\nHost: t\r\n"
                       "Authorization: Bearer %s\r\n"
                       "Content-Type: application/json\r\n"
                       "Content-Length: 1000\r\n\r\n{" % token).encode())
        s.setblocking(False)
        conns.append([s, source, kind, None])
open(os.environ["TRICKLE_READY"], "w").close()
last = 0.0
while time.monotonic() - start < until:
    live = [c for c in conns if c[3] is None]
    if not live:
        break
    r, _, _ = select.select([c[0] for c in live], [], [], 0.05)
    now = time.monotonic() - start
    for c in live:
        if c[0] in r:
            try:
                data = c[0].recv(4096)
            except OSError:
                data = b""
            if not data:
                c[3] = now
    if now - last >= 0.25:
        last = now
        for c in conns:
            if c[3] is None:
                try:
                    c[0].send(b"a" if c[2] == "headers" else b" ")
                except OSError:
                    c[3] = now
for c in conns:
    print(c[1], c[2], "open" if c[3] is None else "%.2f" % c[3])
PY
}

# 80 slow connections from 127.0.0.1 (more than max_connections), one
# slow header and one slow body from 127.0.0.3.
TRICKLE_READY=$T/slow.ready trickle 6 80:127.0.0.1:headers 1:127.0.0.3:headers 1:127.0.0.3:body \
    >"$T/slow.out" &
slow=$!
# The flood is on once its connections are open and the broker refuses some.
wait_for 10 test -e "$T/slow.ready" || echo "# the slow clients did not connect"
wait_for 10 grep -q 'http: Server reached connection limit' "$BROKER_LOG" ||
    echo "# the broker refused no connection"
HTTP_STATUS=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 3 \
    --interface 127.0.0.2 "$BROKER_URL/healthz" 2>&1)
expect_eq "healthz from another address answers during the flood" "$HTTP_STATUS" 200
HTTP_STATUS=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 3 \
    --interface 127.0.0.4 -H "Authorization: Bearer $SCHED_TOKEN" \
    "$BROKER_URL/v1/reservations" 2>&1)
expect_eq "an authenticated call from another address answers" "$HTTP_STATUS" 200
wait "$slow"

at () { awk -v s="$1" -v k="$2" '$1 == s && $2 == k {print $3}' "$T/slow.out"; }
refused=$(at 127.0.0.1 headers | awk '$1 != "open" && $1 < 0.9' | wc -l)
expect_eq "past 16 connections from one address, the rest are closed at once" "$refused" 64
cut=$(at 127.0.0.1 headers | awk '$1 != "open" && $1 >= 1.9 && $1 < 3.5' | wc -l)
expect_eq "the 16 admitted trickling connections are closed at the deadline (2 s + slack)" "$cut" 16
h=$(at 127.0.0.3 headers)
expect_match "headers trickled a byte every 0.25 s are cut within 2-3.5 s ($h)" "$h" '^(1\.9|2\.|3\.[0-4])'
b=$(at 127.0.0.3 body)
expect_match "a body trickled a byte every 0.25 s is cut within 2-3.5 s ($b)" "$b" '^(1\.9|2\.|3\.[0-4])'
expect_match "the broker logs the deadline closures" "$(cat "$BROKER_LOG")" \
    'did not arrive within server.request_deadline_ms'
# libmicrohttpd writes a line per refused connection: at most 10 a second
# reach the log, and the rest are counted.
lines=$(grep -c 'http: Server reached connection limit' "$BROKER_LOG")
expect_match "the 64 refusals do not each write a log line ($lines)" "$lines" '^([0-9]|1[0-9]|20)$'
expect_match "... those left out are counted" "$(cat "$BROKER_LOG")" \
    'more libmicrohttpd messages left out'

# A well-behaved client is not affected; a kept-alive connection serves
# several requests.
HTTP_STATUS=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 3 "$BROKER_URL/healthz" 2>&1)
expect_eq "healthz from 127.0.0.1 answers once the slow clients are gone" "$HTTP_STATUS" 200
codes=$(curl -sS -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\n' --max-time 5 \
    "$BROKER_URL/healthz" "$BROKER_URL/healthz" 2>&1 | tr '\n' ' ')
expect_eq "two requests on one kept-alive connection" "$codes" "200 1 200 0 "

broker_stop
finish
