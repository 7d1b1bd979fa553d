#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# D2: no zombie reservations.
#
# A reserve whose broker died while the statement waited in PostgreSQL
# must not commit behind the scheduler's retry on another replica: after
# the retry and a release, the job holds nothing.  The same for a job's
# steps reserved with its job token, and a step reserve that committed
# unseen is the step its retry gets back.  And release (also
# forced) acts on the job's live reservation whatever its id, not on the
# newest row.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
broker_config "$T/a.toml" '
[vni]
pool = "2000-2099"'
# The retry on B waits for the lock below (6 s): its statements may take 10 s.
set_key "$T/a.toml" query_timeout_ms 10000
broker_migrate "$T/a.toml" || { not_ok "migrate"; finish; }
broker_start "$T/a.toml" || { not_ok "replica B starts"; finish; }
URL_B=$BROKER_URL
PID_B=$BROKER_PID

lock_granted () {
    [ "$(psql_q "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                  WHERE c.relname = 'reservations' AND l.mode = 'ShareRowExclusiveLock'
                    AND l.granted")" -ge 1 ]
}

# The sessions where A's reserve waits for the lock; whether there are
# any; whether those found before (backend_a) have all ended.
a_backends () {
    psql_q "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%vnib_reserve%'"
}
a_backends_found () {
    [ -n "$(a_backends)" ]
}
a_backends_gone () {
    [ -n "$backend_a" ] &&
        [ "$(psql_q "SELECT count(*) FROM pg_stat_activity
                      WHERE pid IN ($(echo $backend_a | tr ' ' ','))")" = 0 ]
}

# zombie_round JOB FREEZE: a background session holds a lock that makes
# reserves wait in PostgreSQL (6 s); a reserve of JOB sent to replica A
# waits, and A is killed; the scheduler retries on replica B, then
# releases the job through B.  With FREEZE=1 the dead replica's database
# session is also stopped (SIGSTOP) until B has answered and released, so
# that it would commit after them, as a slow session can: that makes the
# outcome of today's race deterministic.
zombie_round () {
    job=$1 freeze=$2
    body="{\"job_id\":\"$job\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\"}"
    broker_start "$T/a.toml" || { not_ok "replica A starts"; return 1; }
    url_a=$BROKER_URL
    pid_a=$BROKER_PID
    BROKER_URL=$URL_B
    pg_hold "LOCK TABLE reservations IN SHARE ROW EXCLUSIVE MODE; SELECT pg_sleep(6)"
    locker=$LOCKER
    wait_for 5 lock_granted || not_ok "the lock on reservations is taken"

    curl -s -m 20 -o "$T/a.body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" -d "$body" "$url_a/v1/reservations" \
        >"$T/a.code" 2>/dev/null &
    curl_a=$!
    wait_for 5 lock_waiters 1 || not_ok "A's reserve waits on the lock"
    wait_for 5 a_backends_found || not_ok "A's reserve waits in a session of its own"
    backend_a=$(a_backends)
    [ "$freeze" = 1 ] && for p in $backend_a; do kill -STOP "$p"; done
    kill -KILL "$pid_a"
    wait "$pid_a" 2>/dev/null
    wait "$curl_a" 2>/dev/null
    expect_match "$job: A died without answering" "$(cat "$T/a.code")" '^(000)?$'

    # The scheduler retries on B, which must answer (its statements may
    # wait longer than the lock is held).
    curl -s -m 25 -o "$T/b.body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" -d "$body" "$URL_B/v1/reservations" \
        >"$T/b.code" 2>/dev/null &
    curl_b=$!
    wait "$locker"
    released=""
    if [ "$freeze" = 1 ]; then
        # B may answer while A's session is stopped (today) or wait for it.
        wait_for 3 test -s "$T/b.code"
        if [ -s "$T/b.code" ]; then
            TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$job"
            released=$HTTP_STATUS
        fi
        for p in $backend_a; do kill -CONT "$p"; done
    fi
    wait "$curl_b"
    expect_match "D2 $job: B answers the retried reserve with 201 or 200" "$(cat "$T/b.code")" '^20[01]$'
    rid_b=$(jq -r .id "$T/b.body" 2>/dev/null)
    expect_match "$job: ... with a reservation id" "$rid_b" '^[0-9]+$'
    [ -n "$rid_b" ] && [ "$rid_b" != null ] || rid_b=0
    if [ -z "$released" ]; then
        TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$job"
        released=$HTTP_STATUS
    fi
    expect_eq "$job: release via B: released at once (no node reported)" "$released" 200
    # Whatever A's orphaned session could still do, it has done once it
    # has ended (it finds its client gone when it answers).
    wait_for 20 a_backends_gone
    expect_eq "$job: A's orphaned database session has ended" "$?" 0
    expect_eq "D2 $job: no zombie: the job has no reservation that is not released" \
        "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = '$job' AND state <> 'released'")" 0
    expect_eq "D2 $job: no zombie: no VNI is held" "$(psql_q 'SELECT count(*) FROM vni_holds')" 0
    expect_eq "D2 $job: B's reservation is the job's only one, or every other is released" \
        "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = '$job'
                    AND (id = $rid_b OR state = 'released')")" \
        "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = '$job'")"
    expect_eq "D2 $job: ... and B's is released" \
        "$(psql_q "SELECT state FROM reservations WHERE id = $rid_b")" released
    psql_q "SELECT id, state, vnis, created_at, released_at FROM reservations
             WHERE job_id = '$job' ORDER BY id" | sed "s/^/#   $job: /"
}

zombie_round z 0
zombie_round z2 1

# ---- a job's steps, reserved with its job token (Slurm's step manager) -----
# The step manager holds the job token of the job's reserve reply and
# retries a step reserve that got no answer on the other replica, as the
# scheduler does a job's.  The API promises (openapi.yaml, PUT
# .../steps/{step}) that the retry of a step reserve whose first attempt
# committed unseen gets that step back (200, the same reservation and
# VNIs), and that an attempt overtaken by its own retry's answer and the
# step's end makes nothing (409 reservation_superseded, which no one sees
# here: its replica is dead).
a_step_backends () {
    psql_q "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%vnib_step_reserve%'"
}
a_step_backends_found () {
    [ -n "$(a_step_backends)" ]
}
step_row_active () {
    [ -n "$(psql_q "SELECT id FROM reservations WHERE job_id = '$1' AND state = 'active'")" ]
}
# step_put URL STEP OUT: PUT step STEP of job sj with the job token (2 VNIs
# of its own on n1); the reply in $T/OUT.body, its status in $T/OUT.code.
step_put () {
    curl -s -m 20 -o "$T/$3.body" -w '%{http_code}' -X PUT \
        -H "Authorization: Bearer $JOB_TOKEN" -H "Content-Type: application/json" \
        -d '{"nodes":"n1","vni_count":2}' "$1/v1/reservations/sj/steps/$2" \
        >"$T/$3.code" 2>/dev/null
}
# step_round STEP MODE: a step reserve sent to a fresh replica A waits in
# PostgreSQL behind the job's lock (3 s).  MODE unseen: A is stopped (its
# session is not: it commits and its answer waits in A's socket), then
# killed once the step is in the database; the retry on B must get that
# step back.  MODE late: A's session is stopped and A killed; the retry on
# B is answered and the step ended before the session goes on, which must
# then make nothing.
step_round () {
    step=$1 mode=$2
    broker_start "$T/a.toml" || { not_ok "replica A starts"; return 1; }
    url_a=$BROKER_URL
    pid_a=$BROKER_PID
    BROKER_URL=$URL_B
    hold_job_lock sj 3
    locker=$LOCKER
    step_put "$url_a" "$step" sa &
    curl_a=$!
    wait_for 5 a_step_backends_found || not_ok "sj#$step: A's step reserve waits in PostgreSQL"
    backend_a=$(a_step_backends)
    if [ "$mode" = unseen ]; then
        kill -STOP "$pid_a"
        wait "$locker"
        wait_for 10 step_row_active "sj#$step"
        orphan=$(psql_q "SELECT id FROM reservations WHERE job_id = 'sj#$step' AND state = 'active'")
        kill -KILL "$pid_a"
    else
        for p in $backend_a; do kill -STOP "$p"; done
        kill -KILL "$pid_a"
        wait "$locker"
    fi
    wait "$pid_a" 2>/dev/null
    wait "$curl_a" 2>/dev/null
    expect_match "sj#$step ($mode): A died without answering" "$(cat "$T/sa.code")" '^(000)?$'
    step_put "$URL_B" "$step" sb
    rid_b=$(jq -r .id "$T/sb.body" 2>/dev/null)
    if [ "$mode" = unseen ]; then
        expect_match "sj#$step: A's step reserve committed unseen ($orphan)" "$orphan" '^[0-9]+$'
        expect_eq "sj#$step: the retry on B with the job token gets that step back: 200, the same reservation" \
            "$(cat "$T/sb.code") $rid_b" "200 $orphan"
        expect_eq "sj#$step: ... and its VNIs" "$(jq -c .vnis "$T/sb.body" 2>/dev/null)" \
            "$(psql_q "SELECT array_to_json(vnis) FROM reservations WHERE id = ${orphan:-0}")"
        TOKEN=$JOB_TOKEN http DELETE "/v1/reservations/sj/steps/$step"
        expect_status "sj#$step: the step manager ends it: 202" 202
    else
        expect_eq "sj#$step: the retry on B while A's session is stopped: 201" "$(cat "$T/sb.code")" 201
        TOKEN=$JOB_TOKEN http DELETE "/v1/reservations/sj/steps/$step"
        expect_status "sj#$step: the step manager ends it: 202" 202
        for p in $backend_a; do kill -CONT "$p"; done
        wait_for 20 a_backends_gone
        expect_eq "sj#$step: A's orphaned database session has ended" "$?" 0
    fi
    expect_eq "sj#$step ($mode): no zombie step: its one reservation, B's answer, is released" \
        "$(psql_q "SELECT string_agg(id || ' ' || state, ',') FROM reservations WHERE job_id = 'sj#$step'")" \
        "${rid_b:-none} released"
}

BROKER_URL=$URL_B
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"sj","uid":1001,"user":"alice","nodes":"n[1-2]","vni_count":1}'
expect_status "job sj reserved (its steps' job)" 201
JOB_TOKEN=$(jq -r '.job_token // empty' "$T/http.body")
expect_match "... with a job token" "$JOB_TOKEN" '^vnibjob\.'
step_round 0 unseen
step_round 1 late
expect_eq "every step event of sj is the job token's" \
    "$(psql_q "SELECT string_agg(DISTINCT actor, ',') FROM events WHERE job_id LIKE 'sj#%'")" "job:sj"
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/sj
expect_status "job sj released: 200 (no node reported)" 200
expect_eq "no VNI is held after the steps' rounds" "$(psql_q 'SELECT count(*) FROM vni_holds')" 0

# ---- release acts on the live reservation, whatever its id ---------------------------------
# An older active reservation and a newer released one of the same job, as
# a zombie leaves them: written directly, as the schema has them.
insert_pair () { # JOB VNI: echoes the active reservation's id
    psql_q "WITH a AS (INSERT INTO reservations (job_id, state, uid, username, nodes,
                         node_count, vni_count, vnis, tcs_mask, created_by, created_at)
                       VALUES ('$1', 'active', 1001, 'alice', 'n1', 1, 1, '{$2}', 10,
                               'slurmctld', now() - interval '1 minute')
                       RETURNING id)
            INSERT INTO vni_holds (vni, reservation_id) SELECT $2, id FROM a RETURNING reservation_id"
    psql_q "INSERT INTO reservations (job_id, state, uid, username, nodes, node_count,
                                      vni_count, vnis, tcs_mask, created_by,
                                      release_requested_at, released_at, released_by)
            VALUES ('$1', 'released', 1001, 'alice', 'n1', 1, 1, '{$(($2 + 1))}', 10,
                    'slurmctld', now(), now(), 'slurmctld')" >/dev/null
}

OLD=$(insert_pair old 2050)
expect_match "job old: an older active reservation and a newer released one" \
    "$(psql_q "SELECT string_agg(state, ',' ORDER BY id) FROM reservations WHERE job_id = 'old'")" \
    '^active,released$'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/old
expect_status "DELETE old is 200 (no node reported)" 200
expect_json "D2 release acts on the live (older) reservation, not the newest" .id "$OLD"
expect_json "D2 ... which is now released (today: already_released on the newest)" .state released
expect_eq "D2 the live reservation is released in the database" \
    "$(psql_q "SELECT state FROM reservations WHERE id = $OLD")" released
expect_eq "D2 its VNI is no longer held" "$(psql_q "SELECT count(*) FROM vni_holds WHERE reservation_id = $OLD")" 0
TOKEN=$SCHED_TOKEN http GET '/v1/reservations?state=active'
expect_json "D2 job old has no active reservation left" \
    '[.reservations[] | select(.job_id == "old")] | length' 0
TOKEN=$SCHED_TOKEN http GET /v1/reservations/old
expect_json "GET old shows it released" .state released

# The same with a node holding services: release quarantines the live
# reservation, force ends it.
OLD2=$(insert_pair old2 2060)
psql_q "INSERT INTO node_reports (reservation_id, node, cxi) VALUES ($OLD2, 'n1', 'creating')"
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/old2
expect_status "D2 DELETE old2 (a node holds services) is 202 releasing" 202
expect_json "D2 ... on the live reservation" .id "$OLD2"
expect_eq "D2 the live reservation is releasing, its VNI quarantined" \
    "$(psql_q "SELECT state FROM reservations WHERE id = $OLD2"),$(psql_q "SELECT count(*) FROM vni_holds WHERE reservation_id = $OLD2")" \
    releasing,1
TOKEN=$ADMIN_TOKEN http DELETE '/v1/reservations/old2?force=true'
expect_status "D2 force on old2 is 200" 200
expect_json "D2 ... on the live reservation" .id "$OLD2"
expect_eq "D2 forced: the live reservation is released, nothing held" \
    "$(psql_q "SELECT state, forced FROM reservations WHERE id = $OLD2"),$(psql_q "SELECT count(*) FROM vni_holds WHERE reservation_id = $OLD2")" \
    'released|t,0'

# ---- one reservation by its id: a requeued job's old quarantine ---------------------------
# The old reservation waits for its node; the job is requeued and reserved
# again.  A release or force naming the old id touches it alone.
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"rq","uid":1,"user":"u","nodes":"n1"}'
R1=$(jq -r .id "$T/http.body")
TOKEN=$(node_token n1) http PUT /v1/reservations/rq/nodes/n1 -d '{"cxi":"created"}'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/rq
expect_status "rq released while its node holds services: 202" 202
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"rq","uid":1,"user":"u","nodes":"n1"}'
expect_status "rq requeued: a new reservation" 201
R2=$(jq -r .id "$T/http.body")
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/rq?reservation_id=$R1"
expect_status "release naming the old reservation: 202 (still quarantined)" 202
expect_json "... acts on it" .id "$R1"
TOKEN=$ADMIN_TOKEN http DELETE "/v1/reservations/rq?reservation_id=$R1&force=true"
expect_status "force naming the old reservation: 200" 200
expect_json "... ends its quarantine" .state released
expect_eq "the requeued job's new reservation is untouched" \
    "$(psql_q "SELECT state FROM reservations WHERE id = $R2"),$(psql_q "SELECT count(*) FROM vni_holds WHERE reservation_id = $R2")" \
    active,1
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/rq?reservation_id=$((R2 + 1000))"
expect_status "a reservation id the job does not have: 404" 404
expect_json "... reservation_not_found" .error.code reservation_not_found
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/rq?reservation_id=x"
expect_status "a reservation id that is not a number: 400" 400

BROKER_PID=$PID_B
broker_stop
finish
