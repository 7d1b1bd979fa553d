#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# GET /v1/status tells the truth: for a seeded state (active jobs,
# quarantines waiting on nodes that reported created or failed, a job
# step's quarantine, drained nodes) every figure agrees with GET /v1/pool,
# GET /v1/reservations?state=releasing and the database itself; the
# lists are ordered and limited as documented; the roles and parameter
# errors; the new gauges in /metrics; a database outage is 503 and
# vnib_db_up 0.  GET /v1/events: monitors read it, the action and node
# filters, and newest-first order with its cursor.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" '
[vni]
pool = "3000-3019"
sweep_interval_s = 1'

# report JOB NODE STATE [EXTRA-JSON], as the node.
report () {
    TOKEN=$(node_token "$2") http PUT "/v1/reservations/$1/nodes/$2" \
        -d "{\"cxi\":\"$3\"${4:+,$4}}"
    expect_status "$2 reports $3 for $1" 200
}
release () {
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$1"
}

# ---- seed ---------------------------------------------------------------------
# j1, j2: quarantined, waiting on nodes that reported created, creating or
# failed (n6 and n13 fail, so they are drained); j3: released at once (no
# node touched it); j4, j5: active; j4 step 1: a step's quarantine.
http_reserve j1 'n[1-4]'
http_reserve j2 'n[5-8]'
http_reserve j3 'n[9-10]'
http_reserve j4 'n[11-12]'
http_reserve j5 'n[13-14]'
report j1 n1 creating
report j1 n1 created
report j1 n2 creating
report j1 n3 creating
report j1 n3 created
report j1 n3 destroyed
report j2 n5 creating
report j2 n5 created
report j2 n6 creating
report j2 n6 failed '"message":"cxil_destroy_svc: EBUSY"'
report j5 n13 creating
report j5 n13 failed '"message":"svc alloc failed"'
release j1
expect_status "j1 releases into quarantine (202)" 202
release j2
expect_status "j2 releases into quarantine (202)" 202
release j3
expect_status "j3 is released at once (200)" 200
TOKEN=$SCHED_TOKEN http PUT /v1/reservations/j4/steps/1 -d '{"nodes":"n11","vni_count":1}'
expect_status "step j4.1 with a VNI of its own" 201
TOKEN=$(node_token n11) http PUT /v1/reservations/j4/steps/1/nodes/n11 -d '{"cxi":"creating"}'
TOKEN=$(node_token n11) http PUT /v1/reservations/j4/steps/1/nodes/n11 -d '{"cxi":"created"}'
expect_status "n11 reports created for the step" 200
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j4/steps/1
expect_json "the step is quarantined" .reservation.state releasing

# ---- the figures against the other routes and the database ------------------
TOKEN=$MONITOR_TOKEN http GET /v1/status
expect_status "a monitor reads GET /v1/status" 200
cp "$T/http.body" "$T/status.json"
S () { jq -c "$1" "$T/status.json"; }
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_eq "pool is GET /v1/pool's object" "$(jq -cS .pool "$T/status.json")" "$(jq -cS . "$T/http.body")"
expect_eq "... with the seed's 2 active and 3 quarantined VNIs" \
    "$(S '[.pool.active, .pool.quarantined]')" '[2,3]'

held=$(psql_q "SELECT count(DISTINCT r.id) FROM reservations r JOIN vni_holds h ON h.reservation_id = r.id WHERE r.state = 'releasing'")
expect_eq "quarantine.reservations is the database's count (3)" "$(S .quarantine.reservations)" "$held"
expect_eq "... 3" "$held" 3
expect_eq "quarantine.vnis is the pool's quarantined VNIs" \
    "$(S .quarantine.vnis)" "$(S .pool.quarantined)"
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?state=releasing'
expect_eq "the items are GET /v1/reservations?state=releasing's, oldest first" \
    "$(S '[.quarantine.items[] | [.reservation_id, .since, .vnis]]')" \
    "$(jq -c '[.reservations | sort_by(.release_requested_at, .id)[] | [.id, .release_requested_at, .vnis]]' "$T/http.body")"
expect_eq "the jobs in order: j1, j2, then j4's step" \
    "$(S '[.quarantine.items[] | .job_id + (if has("step_id") then "." + .step_id else "" end)]')" \
    '["j1","j2","j4.1"]'
expect_eq "oldest_since is the first item's since" \
    "$(S .quarantine.oldest_since)" "$(S '.quarantine.items[0].since')"
expect_eq "j1 waits for n1 (created) and n2 (creating), not n3 (destroyed)" \
    "$(S '.quarantine.items[0].waiting')" '{"count":2,"nodes":"n[1-2]"}'
expect_eq "j2 waits for n5 (created) and n6 (failed)" \
    "$(S '.quarantine.items[1].waiting')" '{"count":2,"nodes":"n[5-6]"}'
expect_eq "the step waits for n11" "$(S '.quarantine.items[2].waiting.nodes')" '"n11"'
expect_eq "a job's item has no step_id key" "$(S '.quarantine.items[0] | has("step_id")')" false
waiting=$(psql_q "SELECT string_agg(node, ',' ORDER BY node) FROM node_reports nr JOIN reservations r ON r.id = nr.reservation_id WHERE r.job_id = 'j2' AND nr.cxi IN ('creating','created','failed')")
expect_eq "... the database agrees on j2's holders" "$waiting" "n5,n6"

drained=$(psql_q "SELECT count(*) FROM nodes WHERE drained")
expect_eq "drained.count is the database's (2)" "$(S .drained.count)" "$drained"
expect_eq "drained.nodes lists them all, compressed" "$(S .drained.nodes)" '"n[6,13]"'
expect_eq "drained items newest first, with reasons" \
    "$(S '[.drained.items[] | [.node, .reason]]')" \
    '[["n13","svc alloc failed"],["n6","cxil_destroy_svc: EBUSY"]]'
expect_match "... and since" "$(S '.drained.items[0].since')" '^"20[0-9-]+T[0-9:.]+Z"$'

TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_eq "fabric_manager is GET /v1/fabric-manager's object (its keys)" \
    "$(S '.fabric_manager | keys')" "$(jq -c keys "$T/http.body")"
expect_eq "... its connection" "$(S .fabric_manager.connection)" "$(jq -c .connection "$T/http.body")"
expect_eq "database.up" "$(S .database.up)" true
expect_match "database.figures_age_s is a number" "$(S .database.figures_age_s)" '^[0-9.]+$'
expect_match "time is RFC 3339 UTC" "$(S .time)" '^"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"$'
expect_eq "replica is host:pid of this broker" "$(S .replica)" "\"$(hostname):$BROKER_PID\""
http GET /healthz
expect_eq "version is vnibrokerd's" "$(S .version)" "$(jq -c .version "$T/http.body")"
expect_eq "history: one sample per 5 s reading" "$(S .history.interval_s)" 5

# The history gains the seed at the next reading (every 5 s).
history_has_seed () {
    TOKEN=$MONITOR_TOKEN http GET /v1/status
    [ "$(jq -c '.history.samples[-1] | [.active, .quarantined]' "$T/http.body")" = '[2,3]' ]
}
wait_for 15 history_has_seed
expect_eq "the newest history sample has the seed's figures" "$?" 0
expect_eq "... and the pool's" \
    "$(jq -c '.history.samples[-1] | [.free, .outside_pool]' "$T/http.body")" \
    "$(jq -c '[.pool.free, .pool.outside_pool]' "$T/http.body")"
expect_eq "samples are oldest first" \
    "$(jq -c '[.history.samples[].t] | . == sort' "$T/http.body")" true

# ---- limits --------------------------------------------------------------------
TOKEN=$MONITOR_TOKEN http GET '/v1/status?quarantine_limit=1&drained_limit=1'
expect_eq "quarantine_limit=1 lists the oldest only, counts all" \
    "$(jq -c '[(.quarantine.items | length), .quarantine.items[0].job_id, .quarantine.reservations]' "$T/http.body")" \
    '[1,"j1",3]'
expect_eq "drained_limit=1 lists the newest only, names all" \
    "$(jq -c '[(.drained.items | length), .drained.items[0].node, .drained.count, .drained.nodes]' "$T/http.body")" \
    '[1,"n13",2,"n[6,13]"]'
TOKEN=$MONITOR_TOKEN http GET '/v1/status?history_s=60'
expect_status "history_s=60 is accepted" 200

# ---- roles and parameters -----------------------------------------------------------
for who in admin scheduler; do
    case $who in admin) tok=$ADMIN_TOKEN ;; *) tok=$SCHED_TOKEN ;; esac
    TOKEN=$tok http GET /v1/status
    expect_status "$who reads /v1/status" 200
done
TOKEN=$(node_token n1) http GET /v1/status
expect_status "a node may not (403)" 403
TOKEN="" http GET /v1/status
expect_status "no token: 401" 401
for bad in history_s=59 history_s=86401 history_s=abc quarantine_limit=0 \
    quarantine_limit=1001 drained_limit=0 drained_limit=2x; do
    TOKEN=$MONITOR_TOKEN http GET "/v1/status?$bad"
    expect_status "$bad: 400" 400
    expect_json "... invalid_field" .error.code invalid_field
    expect_match "... naming the parameter" "$(jq -r .error.message "$T/http.body")" "'${bad%%=*}'"
done

# ---- the new gauges --------------------------------------------------------------
gauges_have_seed () {
    http GET /metrics
    [ "$(reply_metric vnib_quarantine_reservations)" = 3 ] && [ "$(reply_metric vnib_nodes_drained)" = 2 ]
}
wait_for 15 gauges_have_seed
expect_eq "vnib_quarantine_reservations is 3, vnib_nodes_drained 2" "$?" 0
expect_eq "vnib_db_up 1" "$(reply_metric vnib_db_up)" 1
oldest=$(psql_q "SELECT extract(epoch FROM now() - min(release_requested_at))::int FROM reservations WHERE state = 'releasing'")
expect_match "vnib_quarantine_oldest_seconds is the oldest quarantine's age (~${oldest}s)" \
    "$(reply_metric vnib_quarantine_oldest_seconds)" '^[0-9]+\.[0-9]+$'
awk -v m="$(reply_metric vnib_quarantine_oldest_seconds)" -v o="$oldest" 'BEGIN { exit !(m > 0 && m <= o + 1) }'
expect_eq "... between 0 and the database's age" "$?" 0
expect_match "vnib_db_figures_age_seconds has the status figures" "$HTTP_BODY" \
    'vnib_db_figures_age_seconds\{figures="status"\} [0-9.]+'

# ---- events: monitors, filters, order ------------------------------------------------
TOKEN=$MONITOR_TOKEN http GET /v1/events
expect_status "a monitor reads /v1/events" 200
TOKEN=$MONITOR_TOKEN http GET '/v1/events?action=drain'
expect_eq "action=drain: the two drains" "$(jq -c '[.events[] | [.action, .node]]' "$T/http.body")" \
    '[["drain","n6"],["drain","n13"]]'
TOKEN=$MONITOR_TOKEN http GET '/v1/events?node=n6'
expect_eq "node=n6: its reports and its drain" "$(jq -c '[.events[] | [.action, .node]]' "$T/http.body")" \
    '[["report","n6"],["report","n6"],["drain","n6"]]'
TOKEN=$MONITOR_TOKEN http GET '/v1/events?job_id=j1&action=report&node=n3'
expect_eq "the filters combine: n3's three reports for j1" \
    "$(jq -c '[.events[] | [.job_id, .action, .node]] | unique' "$T/http.body")" '[["j1","report","n3"]]'
expect_eq "... all three" "$(jq '.events | length' "$T/http.body")" 3
n_all=$(psql_q "SELECT count(*) FROM events")
TOKEN=$MONITOR_TOKEN http GET '/v1/events?limit=1000'
jq -c '[.events[].id]' "$T/http.body" >"$T/asc"
expect_eq "asc lists every event ($n_all)" "$(jq length "$T/asc")" "$n_all"
# Every newest-first page of 7, following next.
events_pages "$MONITOR_TOKEN" 'order=desc&limit=7' "$T/desc"
expect_eq "order=desc pages with next give every event, newest first" \
    "$(cut -d' ' -f1 "$T/desc" | jq -sc .)" "$(jq -c reverse "$T/asc")"
expect_eq "... over several pages" "$([ "$PAGES" -gt 2 ] && echo yes)" yes
expect_eq "... and time never goes up along them" \
    "$(cut -d' ' -f2 "$T/desc" | jq -Rsc 'split("\n")[:-1] | . == (sort | reverse)')" true
TOKEN=$MONITOR_TOKEN http GET '/v1/events?order=desc&action=report&node=n1&limit=1'
expect_eq "desc with filters: n1's newest report" \
    "$(jq -c '[.events[] | [.action, .node, .detail.cxi]]' "$T/http.body")" '[["report","n1","created"]]'
for bad in action=explode order=sideways node=bad/name node= limit=0 after=-1; do
    TOKEN=$MONITOR_TOKEN http GET "/v1/events?$bad"
    expect_status "events $bad: 400" 400
    expect_json "... invalid_field" .error.code invalid_field
    expect_match "... naming the parameter" "$(jq -r .error.message "$T/http.body")" "${bad%%=*}"
done

# ---- the database goes away ------------------------------------------------------------
pg_stop
status_503 () {
    TOKEN=$MONITOR_TOKEN http GET /v1/status
    [ "$HTTP_STATUS" = 503 ]
}
wait_for 10 status_503
expect_eq "with the database down /v1/status is 503" "$?" 0
db_down () {
    http GET /metrics
    [ "$(reply_metric vnib_db_up)" = 0 ]
}
wait_for 15 db_down
expect_eq "... and vnib_db_up goes to 0" "$?" 0
finish
