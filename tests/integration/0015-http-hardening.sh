#!/bin/bash
# The front door: bodies must be JSON (415 otherwise), every error the
# broker sends is JSON with X-Request-Id (also 431 for large headers), and
# no reply carries the database's own words (libpq's connection errors,
# SQL error text): those go to the log under the request id.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml" '
max_header_bytes = 8192'
broker_migrate "$T/b.toml" || { not_ok "migrate"; finish; }
broker_start "$T/b.toml" || { not_ok "broker starts"; finish; }

# ---- (8) database text stays in the log ---------------------------------------------
psql_q "ALTER TABLE reservations ADD CONSTRAINT vnib_secret_check CHECK (username <> 'mallory')"
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"db1","uid":1,"user":"mallory","nodes":"n1"}'
expect_status "a constraint violation is still 400" 400
expect_json "... with the message fixed" .error.message "database error"
expect_no_match "... not the server's text" "$HTTP_BODY" 'vnib_secret_check|reservations|violates'
rid=$(header X-Request-Id)
expect_match "the log has the server's text under the request id" \
    "$(grep "$rid" "$BROKER_LOG")" 'vnib_secret_check'

pg_stop
http GET /readyz
expect_status "readyz is 503 with PostgreSQL down" 503
expect_json "... code database_unavailable" .error.code database_unavailable
expect_json "... fixed message" .error.message "not ready: database unavailable"
expect_no_match "... no socket path, host or libpq text" "$HTTP_BODY" "$PGSOCK|\\.s\\.PGSQL|connection to server|No such file"
rid=$(header X-Request-Id)
expect_match "the log has libpq's reason under the request id" \
    "$(grep "$rid" "$BROKER_LOG")" 'readyz: not ready: database unavailable: .+'

TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"db2","uid":1,"user":"u","nodes":"n1"}'
expect_status "a reserve with PostgreSQL down is 503" 503
expect_json "... with the fixed message" .error.message "database unavailable"
expect_no_match "... and no libpq text" "$HTTP_BODY" "$PGSOCK|\\.s\\.PGSQL|connection to server"
rid=$(header X-Request-Id)
expect_match "the log has libpq's text under the request id" \
    "$(grep "$rid" "$BROKER_LOG")" 'database unavailable: .+'
pg_resume_start

broker_stop
finish
