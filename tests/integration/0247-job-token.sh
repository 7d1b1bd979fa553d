#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job tokens (include/vnib/token.h): the credential of Slurm's step manager
# (enable_stepmgr), which reserves and releases a job's steps from the
# job's batch host without the scheduler's token.  The scheduler's reserve
# returns "job_token", "vnibjob.<id>.<job_id>.<mac>" (the MAC recomputed
# here with openssl), the same on a repeat; the token reserves, reads and
# releases its job's steps (the audit trail says "job:<job_id>"), and
# nothing else: another job's steps, every other route, force, and a
# token of an earlier reservation of the same job id (released, or
# reserved again: a requeue) are 403; a changed MAC is 401.  The database
# function behind a step's release checks the reservation under the job's
# lock too.  A broker without a node key hands out no token and accepts
# none.  The token is in no log line, event, GET, list or status reply.
. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || skip_all "jq is not installed"
pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 2000-2063)"
LOG_A=$BROKER_LOG

# job_token RESV JOB: the job token of reservation RESV of JOB under
# $T/node.key (HMAC-SHA256 of "vnib-job:RESV:JOB", base64url), by openssl.
job_token () {
    hexkey=$(od -An -v -tx1 "$T/node.key" | tr -d ' \n')
    mac=$(printf 'vnib-job:%s:%s' "$1" "$2" |
        openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" -binary |
        base64 | tr '+/' '-_' | tr -d '=\n')
    printf 'vnibjob.%s.%s.%s' "$1" "$2" "$mac"
}

# check WHO TOKEN METHOD PATH WANT [BODY]: the status of one call.
check () {
    if [ -n "${6:-}" ]; then
        TOKEN=$2 http "$3" "$4" -d "$6"
    else
        TOKEN=$2 http "$3" "$4"
    fi
    case "$HTTP_STATUS" in
        $5) ok "$3 $4 as $1: $HTTP_STATUS" ;;
        *)  not_ok "$3 $4 as $1: got $HTTP_STATUS, want $5"
            echo "#   $(head -c 300 "$T/http.body")" ;;
    esac
}

# A job id with dots and a dash, as token fields are split on dots.
JOB=77.x-1
RESERVE="{\"job_id\":\"$JOB\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-4]\",\"vni_count\":1}"
STEP='{"nodes":"n[1-2]","vni_count":1}'
SPATH=/v1/reservations/$JOB/steps

# ---- the token in the reserve's reply ----------------------------------------
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "$RESERVE"
expect_status "the scheduler reserves $JOB" 201
R1=$(jq -r .id "$T/http.body")
JT1=$(jq -r .job_token "$T/http.body")
expect_eq "the reply's job_token is vnibjob.<id>.<job_id>.<HMAC of vnib-job:<id>:<job_id>>" \
    "$JT1" "$(job_token "$R1" "$JOB")"
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "$RESERVE"
expect_status "the same reserve again: 200" 200
expect_json "... with the same job_token" .job_token "$JT1"
TOKEN=$ADMIN_TOKEN http POST /v1/reservations \
    -d '{"job_id":"other","uid":1002,"user":"bob","nodes":"n[5-6]"}'
expect_status "an admin reserves job other" 201
R_OTHER=$(jq -r .id "$T/http.body")
expect_json "... and gets its job_token too" .job_token "$(job_token "$R_OTHER" other)"
JT_OTHER=$(jq -r .job_token "$T/http.body")
check scheduler "$SCHED_TOKEN" PUT /v1/reservations/other/steps/0 201 '{"nodes":"n5"}'

# ---- what the token may do: its own job's steps -------------------------------
check job "$JT1" PUT "$SPATH/0" 201 "$STEP"
expect_json "the step reservation is of the job's" .job_id "$JOB"
expect_json "... has its own VNI" '.vnis | length' 1
expect_json "... recorded as made by job:$JOB" .created_by "job:$JOB"
STEP0=$(jq -r .id "$T/http.body")
check job "$JT1" PUT "$SPATH/0" 200 "$STEP"
expect_json "the same step reserve again: the same reservation" .id "$STEP0"
check job "$JT1" GET "$SPATH/0" 200
expect_json "the job token reads the step" .step_id 0
check job "$JT1" PUT "$SPATH/1" 201 '{"nodes":"n3"}'
check job "$JT1" DELETE "$SPATH/0" 202
expect_json "the job token releases the step" .reservation.state released
check job "$JT1" DELETE "$SPATH/0?force=true" 403
expect_json "force is the admin's: forbidden" .error.code forbidden
check job "$JT1" DELETE "$SPATH/1" 202
TOKEN=$ADMIN_TOKEN http GET "/v1/events?job_id=$JOB"
expect_eq "the audit trail names job:$JOB for the steps' reserves and releases" \
    "$(jq -r '[.events[] | select(.actor == "job:'"$JOB"'") | .action] | sort | join(",")' "$T/http.body")" \
    "release,release,reserve,reserve"

# ---- and nothing else ---------------------------------------------------------
check job-other-job "$JT1" PUT /v1/reservations/other/steps/1 403 '{"nodes":"n5"}'
expect_json "another job's steps: forbidden" .error.code forbidden
expect_match "... saying whose token it is" "$(jq -r .error.message "$T/http.body")" \
    "job token of job $JOB may not use job other's steps"
check job-other-job "$JT1" GET /v1/reservations/other/steps/0 403
check job-other-job "$JT1" DELETE /v1/reservations/other/steps/0 403
check job-other-job "$JT_OTHER" PUT "$SPATH/2" 403 "$STEP"
TOKEN=$SCHED_TOKEN http GET /v1/reservations/other/steps/0
expect_json "other's step is still active" .state active
for route in \
    "POST /v1/reservations" \
    "GET /v1/reservations" \
    "GET /v1/reservations/$JOB" \
    "DELETE /v1/reservations/$JOB" \
    "PUT /v1/reservations/$JOB/nodes/n1" \
    "PUT /v1/reservations/$JOB/steps/0/nodes/n1" \
    "GET /v1/nodes/n1" \
    "DELETE /v1/nodes/n1/drain" \
    "GET /v1/pool" \
    "GET /v1/vnis/2000" \
    "GET /v1/events" \
    "GET /v1/fabric-manager" \
    "GET /v1/status"; do
    set -- $route
    case $1 in
        POST) body=$RESERVE ;;
        PUT) body='{"cxi":"creating"}' ;;
        *) body="" ;;
    esac
    check job "$JT1" "$1" "$2" 403 "$body"
done
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$JOB"
expect_json "the job is still active (the token's DELETE did nothing)" .state active
expect_match "the log names a refused job token by its job, never the token" \
    "$(grep "refused 403 DELETE /v1/reservations/{job_id} " "$LOG_A")" \
    "token 'job:$JOB' \\(job\\)"

# ---- forged and damaged tokens: 401 -------------------------------------------
flip () {
    last=${1: -1}
    if [ "$last" = A ]; then printf '%sB' "${1%?}"; else printf '%sA' "${1%?}"; fi
}
check job-flipped-mac "$(flip "$JT1")" GET "$SPATH/0" 401
expect_json "a flipped MAC character: unauthorized" .error.code unauthorized
check job-short-mac "${JT1%?}" GET "$SPATH/0" 401
check job-other-id "vnibjob.$R1.other.${JT1##*.}" GET /v1/reservations/other/steps/0 401
check job-other-resv "vnibjob.$R_OTHER.$JOB.${JT1##*.}" GET "$SPATH/0" 401
check job-leading-zero "vnibjob.0$R1.$JOB.${JT1##*.}" GET "$SPATH/0" 401

# ---- a requeue: the old token dies with its reservation -----------------------
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$JOB"
expect_status "the scheduler releases $JOB (no node held anything)" 200
check old-token-released "$JT1" PUT "$SPATH/3" 403 "$STEP"
expect_match "... refused as a reservation that is not the job's active one" \
    "$(jq -r .error.message "$T/http.body")" "reservation $R1 of job $JOB, which is not the job's active"
check old-token-released "$JT1" GET "$SPATH/0" 403
check old-token-released "$JT1" DELETE "$SPATH/0" 403
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "$RESERVE"
expect_status "$JOB reserved again under the same id (a requeue)" 201
R2=$(jq -r .id "$T/http.body")
V2=$(jq -r '.vnis | tostring' "$T/http.body")
JT2=$(jq -r .job_token "$T/http.body")
expect_eq "... a new reservation with a new token" \
    "$([ "$R2" != "$R1" ] && [ "$JT2" != "$JT1" ] && echo new)" new
expect_eq "... the token of the new reservation" "$JT2" "$(job_token "$R2" "$JOB")"
check old-token-requeued "$JT1" PUT "$SPATH/0" 403 "$STEP"
check old-token-requeued "$JT1" GET "$SPATH/0" 403
check old-token-requeued "$JT1" DELETE "$SPATH/0" 403
check new-token "$JT2" PUT "$SPATH/0" 201 "$STEP"
expect_json "the new token's step is under the new reservation" \
    '.job_vnis | tostring' "$V2"
check old-token-requeued "$JT1" DELETE "$SPATH/0" 403
TOKEN=$SCHED_TOKEN http GET "$SPATH/0"
expect_json "the old token's DELETE left the new step active" .state active
check new-token "$JT2" GET "$SPATH/0" 200
# The release's own check, in the database under the job's lock: a
# release naming the old reservation does nothing.
expect_eq "vnib_step_free with the old reservation: not_current, nothing done" \
    "$(psql_q "SELECT outcome FROM vnib_step_free('$JOB', '0', 'test', false, $R1)")" \
    not_current
check new-token "$JT2" DELETE "$SPATH/0" 202
expect_json "the new token releases its step" .reservation.state released

# A job quarantined (a node holds services) is not active: its token is refused.
N1=$(node_token n1)
check node-n1 "$N1" PUT "/v1/reservations/$JOB/nodes/n1" 200 '{"cxi":"created"}'
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$JOB"
expect_status "the scheduler releases $JOB, quarantined for n1" 202
check quarantined-job "$JT2" PUT "$SPATH/4" 403 "$STEP"

# ---- the token's secrecy --------------------------------------------------------
secrets=$(printf '%s|%s|%s|%s|%s' "$JT1" "$JT2" "$JT_OTHER" "${JT1##*.}" "${JT2##*.}" |
    sed 's/\./\\./g')
# no_token_in WHO TOKEN PATH: a 200 reply to GET PATH without a job token.
no_token_in () {
    TOKEN=$2 http GET "$3"
    expect_status "GET $3 as $1" 200
    expect_no_match "... has no job token" "$HTTP_BODY" 'job_token|vnibjob'
}
no_token_in scheduler "$SCHED_TOKEN" "/v1/reservations/$JOB"
no_token_in admin "$ADMIN_TOKEN" "/v1/reservations/$JOB"
no_token_in node "$N1" "/v1/reservations/$JOB"
no_token_in scheduler "$SCHED_TOKEN" "$SPATH/0"
no_token_in admin "$ADMIN_TOKEN" "/v1/reservations?limit=1000"
no_token_in admin "$ADMIN_TOKEN" /v1/nodes/n1
no_token_in admin "$ADMIN_TOKEN" /v1/status
no_token_in admin "$ADMIN_TOKEN" "/v1/events?limit=1000"
expect_eq "the database holds no job token (events, reservations)" \
    "$(psql_q "SELECT (SELECT count(*) FROM events WHERE detail::text ~ 'vnibjob'
                                               OR actor ~ 'vnibjob')
                    + (SELECT count(*) FROM reservations r
                        WHERE row_to_json(r)::text ~ 'vnibjob')")" 0

# ---- a broker without a node key ------------------------------------------------
sed "s|node_key_file = .*|node_key_file = \"\"|" "$T/b.toml" >"$T/nokey.toml"
broker_start "$T/nokey.toml" || { not_ok "a broker without a node key starts"; finish; }
LOG_B=$BROKER_LOG
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"nokey","uid":1001,"user":"alice","nodes":"n[1-2]"}'
expect_status "without a node key, the scheduler reserves" 201
expect_json "... and the reply has no job_token" 'has("job_token")' false
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "{\"job_id\":\"$JOB-b\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\"}"
expect_json "... nor on another job's" 'has("job_token")' false
check job-without-key "$JT2" GET "$SPATH/0" 401
expect_json "a job token is refused when no node key is configured" .error.message \
    "job tokens are not enabled on this broker"

expect_no_match "no job token reaches either broker's log" \
    "$(cat "$LOG_A" "$LOG_B")" "$secrets"
expect_no_match "... nor the word vnibjob" "$(cat "$LOG_A" "$LOG_B")" 'vnibjob'
expect_match "the logs are the debug logs of every request (the check had teeth)" \
    "$(grep -c 'PUT /v1/reservations/'"$JOB"'/steps/0 20[01]' "$LOG_A")" '^[1-9]'
finish
