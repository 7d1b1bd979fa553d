#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Unauthenticated bodies are not read: the token is checked as soon as the
# headers are complete, and a 401 or 403 is sent before a byte of body
# arrives (libmicrohttpd then closes the connection without reading it).
# So many clients without a valid token, each sending almost 1 MiB to
# POST /v1/reservations, cannot make the broker buffer their bodies.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml"
PORT=${BROKER_URL##*:}

# early TOKEN LENGTH: send the headers of a POST announcing LENGTH bytes of
# body, send no body, and print the status line if one arrives within 3 s.
early () {
    python3 - "$PORT" "$1" "$2" <<'PY'
import socket, sys
port, token, length = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(3)
s.sendall(("POST /v1/reservations HTTP/1.1\r\nHost: t\r\n"
           "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n" % (token, length)).encode())
try:
    reply = s.recv(4096).decode("latin-1")
    print(reply.split("\r\n", 1)[0])
except socket.timeout:
    print("no reply")
PY
}

expect_eq "a wrong token gets 401 before the body is sent" \
    "$(early wrong-token 1000000)" "HTTP/1.1 401 Unauthorized"
expect_eq "a node token on a scheduler route gets 403 before the body" \
    "$(early "$(node_token n1)" 1000000)" "HTTP/1.1 403 Forbidden"
expect_eq "a good token waits for the body (no early reply)" \
    "$(early "$SCHED_TOKEN" 100)" "no reply"

TOKEN=wrong http POST /v1/reservations -d '{"job_id":"x","uid":1,"user":"u","nodes":"n1"}'
expect_status "curl with a wrong token and a body: 401" 401
expect_json "... JSON error" .error.code unauthorized

# 200 concurrent uploads of ~1 MiB without a valid token: the broker's
# peak resident size (VmHWM) must not grow by their bodies (200 MiB).
rss_kib () { awk -v k="$1:" '$1 == k {print $2}' "/proc/$BROKER_PID/status"; }
before=$(rss_kib VmRSS)
python3 - "$PORT" <<'PY'
import socket, sys, threading
port = int(sys.argv[1])
body = b"{" + b" " * (1000000 - 2) + b"}"
def upload():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(("POST /v1/reservations HTTP/1.1\r\nHost: t\r\n"
                   "Authorization: Bearer not-a-token\r\n"
                   "Content-Type: application/json\r\nExpect:\r\n"
                   "Content-Length: %d\r\n\r\n" % len(body)).encode() + body)
        s.recv(4096)
    except OSError:
        pass  # the broker closed the connection: what is expected
threads = [threading.Thread(target=upload) for _ in range(200)]
for t in threads: t.start()
for t in threads: t.join()
PY
peak=$(rss_kib VmHWM)
growth=$(( (peak - before) / 1024 ))
echo "# VmRSS before ${before} KiB, peak ${peak} KiB, growth ${growth} MiB"
if [ "$growth" -lt 64 ]; then
    ok "200 unauthenticated 1 MB uploads grow the broker by less than 64 MiB (${growth} MiB)"
else
    not_ok "200 unauthenticated 1 MB uploads grow the broker by ${growth} MiB (limit 64)"
fi
http GET /healthz
expect_status "healthz still answers" 200

broker_stop
finish
