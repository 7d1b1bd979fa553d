#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Quarantine: a released VNI is not handed out again until every node that
# might hold a CXI service for it has reported it destroyed, or an admin
# forces it; node reports, their transitions, drains and the node view.
. "$(dirname "$0")/lib.sh"

# PostgreSQL logs every statement, so that the test sees the sweeper run.
PG_OPTS="-c log_statement=all"
pg_start || exit 1
broker_up "$T/b.toml" '
[vni]
pool = "3000-3001"
sweep_interval_s = 1'

TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"q1","uid":1001,"user":"alice","nodes":"n[1-3]"}'
expect_json "q1 takes 3000" '.vnis | join(",")' 3000

# report NODE STATE [EXTRA-JSON]: as the node itself.
report () {
    TOKEN=$(node_token "$1") http PUT "/v1/reservations/${JOB:-q1}/nodes/$1" \
        -d "{\"cxi\":\"$2\"${3:+,$3}}"
}
report n1 creating
expect_status "a node reports creating before touching the NIC" 200
expect_json "a node's reply carries no cleanup counts (quadratic at scale)" '.cleanup' null
TOKEN=$SCHED_TOKEN http GET /v1/reservations/q1
expect_json "the scheduler sees the cleanup counts follow" '.cleanup.creating' 1
report n1 created '"services":[{"device":"cxi0","svc_id":11},{"device":"cxi1","svc_id":12}]'
expect_status "created with its services" 200
report n2 creating
report n2 created
report n2 creating
expect_status "creating again after created (a re-run prolog) is accepted" 200
report n2 created

TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/q1
expect_status "release with nodes holding services is 202" 202
expect_json "state releasing" .state releasing
expect_json "quarantined" .quarantined true
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/q1
expect_status "repeating the release is harmless (202)" 202

report n3 creating
expect_status "a node cannot start creating for a releasing job" 409
expect_json "... job_not_active" .error.code job_not_active

TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_json "the pool counts the VNI as quarantined" .quarantined 1
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"q2","uid":1001,"user":"alice","nodes":"n[1-3]"}'
expect_json "q2 takes 3001" '.vnis | join(",")' 3001
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"q3","uid":1001,"user":"alice","nodes":"n[1-3]"}'
expect_status "while q1 is quarantined its VNI is not handed out: pool exhausted" 503

TOKEN=$(node_token n1) http GET /v1/nodes/n1
expect_json "the node view lists what n1 must clean up" '[.reservations[] | select(.job_id == "q1") | .cleanup_needed] | join(",")' true
expect_json "... with its services" '[.reservations[] | select(.job_id == "q1") | .services[].svc_id] | join(",")' 11,12
expect_json "... counted (q2 includes n1 too, but n1 never touched it)" .cleanup_needed 1

report n1 destroyed
expect_status "n1 confirms" 200
expect_json "still releasing while n2 holds its service" .state releasing
report n1 created
expect_status "a report going backwards (destroyed, then created) is 409" 409
report n2 destroyed
expect_json "the last confirmation ends the quarantine" .state released
expect_json "... recording who" .released_by node:n2
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"q3","uid":1001,"user":"alice","nodes":"n[1-3]"}'
expect_status "now the VNI can be handed out again" 201
expect_json "... it is 3000" '.vnis | join(",")' 3000

# Failure: the node is drained and keeps the quarantine until it confirms.
JOB=q2 report n3 creating
JOB=q2 report n3 failed '"message":"cxil_destroy_svc: EBUSY after 5s"'
expect_status "a failed report is recorded" 200
TOKEN=$(node_token n3) http GET /v1/nodes/n3
expect_json "the node is marked drained" .drained true
expect_json "... with the reason" .drained_reason 'cxil_destroy_svc: EBUSY after 5s'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/q2
expect_status "releasing a job with a failed node is 202" 202
# The sweeper's runs, each one statement, one at a time.  A run that
# starts after the release sees it; once the next one starts, it is over.
sweeps () {
    grep -c 'execute [^:]*: SELECT vnib_sweep(' "$T/pglog/pg.log"
}
sweeps_since_release=$(($(sweeps) + 2))
sweeper_ran () {
    [ "$(sweeps)" -ge "$sweeps_since_release" ]
}
wait_for 15 sweeper_ran
expect_eq "the sweeper ran since the release (PostgreSQL's log)" "$?" 0
TOKEN=$SCHED_TOKEN http GET /v1/reservations/q2
expect_json "the sweeper leaves it quarantined while n3 may hold a service" .state releasing

TOKEN=$SCHED_TOKEN http DELETE '/v1/reservations/q2?force=true'
expect_status "a scheduler may not force" 403
TOKEN=$ADMIN_TOKEN http DELETE '/v1/reservations/q2?force=true'
expect_status "an admin forces the end of the quarantine (200)" 200
expect_json "... released" .state released
expect_json "... marked forced" .forced true
expect_json "... by the admin" .released_by ops-admin
TOKEN=$ADMIN_TOKEN http GET '/v1/events?job_id=q2'
expect_json "the audit trail has every step" '[.events[].action] | join(",")' 'reserve,report,report,drain,release,force'

TOKEN=$ADMIN_TOKEN http DELETE /v1/nodes/n3/drain
expect_json "an admin clears the drain" .drained false
TOKEN=$ADMIN_TOKEN http GET '/v1/events?job_id=q2&limit=2'
next=$(jq -r .next "$T/http.body")
expect_match "a full page of events has a cursor" "$next" '^[0-9]+$'
TOKEN=$ADMIN_TOKEN http GET "/v1/events?job_id=q2&after=$next&limit=100"
expect_json "the next page continues after it" '.events[0].action' report

# A node outside the job cannot report for it, nor for another node.
report n9 creating
expect_status "a node outside the job's node list is refused" 403
TOKEN=$(node_token n1) http PUT /v1/reservations/q3/nodes/n2 -d '{"cxi":"creating"}'
expect_status "a node cannot report for another node" 403
TOKEN=$ADMIN_TOKEN http PUT /v1/reservations/q3/nodes/n2 -d '{"cxi":"creating"}'
expect_status "an admin can report for any node of the job" 200
report n1 exploded
expect_json "an unknown cxi state is refused" .error.code invalid_field
report n1 created '"services":[{"device":"cxi0"}]'
expect_json "a service without svc_id is refused" .error.code invalid_field
report n1 created '"extra":1'
expect_json "unknown report fields are refused" .error.code unknown_field

# A requeue between an agent's fetch and its report: the report names the
# reservation it acted on and is refused, instead of landing on the new one.
old_id=$(TOKEN=$SCHED_TOKEN curl -s -H "Authorization: Bearer $SCHED_TOKEN" "$BROKER_URL/v1/reservations/q3" | jq .id)
TOKEN=$ADMIN_TOKEN http DELETE '/v1/reservations/q3?force=true'
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"q3","uid":1001,"user":"alice","nodes":"n[1-3]"}'
expect_status "q3 requeued: a new reservation" 201
JOB=q3 report n1 creating "\"reservation_id\":$old_id"
expect_status "a report about the old reservation is refused (409)" 409
expect_json "... stale_reservation" .error.code stale_reservation
JOB=q3 report n1 creating "\"reservation_id\":$((old_id + 1000))"
expect_json "an id that is not the job's current one is refused too" .error.code stale_reservation
cur_id=$(curl -s -H "Authorization: Bearer $SCHED_TOKEN" "$BROKER_URL/v1/reservations/q3" | jq .id)
JOB=q3 report n2 creating "\"reservation_id\":$cur_id"
expect_status "a report naming the current reservation is accepted" 200
JOB=q3 report n1 created '"reservation_id":0'
expect_json "reservation_id must be positive" .error.code invalid_field

# The sweeper closes a quarantine whose last holder confirmed: simulate the
# rare interleaving by ending n2's report directly in the database.
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/q3
expect_status "q3 is quarantined by n2" 202
psql_q "UPDATE node_reports SET cxi = 'destroyed' WHERE node = 'n2' AND reservation_id = (SELECT max(id) FROM reservations WHERE job_id = 'q3')" >/dev/null
wait_for 5 sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/q3 | jq -r .state)\" = released ]"
TOKEN=$SCHED_TOKEN http GET /v1/reservations/q3
expect_json "the sweeper ends a quarantine nobody holds any more" .state released
expect_json "... as the sweeper" .released_by sweeper
finish
