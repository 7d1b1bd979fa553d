#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Request workers: a request that waits on PostgreSQL holds a request
# worker, never a libmicrohttpd thread, so that the other connections
# that thread polls keep being answered (issue #13, tail latency).
#
# With server.threads = 1, a reserve of job "held" waits on its job's
# advisory lock, which a psql session holds; meanwhile /healthz, /metrics
# and a reserve and release of another job must answer within a second.
# Then: a full queue answers 503 unavailable with Retry-After at once;
# SIGTERM with one request running and one queued lets the running one
# finish, answers the queued one 503 after server.shutdown_timeout_s, and
# exits 0 without a sanitizer report.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1

body () {
    printf '{"job_id":"%s","uid":1001,"user":"alice","nodes":"n[1-2]"}' "$1"
}


# reserve_bg JOB NAME: POST the reserve in the background; the status goes
# to $T/NAME.code, the body to $T/NAME.body, headers to $T/NAME.headers;
# sets BG.
reserve_bg () {
    curl -s -m 30 -o "$T/$2.body" -D "$T/$2.headers" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" \
        -d "$(body "$1")" "$BROKER_URL/v1/reservations" >"$T/$2.code" 2>/dev/null &
    BG=$!
}

# timed METHOD PATH [CURL-ARGS...]: like http, but gives up after 1 s.
timed () {
    m=$1 p=$2
    shift 2
    HTTP_STATUS=$(curl -sS -o "$T/http.body" -D "$T/http.headers" -w '%{http_code}' \
        -X "$m" --max-time 1 ${TOKEN:+-H "Authorization: Bearer $TOKEN"} "$@" \
        "$BROKER_URL$p" 2>"$T/http.err") || HTTP_STATUS="curl-failed:$(cat "$T/http.err")"
}

no_sanitizer_report () {
    expect_eq "$1" "$(grep -E 'Sanitizer|runtime error' "$BROKER_LOG" | head -n 5)" ""
}

# stop_clean: stop the broker; it exits 0 with no sanitizer report.
stop_clean () {
    broker_stop
    expect_eq "clean exit" "$?" 0
    no_sanitizer_report "no sanitizer report"
}

# one_worker CONFIG LABEL EXTRA-TOML: start a broker with one thread and
# one request worker (queries may take 20 s); LABEL names the start.
one_worker () {
    broker_config "$1" "threads = 1
workers = 1
max_connections = 64
$3"
    sed -i 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$1"
    broker_start "$1" || { not_ok "$2"; finish; }
}

# run_and_queue JOB SECONDS QUEUED: hold JOB's lock for SECONDS, reserve
# JOB (it takes the only worker) and then QUEUED (it waits in the queue),
# each in the background with its status in $T/JOB.code; sets RUN_PID and
# QUEUED_PID.
run_and_queue () {
    hold_job_lock "$1" "$2"
    reserve_bg "$1" "$1"
    RUN_PID=$BG
    wait_for 5 lock_waiters 1 || not_ok "the reserve of $1 holds the only worker"
    reserve_bg "$3" "$3"
    QUEUED_PID=$BG
}

# ---- one libmicrohttpd thread, a request blocked in PostgreSQL -------------

broker_config "$T/b.toml" 'threads = 1
max_connections = 64
shutdown_timeout_s = 10'
sed -i 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$T/b.toml"
broker_migrate_start "$T/b.toml"

hold_job_lock held 4
reserve_bg held held
held_pid=$BG
wait_for 5 lock_waiters 1 || not_ok "the reserve of 'held' waits on its job's lock"
# A client that gives up while its request runs: the worker finishes it
# and the reply meets a closed connection.
curl -s -m 0.3 -o /dev/null -X POST -H "Authorization: Bearer $SCHED_TOKEN" \
    -H "Content-Type: application/json" -d "$(body held)" "$BROKER_URL/v1/reservations"

timed GET /healthz
expect_status "GET /healthz answers within 1 s while a reserve waits in PostgreSQL" 200
TOKEN=$SCHED_TOKEN timed POST /v1/reservations -H "Content-Type: application/json" -d "$(body other)"
expect_status "a reserve of another job answers within 1 s meanwhile" 201
expect_match "... with Server-Timing app;dur" "$(header Server-Timing)" '^app;dur=[0-9.]+$'
TOKEN=$SCHED_TOKEN timed DELETE /v1/reservations/other
expect_status "... and so does its release" 200
timed GET /metrics
expect_status "GET /metrics answers within 1 s meanwhile" 200
metrics=$(cat "$T/http.body")
expect_match "/metrics has the queue depth" "$metrics" '^vnib_http_queue_depth [0-9]+$'
expect_match "/metrics has the queue wait histogram" "$metrics" \
    '^vnib_http_queue_wait_seconds_bucket\{le="\+Inf"\} [1-9][0-9]*$'
expect_match "... with its count" "$metrics" '^vnib_http_queue_wait_seconds_count [1-9][0-9]*$'

kill -0 "$held_pid" 2>/dev/null
expect_eq "the reserve of 'held' is still waiting" "$?" 0
wait "$held_pid"
expect_eq "it is answered once the lock is released (201)" "$(cat "$T/held.code")" 201
stop_clean

# ---- a full queue -----------------------------------------------------------

one_worker "$T/q.toml" "broker with one worker starts" 'queue_limit = 1'
expect_match "the start line names the workers" "$(cat "$BROKER_LOG")" '1 threads, 1 request workers'
run_and_queue q1 4 q2
metrics_depth () {
    curl -s -m 1 "$BROKER_URL/metrics" | grep -q '^vnib_http_queue_depth 1$'
}
wait_for 5 metrics_depth
expect_eq "the reserve of q2 waits in the queue (vnib_http_queue_depth 1)" "$?" 0
TOKEN=$SCHED_TOKEN timed POST /v1/reservations -H "Content-Type: application/json" -d "$(body q3)"
expect_status "a reserve past server.queue_limit is 503 at once" 503
expect_json "... with code unavailable" .error.code unavailable
expect_eq "... and Retry-After" "$(header Retry-After)" 1
timed GET /healthz
expect_status "/healthz runs inline and still answers" 200
wait "$RUN_PID" "$QUEUED_PID"
expect_eq "q1 is reserved once the lock is released" "$(cat "$T/q1.code")" 201
expect_eq "q2 then too" "$(cat "$T/q2.code")" 201
stop_clean

# ---- SIGTERM with a request running and one queued -------------------------

one_worker "$T/s.toml" "broker starts again" 'shutdown_timeout_s = 1'
run_and_queue s1 3 s2
wait_for 5 metrics_depth || not_ok "the reserve of s2 is queued"
# A client that gives up while its request is queued.
curl -s -m 0.3 -o /dev/null -X POST -H "Authorization: Bearer $SCHED_TOKEN" \
    -H "Content-Type: application/json" -d "$(body gone)" "$BROKER_URL/v1/reservations"
t0=$(date +%s%N)
kill -TERM "$BROKER_PID"
wait "$BROKER_PID"
rc=$?
elapsed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the broker exits 0 after SIGTERM" "$rc" 0
wait "$RUN_PID" "$QUEUED_PID"
expect_eq "the running reserve finished and was answered (201)" "$(cat "$T/s1.code")" 201
expect_eq "the queued one was answered 503 after the grace period" "$(cat "$T/s2.code")" 503
expect_eq "... code unavailable" "$(jq -r .error.code "$T/s2.body")" unavailable
[ "$elapsed_ms" -ge 1500 ] && [ "$elapsed_ms" -lt 8000 ]
expect_eq "the broker waited for the running reserve, not much more ($elapsed_ms ms)" "$?" 0
expect_eq "the abandoned request was never run" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = 'gone' AND state = 'active'")" 0
no_sanitizer_report "no sanitizer report after shutdown"
finish
