#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A request the client has given up on is not run.  Each request has a
# deadline: server.queue_deadline_ms after its arrival, or sooner when the
# client sends Vnib-Deadline-Ms (vnibctl, the agent, the hooks and the
# Slurm plugins send their timeout less a margin).  A request still
# waiting for a worker, or a reserve still waiting for its group to be
# written, when its deadline passes is answered 503 deadline_exceeded and
# never reaches the database, so a scheduler that timed out and reported
# failure does not leave a reservation nobody expects.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1

# reserve_bg NAME [CURL-ARGS...]: POST a reserve of job NAME in the
# background; status in $T/NAME.code, body in $T/NAME.body.
reserve_bg () {
    job=$1
    shift
    curl -s -m 30 -o "$T/$job.body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" \
        "$@" -d "{\"job_id\":\"$job\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\"}" \
        "$BROKER_URL/v1/reservations" >"$T/$job.code" 2>/dev/null &
    pids="$pids $!"
}

# hold_reservations SECONDS: a session locks the reservations table for
# SECONDS, so that every reserve written meanwhile waits.
table_locked () {
    [ "$(psql_q "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        WHERE c.relname = 'reservations' AND l.mode = 'AccessExclusiveLock' AND l.granted")" -ge 1 ]
}
hold_reservations () {
    pg_hold "LOCK TABLE reservations IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($1)"
    wait_for 5 table_locked || not_ok "the reservations table is locked"
}

in_db () { psql_q "SELECT count(*) FROM reservations WHERE job_id = '$1'"; }

# ---- a reserve waiting for its group ------------------------------------------

broker_config "$T/g.toml" 'workers = 8'
sed -i -e 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$T/g.toml"
sed -i -e '/^acquire_timeout_ms/a group_leaders = 1' "$T/g.toml"
broker_migrate_start "$T/g.toml"

TOKEN=$SCHED_TOKEN http POST /v1/reservations -H 'Vnib-Deadline-Ms: soon' \
    -d '{"job_id":"bad","uid":1,"user":"a","nodes":"n1"}'
expect_status "a malformed Vnib-Deadline-Ms is refused" 400
expect_json "... as invalid_header" .error.code invalid_header
TOKEN=$SCHED_TOKEN http POST /v1/reservations -H 'Vnib-Deadline-Ms: 0' \
    -d '{"job_id":"bad","uid":1,"user":"a","nodes":"n1"}'
expect_status "... and so is 0" 400
expect_eq "... and nothing was reserved" "$(in_db bad)" 0
TOKEN=$SCHED_TOKEN http POST /v1/reservations -H 'Vnib-Deadline-Ms: 5000' \
    -d '{"job_id":"prompt","uid":1,"user":"a","nodes":"n1"}'
expect_status "a request within its deadline runs" 201

hold_reservations 3
pids=""
reserve_bg first
wait_for 5 lock_waiters 1 || not_ok "the first reserve waits on the table"
reserve_bg late -H 'Vnib-Deadline-Ms: 500'
reserve_bg patient -H 'Vnib-Deadline-Ms: 20000'
# shellcheck disable=SC2086
wait $pids
expect_eq "the reserve being written when the table was locked is created" "$(cat "$T/first.code")" 201
expect_eq "a reserve whose deadline passed while its group waited gets 503" "$(cat "$T/late.code")" 503
expect_eq "... deadline_exceeded" "$(jq -r .error.code "$T/late.body")" deadline_exceeded
expect_eq "... and is not in the database" "$(in_db late)" 0
expect_eq "a reserve with time left waits and is created" "$(cat "$T/patient.code")" 201
expect_match "the expired reserve is counted" "$(curl -s "$BROKER_URL/metrics")" \
    'vnib_http_requests_expired_total 1'
broker_stop

# ---- a request waiting for a worker -----------------------------------------

broker_config "$T/w.toml" 'workers = 1
queue_deadline_ms = 1000'
sed -i -e 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$T/w.toml"
broker_start "$T/w.toml" || { not_ok "broker with one worker starts"; finish; }
export VNIB_URL=$BROKER_URL
printf '%s' "$SCHED_TOKEN" >"$T/sched.token"
chmod 600 "$T/sched.token"

hold_reservations 3
pids=""
reserve_bg busy
wait_for 5 lock_waiters 1 || not_ok "the only worker waits on the table"
reserve_bg nohdr
# The scheduler's client gives up after 1 s and reports failure.
start=$(date +%s%N)
"$BUILD/vnibctl" --token-file "$T/sched.token" --timeout 1 \
    reserve gaveup --uid 1001 --user alice --nodes "n[1-2]" >"$T/gaveup.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "vnibctl --timeout 1 gives up while the worker is busy (exit 3)" "$rc" 3
# shellcheck disable=SC2086
wait $pids
expect_eq "the reserve holding the worker is created" "$(cat "$T/busy.code")" 201
expect_eq "a request queued past server.queue_deadline_ms gets 503" "$(cat "$T/nohdr.code")" 503
expect_eq "... deadline_exceeded" "$(jq -r .error.code "$T/nohdr.body")" deadline_exceeded
expect_match "... saying it was not run" "$(jq -r .error.message "$T/nohdr.body")" 'was not run'
expect_eq "... and it is not in the database" "$(in_db nohdr)" 0
wait_for 5 grep -q 'POST /v1/reservations 503' "$BROKER_LOG"
expect_eq "the reserve vnibctl gave up on ($ms ms) is never in the database" "$(in_db gaveup)" 0
expect_match "the broker counts the requests it did not run" \
    "$(curl -s "$BROKER_URL/metrics")" 'vnib_http_requests_expired_total 2'
HTTP_STATUS=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
    -H "Authorization: Bearer $SCHED_TOKEN" -H 'Content-Type: application/json' \
    -d '{"job_id":"after","uid":1,"user":"a","nodes":"n1"}' "$BROKER_URL/v1/reservations")
expect_eq "once the worker is free, reserves run again" "$HTTP_STATUS" 201

broker_stop
expect_db_consistent
finish
