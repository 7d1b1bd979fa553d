#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shutdown: SIGTERM and SIGINT finish the requests in flight and exit 0;
# a port already in use is a clear start failure.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml" 'shutdown_timeout_s = 10'
sed -i 's/query_timeout_ms = 2000/query_timeout_ms = 3000/' "$T/b.toml"
broker_migrate_start "$T/b.toml"

# Hold a request in flight: readiness waits on a frozen database.
http GET /readyz
expect_status "warm: one pooled connection open" 200
pg_freeze
curl -sS -o "$T/inflight.body" -w '%{http_code}' --max-time 20 "$BROKER_URL/readyz" \
    >"$T/inflight.status" 2>&1 &
curl_pid=$!
# In flight once the broker counts it: it and the /metrics request asking.
readyz_in_flight () {
    [ "$(curl -sS --max-time 5 "$BROKER_URL/metrics" |
        sed -n 's/^vnib_http_requests_in_flight //p')" -ge 2 ] 2>/dev/null
}
wait_for 10 readyz_in_flight
expect_eq "the readiness request is in flight before SIGTERM" "$?" 0
kill -TERM "$BROKER_PID"
wait "$curl_pid"
pg_resume
wait "$BROKER_PID"
rc=$?
expect_eq "the in-flight request got its full reply during shutdown" "$(cat "$T/inflight.status")" 503
expect_eq "the broker exited 0 after SIGTERM" "$rc" 0
expect_match "... and logged its stop" "$(cat "$BROKER_LOG")" 'SIGTERM: shutting down'

# A connection accepted before SIGTERM whose request comes after the
# listener closed is answered too, not turned away with 503 "shutting
# down": a client (a load balancer) sees either a refused connection,
# which it can send elsewhere, or a real answer.
broker_start "$T/b.toml" || not_ok "restart"
port=${BROKER_URL##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port"
accepted () { grep -q 'vnib_http_requests_in_flight' <(curl -sS --max-time 5 "$BROKER_URL/metrics"); }
wait_for 10 accepted
kill -TERM "$BROKER_PID"
refused () { ! (exec 4<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_for 10 refused
expect_eq "SIGTERM closes the listener" "$?" 0
# (In a subshell: a broker that closed the connection is a SIGPIPE.)
(printf 'GET /readyz HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n' >&3) 2>/dev/null
reply=$(timeout 15 cat <&3 2>/dev/null)
exec 3<&-
expect_match "... and a request on a connection it had accepted is answered" \
    "$(printf '%s' "$reply" | head -n 1)" '^HTTP/1.1 200'
wait "$BROKER_PID"
expect_eq "... then it exits 0" "$?" 0

broker_start "$T/b.toml" || not_ok "restart"
port=${BROKER_URL##*:}
kill -INT "$BROKER_PID"
wait "$BROKER_PID"
expect_eq "SIGINT also exits 0" "$?" 0

# Port in use.
broker_start "$T/b.toml" || not_ok "restart"
sed "s/port = 0/port = ${BROKER_URL##*:}/" "$T/b.toml" >"$T/same.toml"
out=$(timeout 20 "$VNIBROKERD" -c "$T/same.toml" 2>&1)
expect_eq "a port in use stops the start (exit 1)" "$?" 1
expect_match "... with a clear message" "$out" 'cannot listen on 127.0.0.1 port'
kill -HUP "$BROKER_PID"
# Handled once it is logged; then the broker must still run and answer.
wait_for 10 grep -q 'SIGHUP: ' "$BROKER_LOG"
expect_match "the broker logs the SIGHUP: a restart applies changes" "$(cat "$BROKER_LOG")" 'SIGHUP: .*restart'
kill -0 "$BROKER_PID"
expect_eq "SIGHUP does not stop the broker" "$?" 0
http GET /healthz
expect_status "... it still answers" 200
broker_stop
expect_eq "clean exit" "$?" 0
finish
