#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The status page's lookups, through the API: GET /v1/search (one name as
# a job id and as a node name) and GET /v1/reservations/{job_id}/nodes
# (the job's nodes by their last report).  Against a broker with hardware
# collectives on fmsim and an inventory (cluster.topology_file), seeded
# with a job whose id needs escaping: what each answers agrees with the
# job's and the node's own endpoints and with the database; the reports
# come failed first and are capped by limit, and are kept once the job is
# released (by force or by its nodes); a node no one knows, a name valid as
# only one kind, and one valid as neither; no session token is ever in a
# search, even an admin's; the roles; bad parameters are 400 naming them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
printf 'SwitchName=s0 Nodes=nid[001-008]\nSwitchName=s1 Nodes=nid[009-016]\n' >"$T/topology.conf"
hwcoll_config "$T/b.toml" tux "$(vni_pool 3000-3099)"
sed -i "s|^name = \"tux\"|name = \"tux\"\ntopology_file = \"$T/topology.conf\"\nreject_unknown_nodes = false|" "$T/b.toml"
broker_migrate_start "$T/b.toml"

# enc S: S escaped for a URL's path or query.
enc () {
    python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"
}
report () {
    TOKEN=$(node_token "$2") http PUT "/v1/reservations/$(enc "$1")/nodes/$2" -d "{\"cxi\":\"$3\"${4:+,$4}}"
    expect_status "$2 reports $3 for $1" 200
}
search () {
    TOKEN=${TOK:-$MONITOR_TOKEN} http GET "/v1/search?q=$(enc "$1")${2:+&$2}"
}

# ---- seed -----------------------------------------------------------------------------
JOB='4711.0+het@a:b'
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d "{\"job_id\":\"$JOB\",\"uid\":1002,\"user\":\"bob\",\"nodes\":\"nid[001-006]\",\"vni_count\":2,\"hwcoll\":\"on\"}"
expect_status "reserve $JOB on nid[001-006], with hardware collectives" 201
SESSION=$(jq -r .hwcoll.session_token "$T/http.body")
expect_match "... a session token was made" "$SESSION" '^vnib1\.'
report "$JOB" nid001 created '"services":[{"device":"cxi0","svc_id":7}]'
report "$JOB" nid002 creating
report "$JOB" nid003 created
report "$JOB" nid003 destroyed
report "$JOB" nid004 failed '"message":"cxi_svc_alloc: EBUSY"'
# nid005, nid006: silent.
# A job named like a node, and a node named like a job.
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"nid010","uid":1003,"user":"carol","nodes":"nid[009-010]","vni_count":1}'
expect_status "reserve job nid010 (a job id that is also a node name)" 201

# ---- GET /v1/reservations/{job_id}/nodes ------------------------------------------------
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$(enc "$JOB")/nodes"
expect_status "a monitor reads $JOB's nodes" 200
N=$T/nodes.json
cp "$T/http.body" "$N"
expect_eq "... the job and its reservation" "$(jq -r '[.job_id, .state, .nodes, .node_count] | map(tostring) | join(" ")' "$N")" \
    "$JOB active nid[001-006] 6"
expect_eq "... the reservation is the job's" "$(jq .reservation_id "$N")" \
    "$(psql_q "SELECT id FROM reservations WHERE job_id = '$JOB'")"
expect_eq "... its nodes by their last report" \
    "$(jq -r '[.states | to_entries[] | .key + "=" + .value.nodes + "(" + (.value.count | tostring) + ")"] | join(" ")' "$N")" \
    "pending=nid[005-006](2) creating=nid002(1) created=nid001(1) destroyed=nid003(1) failed=nid004(1)"
expect_eq "... every node in exactly one state" "$(jq '[.states[].count] | add' "$N")" 6
expect_eq "... the reports, failed first, then creating, created, destroyed" \
    "$(jq -r '[.reports[] | .node + ":" + .cxi] | join(" ")' "$N")" \
    "nid004:failed nid002:creating nid001:created nid003:destroyed"
expect_eq "... as the database has them" "$(jq .reports_total "$N")" \
    "$(psql_q "SELECT count(*) FROM node_reports nr JOIN reservations r ON r.id = nr.reservation_id WHERE r.job_id = '$JOB'")"
expect_eq "... with the failure's message" "$(jq -r '.reports[0].message' "$N")" "cxi_svc_alloc: EBUSY"
expect_eq "... and the services" "$(jq -c '.reports[2].services' "$N")" '[{"device":"cxi0","svc_id":7}]'
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$(enc "$JOB")/nodes?limit=2"
expect_eq "limit=2: the two that matter most, and the total" \
    "$(jq -c '[[.reports[].node], .reports_total]' "$T/http.body")" '[["nid004","nid002"],4]'
expect_eq "... the states still count every node" "$(jq '[.states[].count] | add' "$T/http.body")" 6
for bad in limit=0 limit=10001 limit=x; do
    TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$(enc "$JOB")/nodes?$bad"
    expect_status "nodes $bad: 400" 400
    expect_match "... invalid_field naming limit" "$(jq -r '.error.code + " " + .error.message' "$T/http.body")" '^invalid_field .*limit'
done
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/nope/nodes"
expect_status "a job with no reservation: 404" 404
expect_json "... reservation_not_found" .error.code reservation_not_found
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/-x/nodes"
expect_status "a job id that reads as an option: 400" 400

# ---- GET /v1/search ---------------------------------------------------------------------
search "$JOB"
expect_status "search $JOB: 200" 200
S=$T/search.json
cp "$T/http.body" "$S"
expect_eq "... valid as a job id, not as a node name" "$(jq -c '[.q, .job_id_valid, .node_name_valid]' "$S")" \
    "[\"$JOB\",true,false]"
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$(enc "$JOB")"
expect_eq "... its job is GET /v1/reservations/{job_id}'s" \
    "$(jq -S -c .job "$S")" "$(jq -S -c . "$T/http.body")"
expect_eq "... its job_nodes GET .../nodes's (limit 200)" \
    "$(jq -S -c .job_nodes "$S")" "$(jq -S -c . "$N")"
expect_eq "... no node" "$(jq -c .node "$S")" null
expect_eq "... the hardware collectives' state is there" "$(jq -r .job.hwcoll.state "$S")" reserved
for who in ADMIN SCHED MONITOR; do
    eval "TOK=\$${who}_TOKEN"
    TOK=$TOK search "$JOB"
    expect_status "search as $who: 200" 200
    expect_no_match "... no session token, anywhere in the reply" "$(cat "$T/http.body")" "$SESSION"
    expect_no_match "... nor the sealed one" "$(cat "$T/http.body")" '"sealed|session_token|MCAST_TOKEN'
done
TOK=$ADMIN_TOKEN
TOKEN=$ADMIN_TOKEN http GET "/v1/reservations/$(enc "$JOB")"
expect_match "(while the admin's GET of the job does carry it)" "$(cat "$T/http.body")" "$SESSION"
unset TOK

search nid004
expect_eq "search nid004: a node, no job" "$(jq -c '[.job_id_valid, .node_name_valid, .job, .job_nodes]' "$T/http.body")" \
    '[true,true,null,null]'
expect_eq "... drained, with the reason" "$(jq -c '[.node.drained, .node.drained_reason]' "$T/http.body")" \
    '[true,"cxi_svc_alloc: EBUSY"]'
expect_eq "... in the inventory" "$(jq .node.in_inventory "$T/http.body")" true
expect_eq "... the job whose services it may hold, its report" \
    "$(jq -r '[.node.reservations[] | .job_id + ":" + .cxi + ":" + (.cleanup_needed | tostring)] | join(" ")' "$T/http.body")" \
    "$JOB:failed:true"
TOKEN=$ADMIN_TOKEN http GET /v1/nodes/nid004
expect_eq "... its node is GET /v1/nodes/{node}'s" \
    "$(search nid004; jq -S -c .node "$T/http.body")" "$(TOKEN=$ADMIN_TOKEN http GET /v1/nodes/nid004; jq -S -c . "$T/http.body")"
search nid003
expect_eq "search nid003 (confirmed destroyed): nothing left to clean" \
    "$(jq -r '[.node.cleanup_needed, .node.reservations[0].cxi] | map(tostring) | join(" ")' "$T/http.body")" "0 destroyed"
search nid010
expect_eq "search nid010: a job and a node at once" \
    "$(jq -r '[.job.job_id, .job.nodes, .node.node, (.node.reservations | length)] | map(tostring) | join(" ")' "$T/http.body")" \
    "nid010 nid[009-010] nid010 1"
search nid999
expect_status "search nid999 (no such node): 200" 200
expect_eq "... no job, and an empty node not in the inventory" \
    "$(jq -c '[.job, .node.drained, (.node.reservations | length), .node.in_inventory]' "$T/http.body")" '[null,false,0,false]'
search '<b>x</b>'
expect_status "search <b>x</b>: 200, it finds nothing" 200
expect_eq "... valid as neither, looked up as neither" \
    "$(jq -c '[.job_id_valid, .node_name_valid, .job, .job_nodes, .node]' "$T/http.body")" '[false,false,null,null,null]'
search "$(printf 'n%.0s' $(seq 300))"
expect_eq "a 300-character name: neither (too long for both)" \
    "$(jq -c '[.job_id_valid, .node_name_valid]' "$T/http.body")" '[false,false]'
search '-rf'
expect_eq "-rf (it would read as an option): neither" "$(jq -c '[.job_id_valid, .node_name_valid]' "$T/http.body")" '[false,false]'
for bad in "" "q=" "q=%ff%fe" "q=nid001&limit=0" "q=nid001&limit=10001"; do
    TOKEN=$MONITOR_TOKEN http GET "/v1/search?$bad"
    expect_status "search ?$bad: 400" 400
    expect_json "... invalid_field" .error.code invalid_field
done

# ---- a released job ------------------------------------------------------------------
TOKEN=$ADMIN_TOKEN http DELETE "/v1/reservations/$(enc "$JOB")?force=true"
expect_status "$JOB is force-released" 200
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$(enc "$JOB")/nodes"
expect_eq "released: the state, and what reports are kept" \
    "$(jq -r '[.state, (.states | to_entries[] | .key + "=" + .value.nodes)] | join(" ")' "$T/http.body")" \
    "released pending=nid[005-006] creating=nid002 created=nid001 destroyed=nid003 failed=nid004"
# A quarantine that ends as it should: both nodes confirm.
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"q1","uid":1003,"user":"carol","nodes":"nid[011-012]","vni_count":1}'
report q1 nid011 created
report q1 nid012 created
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/q1
expect_json "q1 is quarantined" .quarantined true
report q1 nid011 destroyed
report q1 nid012 destroyed
TOKEN=$MONITOR_TOKEN http GET /v1/reservations/q1/nodes
expect_eq "q1, released by its nodes: their reports are kept" \
    "$(jq -r '[.state, (.states | to_entries[] | .key + "=" + .value.nodes)] | join(" ")' "$T/http.body")" \
    "released pending= creating= created= destroyed=nid[011-012] failed="
search nid004
expect_eq "search nid004 after: still drained, the job no longer live" \
    "$(jq -c '[.node.drained, (.node.reservations | length)]' "$T/http.body")" '[true,0]'

# ---- roles -----------------------------------------------------------------------------
for who in NODE JOB; do
    if [ "$who" = NODE ]; then tok=$(node_token nid001); else tok=vnibjob.1.x.bad; fi
    TOKEN=$tok http GET "/v1/search?q=nid001"
    expect_match "search as a $who token: refused" "$HTTP_STATUS" '^40[13]$'
    TOKEN=$tok http GET "/v1/reservations/nid010/nodes"
    expect_match "job nodes as a $who token: refused" "$HTTP_STATUS" '^40[13]$'
done
TOKEN="" http GET "/v1/search?q=nid001"
expect_status "search without a token: 401" 401
finish
