#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Readiness follows the database: down when PostgreSQL stops, up again when
# it returns (without restarting the broker), and no request waits longer
# than the configured timeouts when the database hangs.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml"

http GET /readyz
expect_status "ready with the database up" 200

pg_stop
http GET /readyz
expect_status "readyz is 503 once PostgreSQL stops" 503
expect_json "the code says the database is unavailable" .error.code database_unavailable
expect_match "the message says why" "$(jq -r .error.message "$T/http.body")" 'database unavailable'
expect_match "503 carries Retry-After" "$(header Retry-After)" '^[0-9]+$'
http GET /healthz
expect_status "healthz stays 200: the process is alive" 200

pg_resume_start
http GET /readyz
expect_status "readyz is 200 again after PostgreSQL restarts, same broker" 200
kill -0 "$BROKER_PID"
expect_eq "the broker was not restarted" "$?" 0

# A restart while connections sit idle in the pool: the next request must
# not fail because its pooled connection went stale.
pg_restart
http GET /readyz
expect_status "a pooled connection that went stale is replaced transparently" 200

# A hung database: connections open but nothing answers.
pg_freeze
start=$(date +%s%N)
http GET /readyz
ms=$((($(date +%s%N) - start) / 1000000))
pg_resume
expect_status "a hung database gives 503, not a hung request" 503
if [ "$ms" -lt 6000 ]; then
    ok "the reply came within the configured timeouts ($ms ms)"
else
    not_ok "the reply came within the configured timeouts ($ms ms)"
fi
wait_for 10 curl -sf "$BROKER_URL/readyz"
http GET /readyz
expect_status "ready again once the database answers" 200

http GET /metrics
expect_match "timeouts are counted" "$HTTP_BODY" 'vnib_db_query_timeouts_total [1-9]|vnib_db_connect_failures_total [1-9]'

broker_stop
expect_eq "clean exit" "$?" 0
finish
