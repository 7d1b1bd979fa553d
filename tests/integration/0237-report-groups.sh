#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Node reports written in groups (database.report_group_max): a group
# that mixes refused and accepted reports answers each as it would alone.
# One report group leader (database.report_group_leaders = 1) is held up
# on a reservation's row lock (a psql session holds it FOR UPDATE), so
# that the ten reports sent meanwhile, on ten connections at once, wait in
# the queue and are written by the next group, together: the broker's
# metrics show that group of ten.  Its items: accepted (creating of a job
# and of its step, a failed report that drains its node, the destroyed
# report that ends another job's quarantine) and refused (a node outside
# the node list, no such job, a stale reservation id, a job being
# released, a node's report going back after destroyed): each gets its
# own status and error code, and the database holds exactly the accepted
# ones, with one event each and one quarantine end.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"
# The held-up statement waits for the lock longer than the harness's
# query timeout.
sed -i -e 's/^acquire_timeout_ms = .*/&\nreport_group_leaders = 1/' \
    -e 's/^query_timeout_ms = .*/query_timeout_ms = 20000/' "$T/b.toml"
broker_migrate_start "$T/b.toml"

reserve () { # JOB NODES
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"$2\"}"
    expect_status "reserve $1 on $2" 201
}
report () { # JOB[/steps/STEP] NODE CXI [EXTRA-JSON]
    TOKEN=$(node_token "$2") http PUT "/v1/reservations/$1/nodes/$2" \
        -d "{\"cxi\":\"$3\"${4:+,$4}}"
}
# report_bg OUT JOB[/steps/STEP] NODE CXI [EXTRA-JSON]: report in the
# background; "STATUS CODE" (code "-" for a 200) into $T/OUT.
report_bg () {
    out=$1
    shift
    tok=$(node_token "$2")
    (
        st=$(curl -sS -o "$T/$out.body" -w '%{http_code}' --max-time 30 -X PUT \
            -H "Authorization: Bearer $tok" -H "Content-Type: application/json" \
            -d "{\"cxi\":\"$3\"${4:+,$4}}" "$BROKER_URL/v1/reservations/$1/nodes/$2")
        code=$(jq -r '.error.code // "-"' "$T/$out.body" 2>/dev/null)
        echo "$st ${code:--}" >"$T/$out"
    ) &
    REPORTERS="$REPORTERS $!"
}
REPORTERS=
groups () { # the report groups and the largest, from /metrics
    http GET /metrics
    echo "$(reply_metric 'vnib_db_groups_total{op="report"}') $(reply_metric 'vnib_db_group_largest{op="report"}')"
}

reserve ga "n[1-4]"
GA=$(jq .id "$T/http.body")
TOKEN=$SCHED_TOKEN http PUT /v1/reservations/ga/steps/s1 -d '{"nodes":"n[1-2]","vni_count":1}'
expect_status "step s1 of ga on n[1-2]" 201
reserve gb "n[5-6]"
report gb n5 created
expect_status "gb: n5 created" 200
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/gb
expect_status "gb released: quarantined while n5 holds it" 202
reserve gc "n[7-8]"
report gc n7 destroyed
expect_status "gc: n7 destroyed while the job runs" 200
reserve gd "n[10-11]"
GD=$(jq .id "$T/http.body")
ev0=$(psql_q "SELECT max(id) FROM events")

# The only leader, held up by gd's row lock; then the ten, meanwhile.
read -r g0 _ <<<"$(groups)"
pg_hold "SELECT 1 FROM reservations WHERE id = $GD FOR UPDATE; SELECT pg_sleep(4)"
wait_for 5 lock_waiters 0 || true
report_bg r0 gd n10 creating
wait_for 5 lock_waiters 1 || not_ok "the first report waits for gd's row"
report_bg r1 ga n2 creating
report_bg r2 ga n9 creating
report_bg r3 nojob n1 creating
report_bg r4 ga n3 creating "\"reservation_id\":$((GA + 1000))"
report_bg r5 gb n6 creating
report_bg r6 gc n7 created
report_bg r7 gb n5 destroyed
report_bg r8 ga/steps/s1 n1 creating
report_bg r9 ga n4 failed '"message":"cxi0: svc_alloc failed"'
report_bg r10 ga n1 creating
for p in $REPORTERS; do wait "$p"; done
read -r g1 largest <<<"$(groups)"
expect_eq "the held-up report and the ten were written in two groups" "$((g1 - g0))" 2
expect_eq "... the ten together, in one group" "$largest" 10

answer () { cat "$T/$1" 2>/dev/null; }
expect_eq "the held-up report, in a group of its own" "$(answer r0)" "200 -"
expect_eq "a creating of the job: accepted" "$(answer r1)" "200 -"
expect_eq "a node outside the job's node list: 403 forbidden" "$(answer r2)" "403 forbidden"
expect_eq "a job that does not exist: 404" "$(answer r3)" "404 reservation_not_found"
expect_eq "another reservation id than the job's: 409 stale_reservation" \
    "$(answer r4)" "409 stale_reservation"
expect_eq "creating for a job being released: 409 job_not_active" \
    "$(answer r5)" "409 job_not_active"
expect_eq "created after destroyed: 409 invalid_transition" \
    "$(answer r6)" "409 invalid_transition"
expect_eq "the last holder's destroyed: accepted" "$(answer r7)" "200 -"
expect_eq "a step's creating: accepted" "$(answer r8)" "200 -"
expect_eq "a failed report: accepted" "$(answer r9)" "200 -"
expect_eq "the job's creating from a node of its step too: accepted" "$(answer r10)" "200 -"
expect_eq "an accepted report's reply is its reservation" \
    "$(jq -r '"\(.id) \(.state)"' "$T/r1.body")" "$GA active"
expect_eq "... and the quarantine it ended shows in its reply" \
    "$(jq -r .state "$T/r7.body")" released
expect_match "a refusal says why (invalid_transition)" \
    "$(jq -r .error.message "$T/r6.body")" 'already reported destroyed'

expect_eq "the database holds exactly the accepted reports" \
    "$(psql_q "SELECT r.job_id || ' ' || n.node || ' ' || n.cxi FROM node_reports n
               JOIN reservations r ON r.id = n.reservation_id
               WHERE r.job_id IN ('ga', 'ga#s1', 'gb', 'gc', 'nojob')
               ORDER BY 1" | paste -sd,)" \
    "ga n1 creating,ga n2 creating,ga n4 failed,ga#s1 n1 creating,gb n5 destroyed,gc n7 destroyed"
expect_eq "one event per accepted report, a drain and one quarantine end" \
    "$(psql_q "SELECT action || ' ' || coalesce(job_id, '') || ' ' || coalesce(node, '')
               FROM events WHERE id > $ev0 ORDER BY action, job_id, node" | paste -sd,)" \
    "drain ga n4,quarantine_end gb ,report ga n1,report ga n2,report ga n4,report ga#s1 n1,report gb n5,report gd n10"
expect_eq "gb's quarantine ended: released, its VNI free" \
    "$(psql_q "SELECT state || ' ' || (SELECT count(*) FROM vni_holds h WHERE h.reservation_id = r.id) FROM reservations r WHERE job_id = 'gb'")" \
    "released 0"
expect_eq "the failed report drained n4" \
    "$(psql_q "SELECT drained || ' ' || drained_reason FROM nodes WHERE name = 'n4'")" \
    "true cxi0: svc_alloc failed"
expect_db_consistent
finish
