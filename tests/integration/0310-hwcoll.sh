#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hardware collectives end to end: the broker against fmsim.  Eligibility
# (auto by min_nodes, explicit on and off), addrs_per_job from HPE's rule,
# an FM that is down or slow (the VNIs are reserved anyway, and nothing is
# left in the FM), who may see session tokens, and that tokens are neither
# in the database in clear text nor in the logs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1

# fmsim with OAuth client credentials.
umask 077
printf 'fm-client-secret-%s' "$(openssl rand -hex 8)" >"$T/fm.secret"
openssl rand 32 >"$T/token.key"
umask 022
fm_start --auth oauth --client-id vnibroker --client-secret-file "$T/fm.secret" \
    --state "$T/fmsim.json" || { not_ok "fmsim starts"; finish; }
ok "fmsim listens at $FM_URL (admin $FM_ADMIN)"

fm_state () { curl -s "$FM_ADMIN/fmsim/state"; }
# FM job ids are <cluster>-<job>-r<reservation id>; the list shows them
# without the reservation part.
fm_jobs () { fm_state | jq -r '[.jobs[].jobID | sub("-r[0-9]+$"; "")] | sort | join(",")'; }

broker_up "$T/b.toml" "
[cluster]
name = \"tux\"

[hwcoll]
enabled = true
fm_url = \"$FM_URL\"
auth = \"oauth\"
token_url = \"$FM_URL/oauth/token\"
client_id = \"vnibroker\"
client_secret_file = \"$T/fm.secret\"
allow_insecure_http = true
min_nodes = 3
system_size = 11136
min_job_size = 64
total_addrs = 4086
reserve_timeout_ms = 1000
request_timeout_ms = 3000
token_key_file = \"$T/token.key\""
expect_match "the broker prints addrs_per_job at start" "$(cat "$BROKER_LOG")" \
    '23 multicast addresses per job \(computed'

reserve () { # JOB NODES [HWCOLL]
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"$2\"${3:+,\"hwcoll\":\"$3\"}}"
}

# fm_count KEY: how many requests fmsim has counted under "METHOD pattern".
fm_count () {
    fm_state | jq -r --arg k "$1" '.counters.requests[$k] // 0'
}

# ---- eligibility -----------------------------------------------------------------
gets0=$(fm_count 'GET /fabric/collectives/jobs/{jobID}')
posts0=$(fm_count 'POST /fabric/collectives/jobs/')
reserve big 'n[1-3]'
expect_status "a 3-node job is reserved" 201
expect_eq "a new reservation costs the FM one POST ..." \
    "$(($(fm_count 'POST /fabric/collectives/jobs/') - posts0))" 1
expect_eq "... and no GET first (its FM job id is new)" \
    "$(($(fm_count 'GET /fabric/collectives/jobs/{jobID}') - gets0))" 0
expect_json "auto with min_nodes 3: hwcoll reserved" .hwcoll.state reserved
expect_json "the FM job id is <cluster>-<job>-r<reservation id>" .hwcoll.fm_job_id "tux-big-r$(jq -r .id "$T/http.body")"
FMID_BIG=$(jq -r .hwcoll.fm_job_id "$T/http.body")
expect_json "addrs_per_job from (M / (S / s)) / j" .hwcoll.addrs_per_job 23
expect_json "the multicast URL libfabric needs" .hwcoll.fabric_manager_url "$FM_URL/fabric/collectives/multicasts"
expect_match "the scheduler sees the session token" "$(jq -r .hwcoll.session_token "$T/http.body")" '^.{8,}$'
TOKEN_BIG=$(jq -r .hwcoll.session_token "$T/http.body")
expect_json "the environment carries the job id" .environment.FI_CXI_COLL_JOB_ID "$FMID_BIG"
expect_json "... the token" .environment.FI_CXI_COLL_MCAST_TOKEN "$TOKEN_BIG"
expect_json "... the URL" .environment.FI_CXI_COLL_FABRIC_MGR_URL "$FM_URL/fabric/collectives/multicasts"
expect_json "... addrs per job" .environment.FI_CXI_HWCOLL_ADDRS_PER_JOB 23
expect_json "... min nodes" .environment.FI_CXI_HWCOLL_MIN_NODES 3
expect_json "... and the VNIs" .environment.SLINGSHOT_VNIS "$(jq -r '.vnis | join(",")' "$T/http.body")"
expect_eq "fmsim holds the reservation with mcastLimit 23" \
    "$(fm_state | jq -r --arg id "$FMID_BIG" '.jobs[] | select(.jobID == $id) | .mcastLimit')" 23
expect_eq "... and the same session token" \
    "$(fm_state | jq -r --arg id "$FMID_BIG" '.jobs[] | select(.jobID == $id) | .sessionToken')" "$TOKEN_BIG"

reserve small 'n[1-2]'
expect_json "a 2-node job is not eligible" .hwcoll.state not_eligible
expect_match "... with the reason" "$(jq -r .hwcoll.reason "$T/http.body")" 'min_nodes'
expect_json "... and no hwcoll variables" '.environment | has("FI_CXI_COLL_JOB_ID")' false
reserve small-on 'n[1-2]' on
expect_json "a 2-node job that asks on gets one" .hwcoll.state reserved
reserve big-off 'n[1-3]' off
expect_json "a 3-node job that asks off gets none" .hwcoll.state not_eligible
reserve bad 'n1' maybe
expect_json "hwcoll must be auto, on or off" .error.code invalid_field
expect_eq "fmsim holds exactly the two reservations" "$(fm_jobs)" "tux-big,tux-small-on"

# ---- who sees the token ------------------------------------------------------------
TOKEN=$ADMIN_TOKEN http GET /v1/reservations/big
expect_json "an admin sees it" .hwcoll.session_token "$TOKEN_BIG"
TOKEN=$(node_token n2) http GET /v1/reservations/big
expect_json "a node of the job sees it" .environment.FI_CXI_COLL_MCAST_TOKEN "$TOKEN_BIG"
TOKEN=$MONITOR_TOKEN http GET /v1/reservations/big
expect_json "a monitor does not" '.hwcoll | has("session_token")' false
expect_json "... not in the environment either" '.environment | has("FI_CXI_COLL_MCAST_TOKEN")' false
expect_json "... though it sees the state" .hwcoll.state reserved
TOKEN=$(node_token n9) http GET /v1/reservations/big
expect_status "a node outside the job gets nothing" 403
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?state=active'
expect_no_match "listings never carry tokens" "$HTTP_BODY" "$TOKEN_BIG"
expect_no_match "... nor the sealed form" "$HTTP_BODY" '_sealed_token'

# ---- at rest and in logs ------------------------------------------------------------
dump=$(as_pg_user "$PG_BIN/pg_dump" -h "$PGSOCK" -U vnib vnibroker)
expect_no_match "the token is not in a database dump in clear text" "$dump" "$TOKEN_BIG"
expect_match "... it is stored sealed" "$(psql_q "SELECT length(session_token) FROM reservations WHERE job_id = 'big'")" '^[0-9]+$'
expect_no_match "the token is not in the broker's log" "$(cat "$BROKER_LOG")" "$TOKEN_BIG"
expect_no_match "the FM client secret is not in the log" "$(cat "$BROKER_LOG")" "$(cat "$T/fm.secret")"

# ---- release --------------------------------------------------------------------------
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/big
expect_json "release: hwcoll releasing or released" .hwcoll.state 'releasing'
wait_for 10 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID | test(\"^tux-big-r[0-9]+$\"))] | length')\" = 0 ]"
expect_eq "the FM reservation is deleted" "$(fm_jobs)" "tux-small-on"
TOKEN=$ADMIN_TOKEN http GET /v1/reservations/big
expect_json "hwcoll released once the FM confirmed" .hwcoll.state released
expect_json "... and the token is gone" '.hwcoll | has("session_token")' false

# ---- FM down ----------------------------------------------------------------------------
fm_fault '{"outage":"refuse"}'
reserve down 'n[1-3]'
expect_status "with the FM down the VNIs are reserved anyway" 201
expect_json "... hwcoll unavailable" .hwcoll.state unavailable
expect_json "... saying why" .hwcoll.reason 'Fabric Manager unreachable (connection refused)'
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "/v1/fabric-manager reports the connection down" .connection down
expect_json "... with the last error's reason" .last_error.message 'Fabric Manager unreachable (connection refused)'
expect_no_match "... and no secret" "$HTTP_BODY" "$(cat "$T/fm.secret")"
fm_fault '{"outage":"none"}'

# ---- FM slow past the timeout ------------------------------------------------------------
fm_fault '{"latency_ms":2500}'
start=$(date +%s%N)
reserve slow 'n[1-3]'
ms=$((($(date +%s%N) - start) / 1000000))
expect_status "a slow FM does not fail the reservation" 201
expect_json "... hwcoll unavailable" .hwcoll.state unavailable
expect_json "... timed out, after reserve_timeout_ms" .hwcoll.reason 'Fabric Manager timed out after 1000 ms'
if [ "$ms" -lt 2400 ]; then ok "the reply came after reserve_timeout_ms, not the FM ($ms ms)"; else not_ok "the reply waited for the FM ($ms ms)"; fi
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/slow
fm_fault '{"latency_ms":0}'
# The FM may complete the slow call after the broker gave up (fmsim
# releases it now): the leader looks again until that call cannot land
# any more (twice hwcoll.request_timeout_ms), deletes a late reservation
# of a released job, and records the final outcome; only then is the FM
# state worth checking.
slow_settled () {
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "$BROKER_URL/v1/reservations/slow" |
        jq -e '.hwcoll.reason | startswith("timeout;")' >/dev/null
}
wait_for 40 slow_settled
TOKEN=$ADMIN_TOKEN http GET /v1/reservations/slow
expect_match "the timed-out reserve gets a final outcome" "$(jq -r .hwcoll.reason "$T/http.body")" \
    '^timeout; the (late Fabric Manager reservation was deleted|Fabric Manager made no reservation)$'
expect_eq "no orphan is left in the FM" "$(fm_state | jq '[.jobs[] | select(.jobID | test("^tux-slow-r[0-9]+$"))] | length')" 0

TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "/v1/fabric-manager: configured" .configured true
expect_json "... auth" .auth oauth
expect_json "... up again" .connection up
expect_match "... counts by hwcoll state" "$(jq -c .reservations "$T/http.body")" '"reserved":[0-9]'
broker_stop
finish
