#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A reserve the Fabric Manager completes after the broker gave up on it is
# found again by its cause, not by its reason's wording: the reservation
# says "unavailable" (cause timeout), its reason is reworded by hand (with
# the old LIKE 'timed out%' the leader would no longer look at it), and
# the leader still finds the late FM reservation and adopts it.  A psql
# session holds the leader lock until the reason is reworded, so that no
# follow-up can look before.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
# reserve_timeout_ms 2000 (hwcoll_config): every FM request takes 4 s, so
# the reserve times out and the FM makes the job 2 s later.
hwcoll_config "$T/b.toml" tux
broker_migrate "$T/b.toml" || { not_ok "migrate"; finish; }
# The leader lock (store_sql.c, sql_leader_try), held by another session.
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d vnibroker -XAtq \
    -c "SET application_name = 'lock_holder'" \
    -c "SELECT pg_advisory_lock(8534447410148076652)" \
    -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
track $!
held () {
    [ "$(psql_q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")" = 1 ]
}
wait_for 20 held || not_ok "a session holds the leader lock"
broker_start "$T/b.toml" || { not_ok "broker starts"; finish; }

fm_fault '{"latency_ms":4000}'
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"late","uid":1,"user":"u","nodes":"n[1-3]"}'
expect_status "a slow FM does not fail the reservation" 201
expect_json "... hwcoll unavailable" .hwcoll.state unavailable
expect_match "... the reason names the timeout" "$(jq -r .hwcoll.reason "$T/http.body")" \
    '^Fabric Manager timed out after 2000 ms$'
wait_for 20 sh -c "curl -s $FM_ADMIN/fmsim/state | jq -r '.jobs[].jobID' | grep -q '^tux-late-r'"
fm_fault '{"latency_ms":0}'
expect_eq "the FM made the job after the time-out" \
    "$(curl -s "$FM_ADMIN/fmsim/state" | jq '[.jobs[] | select(.jobID | test("^tux-late-r"))] | length')" 1
psql_q "UPDATE reservations SET hwcoll_reason = 'reworded' WHERE job_id = 'late'"
expect_eq "the cause is stored apart from the reason" \
    "$(psql_q "SELECT hwcoll_state || ' ' || hwcoll_cause || ' ' || hwcoll_reason FROM reservations WHERE job_id = 'late'")" \
    "unavailable timeout reworded"

expect_eq "... and no leader has looked at it yet" \
    "$(psql_q "SELECT hwcoll_state FROM reservations WHERE job_id = 'late'")" unavailable
psql_q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lock_holder'" >/dev/null

late_adopted () {
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BROKER_URL/v1/reservations/late" |
        jq -e '.hwcoll.state == "reserved"' >/dev/null
}
wait_for 40 late_adopted
TOKEN=$SCHED_TOKEN http GET /v1/reservations/late
expect_json "the late FM reservation is adopted, found by its cause" .hwcoll.state reserved
expect_json "... with its session token" '.hwcoll.session_token | length > 0' true
expect_eq "... and no cause or reason left" \
    "$(psql_q "SELECT coalesce(hwcoll_cause, '-') || coalesce(hwcoll_reason, '-') FROM reservations WHERE job_id = 'late'")" "--"
expect_match "the broker says it adopted it" "$(cat "$BROKER_LOG")" \
    'adopted a reservation the FM made after the timeout'
expect_eq "the CHECK refuses an unknown cause" \
    "$(psql_q "UPDATE reservations SET hwcoll_cause = 'timed out' WHERE job_id = 'late'" 2>&1 |
        grep -c reservations_hwcoll_cause_check)" 1

TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/late
expect_status "released" 200
wait_for 20 sh -c "! curl -s $FM_ADMIN/fmsim/state | jq -r '.jobs[].jobID' | grep -q '^tux-late-r'"
expect_eq "the adopted FM reservation is deleted with the job" \
    "$(curl -s "$FM_ADMIN/fmsim/state" | jq '[.jobs[] | select(.jobID | test("^tux-late-r"))] | length')" 0
broker_stop
finish
