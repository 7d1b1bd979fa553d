#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The durable Fabric Manager queue and reconciliation: releases never wait
# on the FM and are never lost (FM outage, broker SIGKILL, database
# restart); the leader reconciles (lost reservations run the hook, orphans
# this database made are released, FM jobs it did not make are left alone
# whatever their prefix); another
# replica takes over when the leader dies; step releases.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start --state "$T/fmsim.json" || { not_ok "fmsim starts"; finish; }
fm_count () { curl -s "$FM_ADMIN/fmsim/state" | jq "[.jobs[] | select(.jobID | startswith(\"$1\"))] | length"; }
hwcoll_config "$T/b.toml" tux "
[hooks]
on_reservation_lost = [\"/bin/sh\", \"-c\", \"echo lost \$0 \$1 >> $T/hook.out\", \"{job_id}\", \"{fm_job_id}\"]
timeout_s = 5"
set_key "$T/b.toml" retry_max_s 2
broker_migrate_start "$T/b.toml"
URL_A=$BROKER_URL
PID_A=$BROKER_PID

# many VERB PREFIX N: reserve or release N jobs PREFIX1..PREFIXN, 8 at a time.
many () {
    seq 1 "$3" | xargs -P 8 -I{} sh -c '
        if [ "$1" = reserve ]; then
            curl -s -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $3" \
                -H "Content-Type: application/json" -d "{\"job_id\":\"$2{}\",\"uid\":1,\"user\":\"u\",\"nodes\":\"n1\"}" "$4/v1/reservations"
        else
            curl -s -o /dev/null -w "%{http_code}\n" -X DELETE -H "Authorization: Bearer $3" "$4/v1/reservations/$2{}"
        fi' _ "$1" "$2" "$SCHED_TOKEN" "$BROKER_URL" | sort | uniq -c | tr -s ' ' | tr '\n' ' '
}
fm_holds () { [ "$(fm_count "$1")" = "$2" ]; } # PREFIX N
hw_released () { # PREFIX: reservations of PREFIX* with hwcoll released
    psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE '$1%' AND hwcoll_state = 'released'"
}

# ---- an FM outage while 500 jobs are released -------------------------------------
expect_match "500 jobs reserved with hardware collectives" "$(many reserve o 500)" '^ ?500 201 $'
# Past hwcoll.request_concurrency, reserves are completed in the background.
wait_for 30 fm_holds tux-o 500
expect_eq "fmsim holds 500" "$(fm_count tux-o)" 500
fm_fault '{"outage":"refuse"}'
start=$(date +%s%N)
expect_match "with the FM down, all 500 releases are answered" "$(many release o 500)" '^ ?500 200 $'
ms=$((($(date +%s%N) - start) / 1000000))
# Waiting on the FM would cost a timeout per release (minutes for 500).
if [ "$ms" -lt 60000 ]; then
    ok "... without waiting on the FM ($ms ms for 500)"
else
    not_ok "... the releases waited on the FM ($ms ms for 500)"
fi
expect_eq "the FM releases are queued" "$(psql_q "SELECT count(*) FROM fm_queue")" 500
# While the FM is down the workers pause (1 s, doubling up to 30 s) and
# then probe it: the probe fails and the claimed releases are handed back,
# each counting an attempt.  Wait for a probe (positive evidence that the
# queue still runs), then count the attempts of the next 3 s: a busy loop
# would make hundreds.
fm_tries () { psql_q "SELECT coalesce(sum(attempts), 0) FROM fm_queue"; }
tries_before=$(fm_tries)
fm_probed () { [ "$(fm_tries)" -gt "$tries_before" ]; }
wait_for 40 fm_probed
expect_eq "the paused queue probes the FM again during the outage" "$?" 0
tries_before=$(fm_tries)
sleep 3 # the window the attempts are counted in, not a wait for an event
tries=$(($(fm_tries) - tries_before))
echo "# attempts in the 3 s after a probe: $tries"
expect_eq "no busy loop: the paused queue made few attempts in 3 s" \
    "$([ "$tries" -lt 100 ] && echo t)" t
fm_fault '{"outage":"none"}'
wait_for 60 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID | startswith(\"tux-o\"))] | length')\" = 0 ]"
expect_eq "after the FM returns, nothing is left in fmsim" "$(fm_count tux-o)" 0
wait_for 10 sh -c "[ \"\$(psql_q 'SELECT count(*) FROM fm_queue' 2>/dev/null)\" = 0 ]"
expect_eq "every job reached hwcoll released" "$(hw_released o)" 500
expect_eq "the queue is empty" "$(psql_q "SELECT count(*) FROM fm_queue")" 0

# ---- SIGKILL with a full queue -------------------------------------------------------
expect_match "50 more jobs" "$(many reserve k 50)" '^ ?50 201 $'
wait_for 30 fm_holds tux-k 50
fm_fault '{"outage":"refuse"}'
many release k 50 >/dev/null
kill -KILL "$PID_A"
wait "$PID_A" 2>/dev/null
expect_eq "the queue survived the broker's SIGKILL" "$(psql_q "SELECT count(*) FROM fm_queue")" 50
fm_fault '{"outage":"none"}'
sed -i "s/^port = 0/port = ${URL_A##*:}/" "$T/b.toml"
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
PID_A=$BROKER_PID
wait_for 30 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID | startswith(\"tux-k\"))] | length')\" = 0 ]"
expect_eq "after the restart the queue drains" "$(fm_count tux-k)" 0
wait_for 10 sh -c "[ \"\$(psql_q 'SELECT count(*) FROM fm_queue' 2>/dev/null)\" = 0 ]"
expect_eq "... every one recorded released" "$(hw_released k)" 50

# ---- a database restart in the middle of queue work ---------------------------------------
many reserve d 100 >/dev/null
fm_fault '{"latency_ms":20}'
many release d 100 >/dev/null
pg_restart
fm_fault '{"latency_ms":0}'
wait_for 60 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID | startswith(\"tux-d\"))] | length')\" = 0 ]"
expect_eq "a database restart mid-queue loses no FM release" "$(fm_count tux-d)" 0
# A confirmation the restart interrupted is redone when its lease ends.
wait_for 45 sh -c "[ \"\$(psql_q 'SELECT count(*) FROM fm_queue' 2>/dev/null)\" = 0 ]"
expect_eq "... and all 100 are recorded released" "$(hw_released d)" 100

# ---- reconciliation -------------------------------------------------------------------------
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"vanish","uid":1,"user":"u","nodes":"n1"}'
expect_json "vanish reserved" .hwcoll.state reserved
FMID_VANISH=$(jq -r .hwcoll.fm_job_id "$T/http.body")
fm_fault "{\"forget_job\":\"$FMID_VANISH\"}"
# An orphan of ours: the FM still holds a job of a reservation this
# database released (its queued delete lost, as after restoring an old
# backup of the database).
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"orphan1","uid":1,"user":"u","nodes":"n1"}'
FMID_ORPHAN1=$(jq -r .hwcoll.fm_job_id "$T/http.body")
psql_q "SELECT vnib_unhold(id) FROM reservations WHERE job_id = 'orphan1';
        UPDATE reservations SET state = 'released', released_at = now(),
               hwcoll_state = 'released' WHERE job_id = 'orphan1'" >/dev/null
# Not ours, though it carries our prefix: another cluster's job.
curl -s -o /dev/null -X POST -d '{"add_job":{"jobID":"tux-orphan1","mcastLimit":2}}' "$FM_ADMIN/fmsim/faults"
curl -s -o /dev/null -X POST -d '{"add_job":{"jobID":"other-job1","mcastLimit":2}}' "$FM_ADMIN/fmsim/faults"
curl -s -o /dev/null -X POST -d '{"add_job":{"jobID":"tuxedo-1","mcastLimit":2}}' "$FM_ADMIN/fmsim/faults"
wait_for 20 sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/vanish | jq -r .hwcoll.state)\" = lost ]"
TOKEN=$SCHED_TOKEN http GET /v1/reservations/vanish
expect_json "the next reconciliation marks a vanished reservation lost" .hwcoll.state lost
wait_for 10 test -s "$T/hook.out"
expect_eq "... runs the hook with the job and FM ids" "$(cat "$T/hook.out" 2>/dev/null)" "lost vanish $FMID_VANISH"
TOKEN=$ADMIN_TOKEN http GET '/v1/events?job_id=vanish'
expect_match "... and records the event" "$(jq -c '[.events[].detail.state]' "$T/http.body")" '"lost"'
wait_for 20 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID == \"$FMID_ORPHAN1\")] | length')\" = 0 ]"
expect_eq "an orphan this database made is released" "$(fm_count "$FMID_ORPHAN1")" 0
expect_eq "an FM job with our prefix that we did not make is left alone" "$(fm_count tux-orphan1)" 1
expect_eq "an FM job of another prefix is left alone" "$(fm_count other-job1)" 1
expect_eq "... and so is one whose prefix merely starts like ours" "$(fm_count tuxedo-1)" 1
http GET /metrics
expect_match "lost reservations are counted in metrics" "$HTTP_BODY" 'vnib_hwcoll_lost_total 1'
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "the last reconciliation is reported" '.last_reconcile.error' null
expect_json "... with the FM jobs of our prefix that are not ours" '.last_reconcile.foreign' 1
expect_json "... queue depth" .queue.depth 0
expect_json "... and who leads" .leading true

# ---- step releases ------------------------------------------------------------------------------
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"steps","uid":1,"user":"u","nodes":"n1"}'
stok=$(jq -r .hwcoll.session_token "$T/http.body")
FMID_STEPS=$(jq -r .hwcoll.fm_job_id "$T/http.body")
curl -s -o /dev/null -H "Authorization: Bearer $stok" \
    -d "{\"jobID\":\"$FMID_STEPS\",\"jobStepID\":\"3\",\"macs\":[\"1:2:3\"],\"vni\":1024,\"timeout\":1000}" \
    "$FM_URL/fabric/collectives/multicasts"
steps_of () { curl -s "$FM_ADMIN/fmsim/state" | jq -r --arg id "$FMID_STEPS" '.jobs[$id].jobSteps | keys | '"$1"; }
expect_eq "a tree under step 3" "$(steps_of 'join(",")')" 3
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/steps/steps/3
expect_status "releasing a step is 202" 202
expect_json "... queued" .outcome queued
wait_for 10 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq -r '.jobs[\"$FMID_STEPS\"].jobSteps | keys | length')\" = 0 ]"
expect_eq "the FM freed the step's trees" "$(steps_of length)" 0
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/steps/steps/99
expect_status "an unknown step is not an error" 202
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"nohw","uid":1,"user":"u","nodes":"n1","hwcoll":"off"}'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/nohw/steps/1
expect_json "a job without hardware collectives: nothing to free" .outcome no_hwcoll
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/nosuch/steps/1
expect_status "an unknown job is 404" 404

# ---- two replicas: the leader dies -----------------------------------------------------------------
sed "s/^port = .*/port = 0/" "$T/b.toml" >"$T/b2.toml"
broker_start "$T/b2.toml" || { not_ok "replica B starts"; finish; }
URL_B=$BROKER_URL
PID_B=$BROKER_PID
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "B knows A leads" .leading false
kill -KILL "$PID_A"
wait "$PID_A" 2>/dev/null
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"orphan2","uid":1,"user":"u","nodes":"n1"}'
FMID_ORPHAN2=$(jq -r .hwcoll.fm_job_id "$T/http.body")
psql_q "SELECT vnib_unhold(id) FROM reservations WHERE job_id = 'orphan2';
        UPDATE reservations SET state = 'released', released_at = now(),
               hwcoll_state = 'released' WHERE job_id = 'orphan2'" >/dev/null
wait_for 30 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID == \"$FMID_ORPHAN2\")] | length')\" = 0 ]"
expect_eq "after the leader's SIGKILL, replica B reconciles (the orphan is gone)" "$(fm_count "$FMID_ORPHAN2")" 0
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "B now leads" .leading true
expect_eq "... as recorded in the database" "$(jq -r .leader.replica "$T/http.body")" "$(jq -r .replica "$T/http.body")"
expect_match "B drains the queue alone" "$(many reserve b 20) $(many release b 20)" '20 201 .*20 200'
wait_for 20 sh -c "[ \"\$(curl -s $FM_ADMIN/fmsim/state | jq '[.jobs[] | select(.jobID | startswith(\"tux-b\"))] | length')\" = 0 ]"
expect_eq "... nothing left in the FM" "$(fm_count tux-b)" 0
broker_stop
finish
