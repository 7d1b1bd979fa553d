#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The HTTP skeleton: probes, metrics, error replies, and the limits that
# protect the broker from bad or slow clients.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" '
connection_timeout_s = 1
max_header_bytes = 8192
max_connections = 4
threads = 2'
ok "broker starts on a free port ($BROKER_URL)"

# ---- probes ------------------------------------------------------------------
http GET /healthz
expect_status "GET /healthz is 200" 200
expect_json "healthz says ok" .status ok
expect_match "healthz is JSON" "$(header Content-Type)" '^application/json'
expect_match "every reply carries a request id" "$(header X-Request-Id)" '^[0-9a-f]{16}$'

http GET /readyz
expect_status "GET /readyz is 200 with the database up" 200
expect_json "readyz reports the schema version" .schema_version "$SCHEMA_VERSION"

# ---- errors ------------------------------------------------------------------
http GET /no/such/path
expect_status "unknown path is 404" 404
expect_json "404 has a stable code" .error.code not_found
expect_json "404 carries the request id" '.error.request_id | length' 16

http DELETE /healthz
expect_status "wrong method is 405" 405
expect_json "405 code" .error.code method_not_allowed
expect_eq "405 lists the allowed methods" "$(header Allow)" "GET"

http GET '/healthz/../readyz' --path-as-is
expect_status "dot segments are not resolved into another route" 404

head -c 2000000 /dev/zero >"$T/big"
http GET /healthz -H 'Content-Type: application/octet-stream' --data-binary @"$T/big"
expect_status "a body larger than the route accepts is 413" 413
expect_json "413 code" .error.code payload_too_large

printf 'x%.0s' $(seq 1 100) >"$T/small"
http GET /healthz -H 'Transfer-Encoding: chunked' --data-binary @"$T/small"
expect_status "a chunked body to a route that takes none is 413" 413

long=$(head -c 20000 /dev/zero | tr '\0' a)
http GET /healthz -H "X-Padding: $long"
expect_status "headers past server.max_header_bytes are refused (431)" 431

# ---- metrics -----------------------------------------------------------------
http GET /metrics
expect_status "GET /metrics is 200" 200
expect_match "metrics use the Prometheus text format" "$(header Content-Type)" '^text/plain; version=0.0.4'
expect_match "requests are counted by route and status" "$HTTP_BODY" \
    'vnib_http_requests_total\{method="GET",route="/healthz",code="200"\} [1-9]'
expect_match "404s are counted as unmatched" "$HTTP_BODY" \
    'vnib_http_requests_total\{method="",route="unmatched",code="404"\} [1-9]'
expect_match "latency histogram has an +Inf bucket" "$HTTP_BODY" \
    'vnib_http_request_duration_seconds_bucket\{method="GET",route="/readyz",le="\+Inf"\} [1-9]'
expect_match "database pool use is exported" "$HTTP_BODY" 'vnib_db_pool_size 8'
expect_match "database pool connections are exported" "$HTTP_BODY" \
    'vnib_db_pool_connections\{state="idle"\} [0-9]+'

# ---- slow clients and connection limits ---------------------------------------
port=${BROKER_URL##*:}
start=$(date +%s%N)
timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET /healthz HTTP/1.1\r\n' >&3; cat <&3 >/dev/null"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "a client that stalls mid-request is disconnected" "$rc" 0
expect_match "... after connection_timeout_s (1 s), not the 10 s test bound ($ms ms)" "$ms" '^[0-9]{1,4}$'

# ---- the log never holds a bearer token ----------------------------------------
http GET /healthz -H 'Authorization: Bearer s3cr3t-token-value'
expect_no_match "tokens never reach the log" "$(cat "$BROKER_LOG")" 's3cr3t-token-value'

broker_stop
expect_eq "SIGTERM stops the broker with status 0" "$?" 0

# Connection budget, with an idle timeout long enough not to free slots:
# four connections that send nothing fill it; a fifth from another
# address that sends its request displaces the oldest of them, and one
# more from the address that fills the budget is closed itself (0019 has
# the many-address case).
broker_config "$T/limit.toml" '
connection_timeout_s = 30
max_connections = 4
threads = 2'
broker_start "$T/limit.toml" || { not_ok "broker starts"; finish; }
port=${BROKER_URL##*:}
exec 4<>/dev/tcp/127.0.0.1/$port
sleep 0.1
exec 5<>/dev/tcp/127.0.0.1/$port 6<>/dev/tcp/127.0.0.1/$port 7<>/dev/tcp/127.0.0.1/$port
http GET /healthz --max-time 3 --interface 127.0.0.2
expect_status "past server.max_connections a new connection is served" 200
closed=$(timeout 2 cat <&4 >/dev/null && echo eof || echo open)
expect_eq "... displacing the oldest connection that sent nothing" "$closed" eof
closed=$(timeout 1 cat <&7 >/dev/null && echo eof || echo open)
expect_eq "... and not a newer one" "$closed" open
exec 4>&- 4<>/dev/tcp/127.0.0.1/$port
http GET /healthz --max-time 3
expect_match "one more from the address that fills the budget is closed" "$HTTP_STATUS" '^curl-failed'
closed=$(timeout 1 cat <&5 >/dev/null && echo eof || echo open)
expect_eq "... and displaces nothing" "$closed" open
metrics=$(curl -s --interface 127.0.0.3 "$BROKER_URL/metrics")
expect_match "... which /metrics counts" "$metrics" \
    'vnib_http_connections_closed_total\{reason="displaced"\} [1-9]'
expect_match "... with the one closed at once" "$metrics" \
    'vnib_http_connections_closed_total\{reason="refused"\} [1-9]'
exec 4>&- 5>&- 6>&- 7>&-
wait_for 5 curl -sf --max-time 1 "$BROKER_URL/healthz"
http GET /healthz
expect_status "connections are served again once others close" 200
broker_stop
finish
