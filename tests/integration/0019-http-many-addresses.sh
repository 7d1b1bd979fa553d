#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One user's job cannot lock the broker out.  Any process on a compute
# node can open connections, token or not; 64 loopback addresses stand in
# for the nodes of one user's job, each holding per_ip_connections slow
# connections (a header byte a second, reopened as soon as the broker
# closes one): together far more than max_connections.  Throughout, the
# scheduler's reserves and an uninvolved node's reports must be answered
# with a 1 s client timeout, because a connection past the budget
# displaces a waiting one of the address with the most waiting (or is
# closed, when that is its own).  Afterwards,
# every reserve the scheduler was told failed is absent from the database
# and every one it was told succeeded is there (the history check).
. "$(dirname "$0")/lib.sh"

ADDRS=127.0.0.10-73 # 64 addresses
PER_ADDR=16
ATTACK_S=18
# The attacker needs a descriptor per connection (64 x 16 = 1,024).
ulimit -n 4096 2>/dev/null || skip_all "cannot raise the descriptor limit"

slow_clients_up 256 10000
export VNIB_URL=$BROKER_URL
printf '%s' "$SCHED_TOKEN" >"$T/sched.token"
chmod 600 "$T/sched.token"

# The uninvolved node's job, reserved before the attack.
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"bystander","uid":1001,"user":"bob","nodes":"quiet[1-2]"}'
expect_status "the bystander job is reserved" 201
NODE_TOKEN=$(node_token quiet1)

metric () {
    curl -s --max-time 5 "$BROKER_URL/metrics" |
        awk -v m="$1" '$1 == m { print $2 }'
}

a0=$(date +%s)
python3 "$TOP/tests/bench/slowclients.py" trickle "$PORT" "$ADDRS" "$PER_ADDR" \
    "$ATTACK_S" 1 0 >"$T/attack.out" 2>&1 &
attack=$!
track "$attack"
# The attack is on once the budget is full and the broker displaces.
displacing () { [ "$(metric 'vnib_http_connections_closed_total{reason="displaced"}')" -gt 0 ] 2>/dev/null; }
wait_for 10 displacing || echo "# the broker displaced no connection within 10 s"
full=$(metric 'vnib_http_connections{budget="other"}')
expect_match "the attack fills the connection budget ($full of 256)" "${full:-0}" '^2(4[0-9]|5[0-9])$'

# For 10 s, and on until 10 have been made on a slow machine (until 2 s
# before the attack ends at the latest): a scheduler reserve (vnibctl,
# timeout 1 s, from 127.0.0.1) and a bystander node's report (curl, 1 s,
# from 127.0.0.3) every 0.2 s.
: >"$T/told"
: >"$T/reports"
t0=$(date +%s)
soft_end=$((t0 + 10))
end=$((a0 + ATTACK_S - 2))
i=0
while [ "$(date +%s)" -lt "$end" ] &&
    { [ "$(date +%s)" -lt "$soft_end" ] || [ "$i" -lt 10 ]; }; do
    i=$((i + 1))
    if "$BUILD/vnibctl" --token-file "$T/sched.token" --timeout 1 \
        reserve "a$i" --uid 1001 --user alice --nodes "c$i" >/dev/null 2>"$T/err.$i"; then
        echo "a$i ok" >>"$T/told"
    else
        echo "a$i failed $(head -c 200 "$T/err.$i" | tr '\n' ' ')" >>"$T/told"
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 --interface 127.0.0.3 \
        -X PUT -H "Authorization: Bearer $NODE_TOKEN" -H 'Content-Type: application/json' \
        -d '{"cxi":"creating"}' "$BROKER_URL/v1/reservations/bystander/nodes/quiet1")
    echo "$code" >>"$T/reports"
    sleep 0.2
done
attack_alive=no
kill -0 "$attack" 2>/dev/null && attack_alive=yes
displaced=$(metric 'vnib_http_connections_closed_total{reason="displaced"}')
wait "$attack"

n=$(wc -l <"$T/told")
ok_n=$(grep -c ' ok$' "$T/told")
expect_eq "the attack lasted the whole run" "$attack_alive" yes
expect_match "the broker displaced slow connections (${displaced:-0})" "${displaced:-0}" '^[1-9][0-9]*$'
expect_match "at least 10 reserves were made during the attack ($n)" "$n" '^([1-9][0-9]+)$'
expect_eq "every scheduler reserve answered within 1 s ($ok_n of $n)" "$ok_n" "$n"
grep -v ' ok$' "$T/told" | sed 's/^/#   /' | head -5
r_ok=$(grep -c '^200$' "$T/reports")
r_n=$(wc -l <"$T/reports")
expect_eq "every bystander report answered 200 within 1 s ($r_ok of $r_n)" "$r_ok" "$r_n"
sort "$T/reports" | uniq -c | sed 's/^/#   reports: /'
echo "# $(cat "$T/attack.out") attack connections opened in ${ATTACK_S} s"

# History: what the scheduler was told against what the database holds.
psql_q "SELECT job_id FROM reservations WHERE job_id LIKE 'a%' ORDER BY 1" | sort >"$T/db"
awk '$2 == "ok" { print $1 }' "$T/told" | sort >"$T/told.ok"
awk '$2 != "ok" { print $1 }' "$T/told" | sort >"$T/told.failed"
expect_eq "every reserve told ok is in the database" \
    "$(comm -23 "$T/told.ok" "$T/db" | tr '\n' ' ')" ""
expect_eq "no reserve told failed is in the database" \
    "$(comm -12 "$T/told.failed" "$T/db" | tr '\n' ' ')" ""

# The broker is itself again: a request from an attacking address works.
HTTP_STATUS=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
    --interface 127.0.0.10 "$BROKER_URL/healthz")
expect_eq "an attacking address is served once it behaves" "$HTTP_STATUS" 200

# Priority addresses: the scheduler's host has a budget of its own, and
# its slow connections are never displaced, while others' are.
broker_stop
broker_config "$T/p.toml" '
threads = 2
max_connections = 32
per_ip_connections = 64
priority_addresses = ["127.0.0.2", "127.0.0.0/32"]
priority_connections = 8
request_deadline_ms = 10000'
broker_start "$T/p.toml" || { not_ok "broker with priority addresses starts"; finish; }
PORT=${BROKER_URL##*:}
# 8 slow connections from the priority host, then a flood from 127.0.0.20.
python3 - "$PORT" >"$T/prio.out" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
def opened(n, source, head):
    out = []
    for _ in range(n):
        s = socket.socket(); s.bind((source, 0)); s.connect(("127.0.0.1", port))
        s.sendall(head)
        out.append(s)
    return out
mine = opened(8, "127.0.0.2", b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
time.sleep(0.5)
flood = opened(60, "127.0.0.20", b"GET /healthz HTTP/1.1\r\nHost: t\r\nX: ")
time.sleep(2)
alive = 0
for s in mine:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
# They finish their requests: each must be answered.
answered = 0
for s in mine:
    try:
        s.settimeout(3)
        s.sendall(b"\r\n")
        answered += s.recv(4096).startswith(b"HTTP/1.1 200")
    except OSError:
        pass
print(alive, answered)
PY
prio=$!
track "$prio"
wait "$prio"
set -- $(cat "$T/prio.out")
expect_eq "the priority host's 8 slow connections survive a flood from another address" "${1:-}" 8
expect_eq "... and are answered when they finish" "${2:-}" 8
expect_match "... while the flood's newest connections were closed" \
    "$(curl -s "$BROKER_URL/metrics")" 'vnib_http_connections_closed_total\{reason="refused"\} [1-9]'

broker_stop
finish
