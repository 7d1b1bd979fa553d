#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A job step of a job with hardware collectives, against fmsim: the step's
# reservation shows its job's multicast reservation (hwcoll reserved, the
# FI_CXI_* variables with FI_CXI_COLL_JOB_STEP_ID, the session token to
# schedulers and the step's nodes, never to monitors), SLINGSHOT_VNIS is
# the step's VNIs then the job's, and ending the step queues the Fabric
# Manager's jobSteps release and releases the step's reservation.  Then
# the same through vnibctl (reserve, show and release with --step, the
# list's STEP column).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux
broker_migrate_start "$T/b.toml"

TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"77","uid":1001,"user":"alice","nodes":"hc[1-4]","vni_count":1}'
expect_eq "the job is reserved" "$HTTP_STATUS" 201
expect_eq "... with hardware collectives" "$(jq -r .hwcoll.state <<<"$HTTP_BODY")" reserved
job_vni=$(jq -r '.vnis[0]' <<<"$HTTP_BODY")
job_id=$(jq -r '.id' <<<"$HTTP_BODY")
fm_job=$(jq -r '.hwcoll.fm_job_id' <<<"$HTTP_BODY")
job_token=$(jq -r '.environment.FI_CXI_COLL_MCAST_TOKEN' <<<"$HTTP_BODY")
expect_match "... and a session token" "$job_token" '^[^n].{8,}'

TOKEN=$SCHED_TOKEN http PUT /v1/reservations/77/steps/4 -d '{"nodes":"hc[1-2]","vni_count":1}'
expect_eq "a step is reserved (201)" "$HTTP_STATUS" 201
step_vni=$(jq -r '.vnis[0]' <<<"$HTTP_BODY")
expect_eq "its SLINGSHOT_VNIS: the step's VNI, then the job's" \
    "$(jq -r .environment.SLINGSHOT_VNIS <<<"$HTTP_BODY")" "$step_vni,$job_vni"
expect_eq "its hwcoll is the job's" "$(jq -r '.hwcoll.state + " " + .hwcoll.fm_job_id' <<<"$HTTP_BODY")" \
    "reserved $fm_job"
expect_eq "FI_CXI_COLL_JOB_ID and FI_CXI_COLL_JOB_STEP_ID" \
    "$(jq -r '.environment.FI_CXI_COLL_JOB_ID + " " + .environment.FI_CXI_COLL_JOB_STEP_ID' <<<"$HTTP_BODY")" \
    "$fm_job 4"
expect_eq "the scheduler gets the job's session token" \
    "$(jq -r .environment.FI_CXI_COLL_MCAST_TOKEN <<<"$HTTP_BODY")" "$job_token"
expect_no_match "... and never the sealed one" "$HTTP_BODY" '_sealed'

TOKEN=$(node_token hc2) http GET /v1/reservations/77/steps/4
expect_eq "a node of the step reads it" "$HTTP_STATUS" 200
expect_eq "... with the session token" \
    "$(jq -r .hwcoll.session_token <<<"$HTTP_BODY")" "$job_token"
TOKEN=$(node_token hc3) http GET /v1/reservations/77/steps/4
expect_eq "a node of the job but not of the step is refused (403)" "$HTTP_STATUS" 403
TOKEN=$MONITOR_TOKEN http GET /v1/reservations/77/steps/4
expect_eq "a monitor reads it" "$HTTP_STATUS" 200
expect_eq "... without a session token" \
    "$(jq -r '[.hwcoll.session_token, .environment.FI_CXI_COLL_MCAST_TOKEN] | map(select(. != null)) | length' <<<"$HTTP_BODY")" 0

TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/77/steps/4
expect_eq "ending the step answers 202" "$HTTP_STATUS" 202
expect_eq "... queued the FM's release and released the step's VNIs" \
    "$(jq -r '.outcome + " " + .reservation.state' <<<"$HTTP_BODY")" "queued released"
expect_eq "the step's VNI is free again, the job's still held" \
    "$(psql_q "SELECT string_agg(vni::text, ',' ORDER BY vni) FROM vni_holds WHERE vni IN ($step_vni, $job_vni)")" \
    "$job_vni"
expect_eq "the job's reservation is untouched" \
    "$(psql_q "SELECT state FROM reservations WHERE id = $job_id")" active
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/77
expect_eq "the job releases" "$HTTP_STATUS" 200

# ---- vnibctl --------------------------------------------------------------------
CTL=$BUILD/vnibctl
export VNIB_URL=$BROKER_URL
umask 077
printf '%s\n' "$SCHED_TOKEN" >"$T/sched.token"
umask 022
ctl () { "$CTL" --token-file "$T/sched.token" "$@"; }
ctl reserve 88 --uid 1 --user bob --nodes 'hc[1-2]' >/dev/null
expect_eq "vnibctl reserves a job" "$?" 0
out=$(ctl --json reserve 88 --step s.1 --nodes hc1 --vnis 1)
expect_eq "vnibctl reserve --step exits 0" "$?" 0
expect_eq "... printing the step's reservation" "$(jq -r '.job_id + " " + .step_id' <<<"$out")" "88 s.1"
out=$(ctl reserve 88 --step s.1 --nodes hc1 --uid 1 2>&1)
expect_eq "--uid with --step is a usage error (2)" "$?" 2
expect_match "... saying why" "$out" "not with --step"
out=$(ctl reserve 89 --nodes hc1 2>&1)
expect_eq "a job's reserve without --uid is a usage error (2)" "$?" 2
expect_match "... naming it" "$out" "--uid N is required"
out=$(ctl reserve 88 --step 'a#b' --nodes hc1 2>&1)
expect_eq "a bad step id is a usage error (2)" "$?" 2
out=$(ctl show 88 --step s.1)
expect_match "vnibctl show --step prints the step" "$out" 'step_id: +s\.1'
expect_match "... and its job's VNIs" "$out" 'job_vnis: +'
out=$(ctl list --state active)
expect_match "vnibctl list has a STEP column" "$(head -n 1 <<<"$out")" 'CREATED +STEP$'
expect_eq "... the step's row shows its step, the job's none" \
    "$(awk 'NR > 1 && $1 == "88" { print $NF }' <<<"$out" | sort | tr '\n' ' ')" "- s.1 "
out=$(ctl release 88 --step s.1 --reservation 3 2>&1)
expect_eq "--reservation with --step is a usage error (2)" "$?" 2
out=$(ctl release 88 --step s.1)
expect_eq "vnibctl release --step exits 0" "$?" 0
expect_match "... printing the outcome (its job has hardware collectives)" "$out" 'outcome: +queued'
expect_match "... and the step's reservation, released" "$out" 'state: +released'
ctl release 88 >/dev/null
expect_eq "vnibctl releases the job" "$?" 0
finish
