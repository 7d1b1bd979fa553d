#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fmsim, the Fabric Manager simulator the broker's FM tests run against:
# every collectives endpoint and status, the three WLM auth modes, the 507
# sub-codes, the state file across a restart, TLS, each injected fault
# through the admin API and at start, and the refusals at start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

# fmsim_start ARGS...: fm_start_as, and FM_URL also as BROKER_URL, for
# lib.sh's http.
fmsim_start () {
    fm_start_as "$@" || return 1
    BROKER_URL=$FM_URL
}

# admin METHOD PATH [CURL-ARGS...]: ADMIN_STATUS, body in $T/admin.body.
admin () {
    m=$1
    p=$2
    shift 2
    ADMIN_STATUS=$(curl -sS -o "$T/admin.body" -w '%{http_code}' -X "$m" \
        --max-time 10 "$@" "$FM_ADMIN$p" 2>"$T/admin.err") ||
        ADMIN_STATUS="curl-failed:$(cat "$T/admin.err")"
}

# faults JSON: POST /fmsim/faults.
faults () {
    admin POST /fmsim/faults -H 'Content-Type: application/json' -d "$1"
}

# state FILTER: jq over GET /fmsim/state.
state () {
    curl -sS --max-time 10 "$FM_ADMIN/fmsim/state" | jq -r "$1"
}

# arrived N: wait until fmsim has counted N main-port requests (counted on
# arrival, before any injected latency).
arrived_n () { [ "$(state .counters.total)" -ge "$1" ]; }
arrived () {
    wait_for 10 arrived_n "$1" || echo "# fmsim counted $(state .counters.total) requests, not $1"
}

# create_job ID LIMIT: POST a job; sets JOB_TOKEN.
create_job () {
    http POST /fabric/collectives/jobs -H 'Content-Type: application/json' \
        -d "{\"jobID\":\"$1\",\"mcastLimit\":$2}"
    JOB_TOKEN=$(jq -r .sessionToken "$T/http.body" 2>/dev/null)
}

# mcast TOKEN BODY: POST /fabric/collectives/multicasts as libfabric does.
mcast () {
    tok=$1
    shift
    TOKEN=$tok http POST /fabric/collectives/multicasts \
        -H 'Content-Type: application/json' -H 'Expect:' -d "$1"
}

# elapsed_ms COMMAND...: run it (in a subshell), echo the milliseconds taken.
elapsed_ms () {
    s=$(date +%s%N)
    "$@" >/dev/null 2>&1
    echo $((($(date +%s%N) - s) / 1000000))
}


# ---- refusals at start ----------------------------------------------------------
"$FMSIM" --admin-listen 10.1.2.3:0 >/dev/null 2>"$T/refuse.err"
expect_eq "a non-loopback admin address is refused (exit 2)" "$?" 2
expect_match "... saying why" "$(cat "$T/refuse.err")" 'loopback'
"$FMSIM" --listen localhost:0 >/dev/null 2>&1
expect_eq "a listen address that is not an IPv4 literal is refused" "$?" 2
"$FMSIM" --auth basic >/dev/null 2>&1
expect_eq "--auth basic without --password-file is refused" "$?" 2
"$FMSIM" --auth oauth --client-id x >/dev/null 2>&1
expect_eq "--auth oauth without a secret file is refused" "$?" 2
"$FMSIM" --total-addrs 9000 >/dev/null 2>&1
expect_eq "--total-addrs above 8192 is refused" "$?" 2
"$FMSIM" --error-rate 1.5 >/dev/null 2>&1
expect_eq "--error-rate above 1 is refused" "$?" 2
printf 'secret\n' >"$T/open.pw"
chmod 644 "$T/open.pw"
out=$(timeout 10 "$FMSIM" --auth basic --password-file "$T/open.pw" 2>&1)
expect_eq "a world-readable password file stops the start (exit 1)" "$?" 1
expect_match "... naming the file and the mode" "$out" 'open.pw: mode 0644 is unsafe'
echo '{"version":1,"jobs":[],"trees":[]}' >"$T/open.state"
chmod 644 "$T/open.state"
out=$(timeout 10 "$FMSIM" --state "$T/open.state" 2>&1)
expect_eq "a world-readable state file stops the start (exit 1)" "$?" 1
echo '{"jobs": nope' >"$T/bad.state"
chmod 600 "$T/bad.state"
out=$(timeout 10 "$FMSIM" --state "$T/bad.state" 2>&1)
expect_eq "a state file that is not JSON stops the start" "$?" 1
expect_match "... with the file and line" "$out" 'bad.state: line 1'

# ---- start, jobs ------------------------------------------------------------------
fmsim_start --state "$T/fm.json" || { not_ok "fmsim starts"; finish; }
expect_match "the start line gives both URLs" "$FM_LINE" \
    '^fmsim listening on http://127\.0\.0\.1:[0-9]+ admin http://127\.0\.0\.1:[0-9]+$'
expect_eq "the start line is the only stdout" "$(wc -l <"$FM_OUT")" 1

http GET /fabric/collectives/jobs/
expect_status "GET jobs/ is 200" 200
expect_json "... with no documentLinks yet" '.documentLinks | length' 0
http GET /fabric/collectives/jobs/c-1
expect_status "GET of an unknown job is 404" 404
expect_json "... with a message" '.message | length > 0' true
expect_json "... and a detail" '.detail | length > 0' true

http POST /fabric/collectives/jobs -d '{"jobID":"c-1","mcastLimit":2,"extra":[1]}'
expect_status "POST a job is 201 (unknown fields ignored)" 201
expect_json "... the job id" .jobID c-1
expect_json "... the limit" .mcastLimit 2
expect_json "... no steps yet" '.jobSteps | length' 0
expect_json "... its link" .documentSelfLink /fabric/collectives/jobs/c-1
TOK1=$(jq -r .sessionToken "$T/http.body")
expect_match "... a session token" "$TOK1" '^.{32,}$'
expect_match "... as JSON" "$(header Content-Type)" '^application/json'

http GET /fabric/collectives/jobs/c-1
expect_status "GET the job is 200" 200
expect_json "... with the same session token" .sessionToken "$TOK1"
http POST /fabric/collectives/jobs -d '{"jobID":"c-1","mcastLimit":2}'
expect_status "POST of an existing job is 409" 409
expect_json "... with a detail" '.detail | test("exists")' true

create_job c-2 5
TOK2=$JOB_TOKEN
expect_status "a second job" 201
expect_eq "... with its own token" "$([ "$TOK1" != "$TOK2" ] && echo differs)" differs
http GET /fabric/collectives/jobs
expect_status "GET jobs without the slash is 200 too" 200
expect_json "... both links" '.documentLinks | sort | join(",")' \
    /fabric/collectives/jobs/c-1,/fabric/collectives/jobs/c-2

for body in '{"jobID":"x"}' '{"mcastLimit":1}' '{"jobID":"x","mcastLimit":"2"}' \
    '{"jobID":"x","mcastLimit":0}' '{"jobID":"x","mcastLimit":1.5}' \
    '{"jobID":7,"mcastLimit":1}' '{"jobID":"","mcastLimit":1}' '[1,2]' \
    '{"jobID":"x",' ''; do
    http POST /fabric/collectives/jobs -d "$body"
    expect_status "POST jobs with body '$body' is 400" 400
done
long=$(head -c 257 /dev/zero | tr '\0' a)
http POST /fabric/collectives/jobs -d "{\"jobID\":\"$long\",\"mcastLimit\":1}"
expect_status "a jobID of 257 characters is 400" 400
http POST /fabric/collectives/jobs -d "{\"jobID\":\"${long%a}\",\"mcastLimit\":1}"
expect_status "... 256 are fine" 201
http DELETE "/fabric/collectives/jobs/${long%a}"
expect_status "... and deleted" 200

# ---- multicasts ------------------------------------------------------------------
MC='"jobID":"c-1","jobStepID":"5","vni":1024,"timeout":20000000'
mcast "" "{$MC,\"macs\":[\"2:A3:F1\",\"2:A3:F2\"]}"
expect_status "a tree without a session token is 401" 401
mcast "nonsense" "{$MC,\"macs\":[\"2:A3:F1\",\"2:A3:F2\"]}"
expect_status "... with an unknown token 401" 401
mcast "$TOK1" "{$MC,\"macs\":[]}"
expect_status "empty macs is 400" 400
mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F1\",\"02:a3:f1\"]}"
expect_status "duplicate macs are 400" 400
expect_json "... naming the duplicate" '.message | test("duplicate")' true
mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F1\",\"zz\"]}"
expect_status "a mac that is not a NIC address is 400" 400
mcast "$TOK2" "{$MC,\"macs\":[\"2:A3:F1\"]}"
expect_status "a jobID that is not the token's job is 400" 400
mcast "$TOK1" '{"jobID":"c-1","macs":["2:A3:F1"]}'
expect_status "missing vni and timeout is 400" 400
mcast "$TOK1" '{"jobID":"c-1",'
expect_status "malformed JSON is 400" 400

mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F1\",\"2:A3:F2\",\"2:A3:F3\"]}"
expect_status "a tree is 200" 200
expect_json "... message OK" .message OK
expect_match "... an mcastID below 8192" "$(jq -r .mcastID "$T/http.body")" '^[0-9]{1,4}$'
expect_json "... the first mac as a six-octet hwRoot" .hwRoot 00:00:00:02:a3:f1
M1=$(jq -r .mcastID "$T/http.body")
mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F1\",\"2:A3:F2\"]}"
expect_status "a second tree of the step" 200
expect_json "... rooted at a NIC that roots no other tree" .hwRoot 00:00:00:02:a3:f2
M2=$(jq -r .mcastID "$T/http.body")
mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F4\"]}"
expect_status "past the job's mcastLimit: 507" 507
expect_json "... message 01:" '.message | startswith("01:")' true
expect_json "... detail too" '.detail | startswith("01:")' true
mcast "$TOK2" '{"jobID":"c-2","vni":1,"timeout":1,"macs":["2:A3:F1","2:a3:f2"]}'
expect_status "every mac already a root: 507" 507
expect_json "... message 03:" '.message | startswith("03:")' true
mcast "$TOK2" '{"jobID":"c-2","vni":1,"timeout":1,"macs":["0:0:9"]}'
expect_status "a tree without jobStepID" 200
M3=$(jq -r .mcastID "$T/http.body")

http GET /fabric/collectives/jobs/c-1
expect_json "the job lists the step's trees" '.jobSteps."5" | sort | join(",")' \
    "$(printf '%s\n' "$M1" "$M2" | sort | paste -sd,)"
http GET /fabric/collectives/jobs/c-2
expect_json "a tree without a step is under step 0" '.jobSteps."0" | join(",")' "$M3"
expect_eq "the admin state counts three addresses in use" "$(state .addrs.used)" 3

TOKEN=$TOK1 http DELETE "/fabric/collectives/multicasts/$M2"
expect_status "DELETE a tree is 200" 200
TOKEN=$TOK1 http DELETE "/fabric/collectives/multicasts/$M2"
expect_status "... again is 404" 404
TOKEN=$TOK2 http DELETE "/fabric/collectives/multicasts/$M1"
expect_status "another job's tree is 404" 404
http DELETE "/fabric/collectives/multicasts/$M1"
expect_status "DELETE without a token is 401" 401
TOKEN=$TOK1 http DELETE /fabric/collectives/multicasts/abc
expect_status "a non-numeric mcastID is 400" 400
TOKEN=$TOK1 http DELETE /fabric/collectives/multicasts/8192
expect_status "an mcastID out of range is 404" 404
http GET /fabric/collectives/jobs/c-1
expect_json "the deleted tree left the step" '.jobSteps."5" | join(",")' "$M1"

# ---- PATCH and DELETE jobs -----------------------------------------------------------
mcast "$TOK1" '{"jobID":"c-1","jobStepID":"6","vni":1,"timeout":1,"macs":["1:0:1"]}'
expect_status "a tree in step 6" 200
http PATCH /fabric/collectives/jobs/c-1 -d '{"jobSteps":{"5":null,"404":null}}'
expect_status "PATCH step 5 to null is 200" 200
expect_json "... step 5 is gone" '.jobSteps | has("5")' false
expect_json "... step 6 stays" '.jobSteps."6" | length' 1
expect_eq "... its tree is freed" "$(state .addrs.used)" 2
mcast "$TOK1" "{$MC,\"macs\":[\"2:A3:F1\"]}"
expect_status "... and its root is free again" 200
expect_json "... hwRoot" .hwRoot 00:00:00:02:a3:f1
http PATCH /fabric/collectives/jobs/c-1 -d '{"jobSteps":{"6":[1]}}'
expect_status "PATCH with a value other than null is 400" 400
http PATCH /fabric/collectives/jobs/c-1 -d '{"other":1}'
expect_status "PATCH without jobSteps is 400" 400
http PATCH /fabric/collectives/jobs/nope -d '{"jobSteps":{"1":null}}'
expect_status "PATCH of an unknown job is 404" 404

http DELETE /fabric/collectives/jobs/c-1
expect_status "DELETE a job is 200" 200
expect_eq "... with an empty body" "$(wc -c <"$T/http.body")" 0
expect_eq "... its trees are freed" "$(state .addrs.used)" 1
http GET /fabric/collectives/jobs/c-1
expect_status "... GET is 404 after" 404
http DELETE /fabric/collectives/jobs/c-1
expect_status "... DELETE again is 404" 404
mcast "$TOK1" "{$MC,\"macs\":[\"7:0:1\"]}"
expect_status "... its session token is no longer valid" 401

# ---- HTTP edges -----------------------------------------------------------------
http GET /no/such/path
expect_status "an unknown path is 404" 404
expect_json "... JSON with a message" '.message | length > 0' true
http PUT /fabric/collectives/jobs/c-2 -d '{}'
expect_status "a wrong method is 405" 405
expect_eq "... listing the allowed ones" "$(header Allow)" "GET, PATCH, DELETE"
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big.json"
http POST /fabric/collectives/jobs --data-binary "@$T/big.json"
expect_status "a body over 64 KiB is 413" 413
http POST /fabric/collectives/jobs -H 'Transfer-Encoding: chunked' --data-binary "@$T/big.json"
expect_status "... also when sent chunked" 413
http GET /fabric/collectives/jobs/c-2
expect_status "the server still answers after that" 200

# ---- the state file, across a restart ------------------------------------------------
expect_eq "the state file is mode 0600" "$(stat -c %a "$T/fm.json")" 600
expect_eq "it holds the job" "$(jq -r '.jobs[].jobID' "$T/fm.json")" c-2
fm_stop TERM
expect_eq "SIGTERM: exit 0" "$?" 0
fmsim_start --state "$T/fm.json" || { not_ok "fmsim restarts"; finish; }
http GET /fabric/collectives/jobs/c-2
expect_status "after a restart the job is still there" 200
expect_json "... with the same token" .sessionToken "$TOK2"
expect_json "... and its tree" '.jobSteps."0" | join(",")' "$M3"
expect_eq "... its address is still in use" "$(state .addrs.used)" 1
TOKEN=$TOK2 http DELETE "/fabric/collectives/multicasts/$M3"
expect_status "... the tree can be deleted with the old token" 200

# ---- faults ------------------------------------------------------------------------
admin GET /fmsim/faults
expect_eq "GET /fmsim/faults is 200" "$ADMIN_STATUS" 200
expect_eq "... no faults" \
    "$(jq -r '[.latency_ms, .error_rate == 0, .outage, .forbid] | join(" ")' "$T/admin.body")" \
    "0 true none false"

faults '{"latency_ms":400}'
expect_eq "setting latency is 200" "$ADMIN_STATUS" 200
expect_eq "... and echoes the new settings" "$(jq -r .latency_ms "$T/admin.body")" 400
ms=$(elapsed_ms curl -s "$FM_URL/fabric/collectives/jobs/c-2")
if [ "$ms" -ge 380 ]; then ok "latency: a request takes >= 400 ms ($ms)"; else not_ok "latency: $ms ms"; fi
faults '{"latency_ms":3000}'
n0=$(state .counters.total)
curl -s -o /dev/null "$FM_URL/fabric/collectives/jobs/c-2" &
slow1=$!
curl -s -o /dev/null "$FM_URL/fabric/collectives/jobs/" &
slow2=$!
arrived $((n0 + 2))
ms=$(elapsed_ms curl -s "$FM_ADMIN/fmsim/state")
if [ "$ms" -lt 500 ]; then ok "the admin API answers during slow requests ($ms ms)"; else not_ok "admin waited $ms ms"; fi
faults '{"latency_ms":0}'
t0=$(now_ms)
wait "$slow1" "$slow2"
ms=$(($(now_ms) - t0))
if [ "$ms" -lt 1500 ]; then ok "lowering the latency releases waiting requests ($ms ms)"; else not_ok "still waited $ms ms"; fi
ms=$(elapsed_ms curl -s "$FM_URL/fabric/collectives/jobs/")
if [ "$ms" -lt 300 ]; then ok "latency 0: fast again ($ms ms)"; else not_ok "still slow: $ms ms"; fi
faults '{"latency_ms":20000}'
n0=$(state .counters.total)
curl -sS -o /dev/null --max-time 30 "$FM_URL/fabric/collectives/jobs/" 2>"$T/slow.err" &
slow1=$!
arrived $((n0 + 1))
ms=$(elapsed_ms faults '{"outage":"refuse","latency_ms":0}')
if [ "$ms" -lt 2000 ]; then ok "an outage does not wait for delayed requests ($ms ms)"; else not_ok "the outage took $ms ms"; fi
wait "$slow1"
expect_match "... which are cut off without a reply" "$(cat "$T/slow.err")" 'Empty reply'
faults '{"outage":"none"}'

faults '{"error_rate":1.0}'
http GET /fabric/collectives/jobs/
s1=$HTTP_STATUS
d1=$(jq -r .detail "$T/http.body")
http GET /fabric/collectives/jobs/
s2=$HTTP_STATUS
expect_eq "error_rate 1: every request fails, 500 then 503" "$s1 $s2" "500 503"
expect_match "... with a JSON detail" "$d1" 'injected'
expect_eq "... 503 says when to retry" "$(header Retry-After)" 1
faults '{"error_rate":0.5}'
got=""
for _ in 1 2 3 4; do
    http GET /fabric/collectives/jobs/
    got="$got $HTTP_STATUS"
done
expect_eq "error_rate 0.5: every second request fails" "$got" " 200 500 200 503"
faults '{"error_rate":0}'
http GET /fabric/collectives/jobs/
expect_status "error_rate 0: 200 again" 200

faults '{"outage":"refuse"}'
expect_eq "outage refuse is 200" "$ADMIN_STATUS" 200
http GET /fabric/collectives/jobs/
expect_match "... connections are refused" "$HTTP_STATUS" 'curl-failed:.*(refused|Failed to connect)'
expect_eq "... the admin API still answers" "$(state .faults.outage)" refuse
faults '{"outage":"none"}'
http GET /fabric/collectives/jobs/c-2
expect_status "outage none: the same port serves again" 200
faults '{"outage":"drop"}'
http GET /fabric/collectives/jobs/c-2
expect_match "outage drop: accepted and closed without a reply" "$HTTP_STATUS" 'curl-failed:.*Empty reply'
expect_eq "... counted as dropped" "$(state .counters.dropped)" 1
faults '{"outage":"none"}'
http GET /fabric/collectives/jobs/c-2
expect_status "... and back" 200

faults '{"forbid":true}'
http GET /fabric/collectives/jobs/
expect_status "forbid: WLM calls are 403" 403
expect_json "... with a detail" '.detail | test("forbidden")' true
mcast "$TOK2" '{"jobID":"c-2","vni":1,"timeout":1,"macs":["3:0:1"]}'
expect_status "... multicast calls (session tokens) are not affected" 200
faults '{"forbid":false}'
http GET /fabric/collectives/jobs/
expect_status "forbid false: 200 again" 200

faults '{"html_status":502}'
expect_eq "html_status is 200" "$ADMIN_STATUS" 200
expect_eq "... and shows in the settings" "$(jq -r .html_status "$T/admin.body")" 502
TOKEN=sekrit-bearer http GET /fabric/collectives/jobs/
expect_status "html_status 502: every request gets a 502 ..." 502
expect_match "... as an HTML page" "$(header Content-Type)" '^text/html'
expect_match "... with the marker" "$HTTP_BODY" 'fmsim-html-error-page'
expect_match "... quoting the request's Authorization header" "$HTTP_BODY" 'Authorization: Bearer sekrit-bearer'
faults '{"html_status":0}'
http GET /fabric/collectives/jobs/
expect_status "html_status 0: 200 again" 200
faults '{"html_status":200}'
expect_eq "an html_status outside 400..599 is 400" "$ADMIN_STATUS" 400

expect_eq "c-2 holds one address" "$(state .addrs.used)" 1
faults '{"forget_job":"c-2"}'
expect_eq "forget_job is 200" "$ADMIN_STATUS" 200
http GET /fabric/collectives/jobs/c-2
expect_status "... the job is gone (404)" 404
http GET /fabric/collectives/jobs/
expect_json "... and not listed" '.documentLinks | length' 0
expect_eq "... its tree stays allocated, as an orphan" "$(state '[.trees[] | select(.orphan)] | length')" 1
expect_eq "... still using an address" "$(state .addrs.used)" 1
mcast "$TOK2" '{"jobID":"c-2","vni":1,"timeout":1,"macs":["3:0:2"]}'
expect_status "... its token is unknown now" 401
faults '{"forget_job":"c-2"}'
expect_eq "forgetting an unknown job is 404" "$ADMIN_STATUS" 404

faults '{"add_job":{"jobID":"other-7","mcastLimit":3}}'
expect_eq "add_job is 200" "$ADMIN_STATUS" 200
http GET /fabric/collectives/jobs/
expect_json "... the orphan job is listed" '.documentLinks | join(",")' /fabric/collectives/jobs/other-7
http GET /fabric/collectives/jobs/other-7
expect_json "... with a session token" '.sessionToken | length > 20' true
faults '{"add_job":{"jobID":"other-7","mcastLimit":3}}'
expect_eq "adding it again is 409" "$ADMIN_STATUS" 409

faults '{"latency":1}'
expect_eq "an unknown fault is 400" "$ADMIN_STATUS" 400
faults '{"error_rate":2}'
expect_eq "error_rate 2 is 400" "$ADMIN_STATUS" 400
faults '{"outage":"sometimes"}'
expect_eq "an unknown outage is 400" "$ADMIN_STATUS" 400
faults '{"latency_ms":-1}'
expect_eq "a negative latency is 400" "$ADMIN_STATUS" 400
faults 'nope'
expect_eq "malformed JSON is 400" "$ADMIN_STATUS" 400
admin GET /fmsim/nothing
expect_eq "an unknown admin path is 404" "$ADMIN_STATUS" 404
curl -s -o /dev/null --max-time 5 "$FM_URL/fmsim/state"
http GET /fmsim/state
expect_status "the admin API is not on the main port" 404

state . >"$T/state.json"
expect_eq "the state counts requests by method and route" \
    "$(jq -r '.counters.requests["GET /fabric/collectives/jobs/{jobID}"] > 3' "$T/state.json")" true
expect_eq "... and replies by status" "$(jq -r '.counters.statuses["503"]' "$T/state.json")" 2
expect_eq "... the injected errors" "$(jq -r .counters.injected_errors "$T/state.json")" 4
expect_eq "... jobs with their tokens" "$(jq -r '.jobs["other-7"].sessionToken | length > 20' "$T/state.json")" true
fm_stop INT
expect_eq "SIGINT: exit 0" "$?" 0

fmsim_start --latency-ms 20000 || { not_ok "fmsim with --latency-ms starts"; finish; }
timeout 10 "$FMSIM" --listen "127.0.0.1:${FM_URL##*:}" >/dev/null 2>"$T/inuse.err"
expect_eq "a port in use stops the start (exit 1)" "$?" 1
expect_match "... saying so" "$(cat "$T/inuse.err")" "cannot listen on 127.0.0.1 port ${FM_URL##*:}"
n0=$(state .counters.total)
curl -s -o /dev/null --max-time 30 "$FM_URL/fabric/collectives/jobs/" &
slow1=$!
arrived $((n0 + 1))
t0=$(now_ms)
fm_stop
rc=$?
ms=$(($(now_ms) - t0))
if [ "$ms" -lt 2000 ]; then ok "SIGTERM does not wait for delayed requests ($ms ms)"; else not_ok "the stop took $ms ms"; fi
expect_eq "... and exits 0" "$rc" 0
wait "$slow1"

# ---- faults at start; 02: out of fabric addresses ------------------------------------------
fmsim_start --total-addrs 2 --outage refuse --forbid --latency-ms 300 ||
    { not_ok "fmsim starts with faults"; finish; }
expect_match "with outage refuse it still prints its port" "$FM_URL" ':[0-9]+$'
http GET /fabric/collectives/jobs/
expect_match "... and refuses connections" "$HTTP_STATUS" 'curl-failed:.*(refused|Failed to connect)'
expect_eq "the flags show in the fault state" \
    "$(state '.faults | [.latency_ms, .error_rate, .outage, .forbid] | join(" ")')" \
    "300 0 refuse true"
faults '{"outage":"none"}'
http GET /fabric/collectives/jobs/
expect_status "listening again: --forbid gives 403" 403
faults '{"forbid":false,"latency_ms":0}'
create_job f-1 10
expect_status "a job" 201
for mac in 1:0:1 1:0:2; do
    mcast "$JOB_TOKEN" "{\"jobID\":\"f-1\",\"vni\":1,\"timeout\":1,\"macs\":[\"$mac\"]}"
done
expect_status "two trees fill a fabric of 2 addresses" 200
mcast "$JOB_TOKEN" '{"jobID":"f-1","vni":1,"timeout":1,"macs":["1:0:3"]}'
expect_status "a third is 507" 507
expect_json "... message 02:" '.message | startswith("02:")' true
fm_stop
expect_eq "stopped" "$?" 0

# ---- HTTP Basic ---------------------------------------------------------------------
umask 077
printf 'fm-pass-%s\n' "$(openssl rand -hex 6)" >"$T/pw"
umask 022
PW=$(head -n 1 "$T/pw")
fmsim_start --auth basic --password-file "$T/pw" || { not_ok "basic fmsim starts"; finish; }
http GET /fabric/collectives/jobs/
expect_status "basic: no credentials is 401" 401
expect_match "... asking for Basic" "$(header WWW-Authenticate)" '^Basic'
http GET /fabric/collectives/jobs/ -u "cxi:wrong"
expect_status "basic: a wrong password is 401" 401
http GET /fabric/collectives/jobs/ -u "root:$PW"
expect_status "basic: a wrong user is 401" 401
http GET /fabric/collectives/jobs/ -u "cxi:$PW"
expect_status "basic: user cxi and the file's password (newline stripped)" 200
http POST /fabric/collectives/jobs -u "cxi:$PW" -d '{"jobID":"b-1","mcastLimit":1}'
expect_status "basic: POST a job" 201
TOKB=$(jq -r .sessionToken "$T/http.body")
mcast "$TOKB" '{"jobID":"b-1","vni":1,"timeout":1,"macs":["1:0:1"]}'
expect_status "basic: multicasts use the session token, not Basic" 200
http POST /oauth/token -d 'grant_type=client_credentials&client_id=a&client_secret=b'
expect_status "basic: there is no token endpoint" 404
fm_stop

printf 'otherpass' >"$T/pw2"
chmod 600 "$T/pw2"
fmsim_start --auth basic --user wlm --password-file "$T/pw2" || { not_ok "fmsim --user starts"; finish; }
http GET /fabric/collectives/jobs/ -u "wlm:otherpass"
expect_status "basic: --user sets the user name" 200
http GET /fabric/collectives/jobs/ -u "cxi:otherpass"
expect_status "... cxi is then refused" 401
fm_stop

# ---- OAuth -----------------------------------------------------------------------
umask 077
printf 'client-secret-%s' "$(openssl rand -hex 8)" >"$T/cs"
umask 022
CS=$(cat "$T/cs")
fmsim_start --auth oauth --client-id vnib --client-secret-file "$T/cs" ||
    { not_ok "oauth fmsim starts"; finish; }
get_token () { # [EXTRA-FORM]
    http POST /oauth/token -H 'Content-Type: application/x-www-form-urlencoded' \
        --data "grant_type=client_credentials&client_id=vnib&client_secret=$CS${1:-}"
    AT=$(jq -r .access_token "$T/http.body" 2>/dev/null)
}
get_token '&scope=openid'
expect_status "oauth: the token endpoint answers 200" 200
expect_json "... token_type Bearer" .token_type Bearer
expect_json "... expires_in is the default TTL" .expires_in 300
expect_json "... the scope is echoed" .scope openid
expect_match "... an access token" "$AT" '^.{20,}$'
TOKEN=$AT http GET /fabric/collectives/jobs/
expect_status "oauth: the access token opens the jobs API" 200
http GET /fabric/collectives/jobs/
expect_status "oauth: no token is 401" 401
expect_match "... asking for Bearer" "$(header WWW-Authenticate)" '^Bearer'
TOKEN=bogus http GET /fabric/collectives/jobs/
expect_status "oauth: an unknown token is 401" 401
http GET /fabric/collectives/jobs/ -u "cxi:$CS"
expect_status "oauth: Basic is not accepted" 401
http POST /oauth/token --data "grant_type=client_credentials&client_id=vnib&client_secret=wrong"
expect_status "oauth: a wrong secret is 401" 401
expect_json "... error invalid_client" .error invalid_client
expect_json "... with message and detail" '(.message | length > 0) and (.detail | length > 0)' true
http POST /oauth/token --data "grant_type=client_credentials&client_id=other&client_secret=$CS"
expect_status "oauth: a wrong client id is 401" 401
http POST /oauth/token --data "grant_type=password&client_id=vnib&client_secret=$CS"
expect_status "oauth: another grant type is 400" 400
expect_json "... unsupported_grant_type" .error unsupported_grant_type
http POST /oauth/token -u "vnib:$CS" --data "grant_type=client_credentials"
expect_status "oauth: client credentials in HTTP Basic work too" 200
enc=$(printf %s "$CS" | jq -sRr @uri)
http POST /oauth/token --data "grant_type=client_credentials&client_id=vnib&client_secret=$enc"
expect_status "oauth: a percent-encoded secret works" 200
TOKEN=$AT http POST /fabric/collectives/jobs -d '{"jobID":"o-1","mcastLimit":1}'
expect_status "oauth: POST a job with the token" 201
faults '{"expire_tokens":true}'
expect_eq "expire_tokens is 200" "$ADMIN_STATUS" 200
TOKEN=$AT http GET /fabric/collectives/jobs/
expect_status "oauth: an expired token is 401" 401
get_token
TOKEN=$AT http GET /fabric/collectives/jobs/
expect_status "oauth: a fresh token works again" 200
expect_eq "the secret is not in the log" "$(grep -c "$CS" "$FM_ERR")" 0
expect_eq "nor the access token" "$(grep -c "$AT" "$FM_ERR")" 0
fm_stop

fmsim_start --auth oauth --client-id vnib --client-secret-file "$T/cs" --token-ttl 1 ||
    { not_ok "oauth fmsim with ttl 1 starts"; finish; }
get_token
expect_json "--token-ttl sets expires_in" .expires_in 1
TOKEN=$AT http GET /fabric/collectives/jobs/
expect_status "... valid at first" 200
token_refused () {
    TOKEN=$AT http GET /fabric/collectives/jobs/
    [ "$HTTP_STATUS" = 401 ]
}
wait_for 10 token_refused
TOKEN=$AT http GET /fabric/collectives/jobs/
expect_status "... 401 once it has expired" 401
fm_stop

# ---- TLS --------------------------------------------------------------------------
test_ca "fmsim test CA"
test_cert fm 127.0.0.1 IP:127.0.0.1
fmsim_start --tls-cert "$T/fm.pem" --tls-key "$T/fm.key" || { not_ok "TLS fmsim starts"; finish; }
expect_match "TLS: the start line says https" "$FM_LINE" '^fmsim listening on https://127\.0\.0\.1:[0-9]+ admin http://'
http GET /fabric/collectives/jobs/ --cacert "$T/ca.pem"
expect_status "TLS: verified HTTPS works" 200
http GET /fabric/collectives/jobs/
expect_match "TLS: without the CA the certificate is refused" "$HTTP_STATUS" 'curl-failed:.*(certificate|SSL)'
faults '{"outage":"refuse"}'
faults '{"outage":"none"}'
http GET /fabric/collectives/jobs/ --cacert "$T/ca.pem"
expect_status "TLS: still HTTPS after an outage" 200
fm_stop
chmod 644 "$T/fm.key"
out=$(timeout 10 "$FMSIM" --tls-cert "$T/fm.pem" --tls-key "$T/fm.key" 2>&1)
expect_eq "TLS: a world-readable key stops the start (exit 1)" "$?" 1
expect_match "... saying so" "$out" 'fm.key: mode 0644 is unsafe'
"$FMSIM" --tls-cert "$T/fm.pem" >/dev/null 2>&1
expect_eq "TLS: a certificate without a key is refused" "$?" 2

# ---- sanitizers ---------------------------------------------------------------------
# shellcheck disable=SC2086
san=$(cat $FM_LOGS | grep -E 'Sanitizer|runtime error' | head -n 5)
expect_eq "no sanitizer reports in fmsim's logs" "$san" ""
finish
