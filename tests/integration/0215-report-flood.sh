#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Node reports do not flood the audit trail: an identical repeat records
# no event (a change does), and each node's reports are rate-limited
# (server.report_rate, server.report_burst): past the limit 429
# rate_limited with Retry-After, and nothing is recorded.  Other nodes and
# a job's start and end are unaffected.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" 'report_rate = 2
report_burst = 10'

TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"f1","uid":1001,"user":"alice","nodes":"n[1-4]"}'
expect_status "a job" 201

report () { # NODE STATE [EXTRA-JSON]
    TOKEN=$(node_token "$1") http PUT "/v1/reservations/f1/nodes/$1" \
        -d "{\"cxi\":\"$2\"${3:+,$3}}"
}
reports () { psql_q "SELECT count(*) FROM events WHERE action = 'report' AND node = '$1'"; }
events () { psql_q "SELECT count(*) FROM events"; }

# ---- events only on a change ----------------------------------------------------
report n1 creating
expect_status "n1 reports creating" 200
report n1 creating
report n1 creating
expect_status "... and again, identically" 200
expect_eq "identical repeats make one event" "$(reports n1)" 1
report n1 created '"services":[{"device":"cxi0","svc_id":11}]'
expect_status "created with a service" 200
expect_eq "a change makes another" "$(reports n1)" 2
report n1 created '"services":[{"device":"cxi0","svc_id":11}]'
expect_eq "... its repeat none" "$(reports n1)" 2
report n1 created '"services":[{"device":"cxi0","svc_id":11}],"message":"re-run prolog"'
expect_eq "a new message is a change" "$(reports n1)" 3
report n1 created '"services":[{"device":"cxi0","svc_id":12}],"message":"re-run prolog"'
expect_eq "... and so are other services" "$(reports n1)" 4
expect_eq "the stored report is the last one" \
    "$(psql_q "SELECT services->0->>'svc_id' FROM node_reports WHERE node = 'n1'")" 12

# ---- the rate limit ----------------------------------------------------------------
# n2 has its burst of 10: a flood of 40 identical reports; then n4, whose
# bucket is as full as n2's was, gets 40 with a new message each, as fast
# as curl goes.
flood () { # NODE N MESSAGE-PREFIX: status codes, counted
    tok=$(node_token "$1")
    for i in $(seq 1 "$2"); do
        curl -sS -o /dev/null -w '%{http_code}\n' --max-time 10 -X PUT \
            -H "Authorization: Bearer $tok" -H "Content-Type: application/json" \
            -d "{\"cxi\":\"creating\"${3:+,\"message\":\"$3 $i\"}}" \
            "$BROKER_URL/v1/reservations/f1/nodes/$1"
    done | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'
}
before=$(events)
codes=$(flood n2 40 "")
expect_match "a flood of identical reports is limited ($codes)" "$codes" '429:[0-9]+'
expect_eq "... and makes one event" "$(events)" "$((before + 1))"
before=$(events)
codes=$(flood n4 40 "changing")
accepted=$(printf '%s\n' "$codes" | sed -n 's/.*200:\([0-9]*\).*/\1/p')
limited=$(printf '%s\n' "$codes" | sed -n 's/.*429:\([0-9]*\).*/\1/p')
if [ "${accepted:-0}" -ge 10 ] && [ "${accepted:-0}" -le 16 ]; then
    ok "a flood of changing reports: the burst and the refill pass ($codes)"
else
    not_ok "a flood of changing reports: the burst and the refill pass ($codes)"
fi
expect_eq "... the rest are refused" "$((accepted + limited))" 40
expect_eq "... and only the accepted ones make events" "$(events)" "$((before + accepted))"
# The bucket refills at 2/s while the counts above are read: ask until
# the empty bucket answers (a back-to-back request finds it empty).
for _ in 1 2 3 4 5 6 7 8 9 10; do
    report n4 created
    [ "$HTTP_STATUS" = 429 ] && break
done
expect_status "a limited node gets 429" 429
expect_json "... code rate_limited" .error.code rate_limited
expect_match "... with Retry-After" "$(header Retry-After)" '^[1-9][0-9]*$'
expect_match "... and a request id" "$(jq -r .error.request_id "$T/http.body")" '^[0-9a-f]+$'

# ---- other nodes, and a job's start and end ---------------------------------------
report n3 creating
expect_status "another node is not limited" 200
report n3 created
expect_status "... nor its job start" 200
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/f1
report n3 destroyed
expect_status "... nor its job end" 200
refilled () { report n4 destroyed; [ "$HTTP_STATUS" = 200 ]; }
wait_for 5 refilled
expect_status "n4 reports again once its bucket refilled" 200
broker_stop
finish
