#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Reserving VNIs: allocation order (a fresh pool ascending, then least
# recently released first), vni_count, idempotent retries
# and conflicts (0249 has the rule in full), requeued jobs, pool exhaustion, and refusal of bad input.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 2000-2004)"
TOKEN=$SCHED_TOKEN

# reserve JOB [VNI_COUNT] [NODES]
reserve () {
    body="{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"${3:-tux[0-3]}\""
    [ -n "${2:-}" ] && body="$body,\"vni_count\":$2"
    http POST /v1/reservations -H 'Content-Type: application/json' -d "$body}"
}

# ---- allocation order ----------------------------------------------------------
reserve j1
expect_status "first reservation is 201" 201
expect_json "it takes the first VNI of the pool" '.vnis | join(",")' 2000
expect_json "state is active" .state active
expect_json "nodes come back compressed" .nodes 'tux[0-3]'
expect_json "node_count" .node_count 4
expect_json "default traffic classes" '.traffic_classes | join(",")' LOW_LATENCY,BEST_EFFORT
expect_json "tcs_mask in SLINGSHOT_TCS form" .tcs_mask 0xa
expect_json "actor recorded" .created_by slurmctld
expect_json "cleanup counts start pending" '.cleanup.pending' 4
reserve j2
expect_json "the next job takes the next VNI" '.vnis | join(",")' 2001
reserve j3 2
expect_json "two VNIs come in allocation order" '.vnis | join(",")' 2002,2003

TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j1
expect_status "releasing a job no node reported for ends at once (200)" 200
expect_json "... state released" .state released
reserve j4
expect_json "a released VNI is reused as late as possible: 2004 before 2000" '.vnis | join(",")' 2004
reserve j5
expect_json "then the cursor wraps to the freed 2000" '.vnis | join(",")' 2000

# ---- exhaustion ----------------------------------------------------------------
reserve j6
expect_status "an exhausted pool is 503" 503
expect_json "code vni_pool_exhausted" .error.code vni_pool_exhausted
expect_match "the message says how many were asked for and how many are free" \
    "$(jq -r .error.message "$T/http.body")" '1 VNIs requested, 0 free'
expect_match "503 carries Retry-After" "$(header Retry-After)" '^[0-9]+$'
http GET /v1/reservations/j6
expect_status "a refused reservation leaves nothing behind" 404

# ---- vni_count -----------------------------------------------------------------
reserve j7 0
expect_status "vni_count 0 is accepted" 201
expect_json "... with no VNI" '.vnis | length' 0
expect_json "... and says why" .empty_reason 'vni_count is 0: no VNI requested'
for bad in 5 -1 '"x"' 1.5 null true; do
    reserve jbad "$bad"
    expect_status "vni_count $bad is refused with 400" 400
    expect_json "... code invalid_field" .error.code invalid_field
done
expect_match "the message names the field" "$(jq -r .error.message "$T/http.body")" 'vni_count'

# ---- idempotency and conflicts ---------------------------------------------------
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j2
reserve j8 1 'n[1-2],n3'
expect_status "reserve j8" 201
first=$(jq -c .vnis "$T/http.body")
reserve j8 1 'n[1-3]'
expect_status "a retry with the same parameters (same node set) is 200" 200
expect_eq "... and returns the same VNIs" "$(jq -c .vnis "$T/http.body")" "$first"
reserve j8 1 'n[1-4]'
expect_status "the same job with other nodes is 409" 409
expect_json "... reservation_conflict" .error.code reservation_conflict
reserve j8 2 'n[1-3]'
expect_status "the same job with another vni_count is its reservation (200)" 200
expect_eq "... as it is, differs naming vni_count" \
    "$(jq -c '[.vnis, .vni_count, .differs]' "$T/http.body")" "[$first,1,[\"vni_count\"]]"

# A requeued job: released, then reserved again under the same id.
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j8
reserve j8 1 'n[1-3]'
expect_status "a job id whose reservation was released gets a new one (201)" 201
newid=$(jq .id "$T/http.body")
expect_eq "... as a new reservation with its own allocation" \
    "$([ "$newid" -gt 0 ] && [ "$(jq '.vnis | length' "$T/http.body")" = 1 ] && echo new)" new
http GET /v1/reservations/j8
expect_json "GET returns the newest" .id "$newid"
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?state=released'
expect_match "the older one stays in listings" "$(jq -r '[.reservations[].job_id] | join(",")' "$T/http.body")" 'j8'

# ---- bad input -------------------------------------------------------------------
http POST /v1/reservations -d '{"job_id":'
expect_status "malformed JSON is 400" 400
expect_json "... invalid_json" .error.code invalid_json
http POST /v1/reservations -d '[1,2]'
expect_json "a JSON array is not an object" .error.code invalid_json
http POST /v1/reservations -d '{"job_id":"a","uid":1,"user":"u","nodes":"n1","colour":"red"}'
expect_status "unknown fields are 400" 400
expect_json "... unknown_field" .error.code unknown_field
expect_match "... naming it" "$(jq -r .error.message "$T/http.body")" colour
http POST /v1/reservations -d '{"job_id":"a","job_id":"b","uid":1,"user":"u","nodes":"n1"}'
expect_json "duplicate keys are refused" .error.code invalid_json
http POST /v1/reservations -d '{"job_id":"a","uid":"1","user":"u","nodes":"n1"}'
expect_json "uid as a string is refused" .error.code invalid_field
http POST /v1/reservations -d '{"job_id":"a","uid":-5,"user":"u","nodes":"n1"}'
expect_json "a negative uid is refused" .error.code invalid_field
http POST /v1/reservations -d '{"job_id":"a","uid":1,"user":"u"}'
expect_json "missing nodes is refused" .error.code invalid_field
http POST /v1/reservations -d '{"job_id":"a b","uid":1,"user":"u","nodes":"n1"}'
expect_json "a job id with a space is refused" .error.code invalid_field
long=$(head -c 129 /dev/zero | tr '\0' 7)
http POST /v1/reservations -d "{\"job_id\":\"$long\",\"uid\":1,\"user\":\"u\",\"nodes\":\"n1\"}"
expect_json "a 129-character job id is refused" .error.code invalid_field
http POST /v1/reservations -d '{"job_id":"a","uid":1,"user":"u","nodes":"n[0-99999999999]"}'
expect_status "a hostlist that expands past the bound is 400" 400
expect_match "... saying so" "$(jq -r .error.message "$T/http.body")" 'more than 1000000 names'
http POST /v1/reservations -d '{"job_id":"a","uid":1,"user":"u","nodes":"n[1-"}'
expect_match "a malformed hostlist is 400 with the offset" "$(jq -r .error.message "$T/http.body")" 'nodes: hostlist: .*offset'
printf '{"job_id":"a","uid":1,"user":"u","nodes":"%s"}' "$(head -c 2000000 /dev/zero | tr '\0' n)" >"$T/huge.json"
http POST /v1/reservations --data-binary @"$T/huge.json"
expect_status "a 2 MB body is 413" 413

# Path injection: job ids in paths obey the same rule.
http GET "/v1/reservations/..%2F..%2Fetc"
expect_match "an encoded slash in a job id is refused" "$HTTP_STATUS" '^(400|404)$'
http GET "/v1/reservations/j1%27%3B%20DROP%20TABLE%20reservations%3B--"
expect_status "SQL in a job id is just an invalid job id" 400
http GET "/v1/reservations/j1"
expect_status "... and the table is still there" 200
http GET "/v1/reservations/nosuchjob"
expect_status "an unknown job is 404" 404
expect_json "... reservation_not_found" .error.code reservation_not_found

# Persisted: everything above survives a broker restart.
broker_stop
broker_start "$T/b.toml"
TOKEN=$SCHED_TOKEN http GET /v1/reservations/j5
expect_json "reservations survive a restart" '.vnis | join(",")' 2000
finish
