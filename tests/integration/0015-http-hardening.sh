#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The front door: bodies must be JSON (415 otherwise), every error the
# broker sends is JSON with X-Request-Id (also 431 for large headers), and
# no reply carries the database's own words (libpq's connection errors,
# SQL error text): those go to the log under the request id.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" '
max_header_bytes = 8192'

RES='{"job_id":"ct1","uid":1000,"user":"alice","nodes":"n[1-2]"}'
# Raw curl, as a user would type it: no Content-Type of our own.
raw () {
    HTTP_STATUS=$(curl -sS -o "$T/http.body" -D "$T/http.headers" -w '%{http_code}' \
        --max-time 20 -H "Authorization: Bearer ${RAW_TOKEN:-$SCHED_TOKEN}" "$@" 2>"$T/http.err") ||
        HTTP_STATUS="curl-failed:$(cat "$T/http.err")"
}

# ---- (5) content types ----------------------------------------------------------
raw -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "curl -d (application/x-www-form-urlencoded) is 415" 415
expect_json "415 code" .error.code unsupported_media_type
expect_json "415 says what to send" '.error.message | test("application/json")' true
expect_match "415 is JSON" "$(header Content-Type)" '^application/json'
expect_match "415 carries X-Request-Id" "$(header X-Request-Id)" '^[0-9a-f]{16}$'

raw -H 'Content-Type: text/plain' -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "text/plain is 415" 415
raw -H 'Content-Type:' -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "a body without Content-Type is 415" 415
raw -H 'Content-Type: application/jsonx' -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "application/jsonx is not JSON (415)" 415
# (The token is checked first: a scheduler's PUT there would be 403.)
RAW_TOKEN=$ADMIN_TOKEN raw -X PUT -H "Content-Type: text/plain" -d '{"cxi":"creating"}' \
    "$BROKER_URL/v1/reservations/ct1/nodes/n1"
expect_status "PUT with text/plain is 415 too" 415
raw -H 'Content-Type: text/plain' -H 'Transfer-Encoding: chunked' -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "a chunked text/plain body is 415" 415
expect_eq "nothing was reserved by the refused requests" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = 'ct1'")" 0

raw -H 'Content-Type: application/json; charset=utf-8' -d "$RES" "$BROKER_URL/v1/reservations"
expect_status "application/json; charset=utf-8 is accepted" 201
raw -H 'Content-Type: Application/JSON' -d '{"job_id":"ct2","uid":1,"user":"u","nodes":"n1"}' \
    "$BROKER_URL/v1/reservations"
expect_status "the media type is case-insensitive" 201
raw -X DELETE "$BROKER_URL/v1/reservations/ct2"
expect_match "a request without a body needs no Content-Type" "$HTTP_STATUS" '^20[0-9]$'

# ---- (6) errors are JSON, also for large headers -----------------------------------
long=$(head -c 10000 /dev/zero | tr '\0' a)
http GET /healthz -H "X-Padding: $long"
expect_status "headers past server.max_header_bytes are 431" 431
expect_json "431 is the JSON error" .error.code header_fields_too_large
expect_match "431 is application/json" "$(header Content-Type)" '^application/json'
expect_match "431 carries X-Request-Id" "$(header X-Request-Id)" '^[0-9a-f]{16}$'
http GET "/healthz?pad=$long"
expect_status "a long query string counts as well (431)" 431
expect_json "... JSON" .error.code header_fields_too_large
# Past libmicrohttpd's own buffer (2 * max_header_bytes + 16 KiB) it
# answers by itself, in HTML: documented in openapi.yaml as the exception.
long=$(head -c 40000 /dev/zero | tr '\0' a)
http GET /healthz -H "X-Padding: $long"
expect_status "headers far past the limit are still refused (libmicrohttpd's 431)" 431
long=$(head -c 7000 /dev/zero | tr '\0' a)
http GET /healthz -H "X-Padding: $long"
expect_status "headers within server.max_header_bytes are served" 200

# expect_logged LABEL REGEX: the broker's log lines with the request id of
# the last reply match REGEX.
expect_logged () {
    expect_match "$1" "$(grep "$(header X-Request-Id)" "$BROKER_LOG")" "$2"
}

# ---- (8) database text stays in the log ---------------------------------------------
psql_q "ALTER TABLE reservations ADD CONSTRAINT vnib_secret_check CHECK (username <> 'mallory')"
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"db1","uid":1,"user":"mallory","nodes":"n1"}'
expect_status "a constraint violation is still 400" 400
expect_json "... with the message fixed" .error.message "database error"
expect_no_match "... not the server's text" "$HTTP_BODY" 'vnib_secret_check|reservations|violates'
expect_logged "the log has the server's text under the request id" 'vnib_secret_check'

pg_stop
http GET /readyz
expect_status "readyz is 503 with PostgreSQL down" 503
expect_json "... code database_unavailable" .error.code database_unavailable
expect_json "... fixed message" .error.message "not ready: database unavailable"
expect_no_match "... no socket path, host or libpq text" "$HTTP_BODY" "$PGSOCK|\\.s\\.PGSQL|connection to server|No such file"
expect_logged "the log has libpq's reason under the request id" 'readyz: not ready: database unavailable: .+'

TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"db2","uid":1,"user":"u","nodes":"n1"}'
expect_status "a reserve with PostgreSQL down is 503" 503
expect_json "... with the fixed message" .error.message "database unavailable"
expect_no_match "... and no libpq text" "$HTTP_BODY" "$PGSOCK|\\.s\\.PGSQL|connection to server"
expect_logged "the log has libpq's text under the request id" 'database unavailable: .+'
pg_resume_start

broker_stop
finish
