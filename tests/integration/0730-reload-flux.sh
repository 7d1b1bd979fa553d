#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The jobtap plugin removed and loaded again, and the instance stopped and
# started again, with jobs running: their reservations are neither lost
# nor released early, and their cleanup still releases them.
#
#  - `flux jobtap remove` / `load` while a job runs: its reservation stays
#    active; its end releases it (the plugin keeps nothing of its own).
#  - removed while a job's reserve is in flight (the broker stopped with
#    SIGSTOP): the job stays held; loaded again, the plugin finds the hold
#    in the job's eventlog, reserves again (the same reservation, with a
#    lease: the broker's reserve is idempotent per job) and lets the job
#    start.
#  - the same with vnis-per-job changed while the plugin was out: the
#    recovery reserve asks for 2 VNIs and gets the job's reservation of 1
#    (the broker logs what differs), and the job runs.
#  - removed while a job is held and the job canceled meanwhile: loaded
#    again, the plugin ends the hold the job's eventlog shows open, and
#    the job's cleanup completes; nothing stays active at the broker.
#  - reconcile: a reservation of a job the instance does not have (a lost
#    release) is released; a running job's and another token's are not.
#  - the instance stopped with a job running (flux-core 0.88 cancels
#    running jobs at shutdown; none survives a restart): the job's
#    release is made, or spooled when the broker is down, and a spooled
#    release survives the restart and is sent after it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
flux_cluster
broker_pin_port "$T/b.toml"
flux_setup "reconcile-s = 2"
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up with the plugin loaded"

resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }
state_of () { resv "$1"; jq -r .state <<<"$HTTP_BODY"; }
spooled () { flux_query | jq -r .spool.count; }

# ---- removed and loaded again while a job runs -----------------------------
id=$(fluxc submit -N2 sleep 6)
fluxc job wait-event -t 30s "$id" start >/dev/null
dec=$(fluxc job id --to=dec "$id")
resv "$dec"
expect_eq "a running job's reservation is active" "$(jq -r .state <<<"$HTTP_BODY")" active
V1=$(jq -c .vnis <<<"$HTTP_BODY")
fluxc jobtap remove vnib-jobtap.so
expect_no_match "flux jobtap remove: the plugin is gone" "$(fluxc jobtap list)" vnib-jobtap
expect_eq "... and the job's reservation is still active" "$(state_of "$dec")" active
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"
expect_match "flux jobtap load: the plugin is back" "$(fluxc jobtap list)" vnib-jobtap
resv "$dec"
expect_eq "... the reservation is untouched" "$(jq -r .state <<<"$HTTP_BODY")" active
expect_match "... same VNIs ($V1)" "$(jq -c .vnis <<<"$HTTP_BODY")" "^\\[30[0-9][0-9]\\]\$"
expect_eq "... the same as before" "$(jq -c .vnis <<<"$HTTP_BODY")" "$V1"
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "the job completes" "$(fluxc jobs -no {result} "$id")" COMPLETED
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
expect_eq "its cleanup, under the plugin loaded again, released it" "$(state_of "$dec")" released

# ---- removed while the reserve is in flight ---------------------------------
kill -STOP "$BROKER_PID"
id=$(fluxc submit -N1 sleep 1)
dec=$(fluxc job id --to=dec "$id")
wait_for 10 sh -c "$FLUX job eventlog $id | grep -q 'prolog-start.*description=\"vnibroker\"'"
expect_match "the job is held by the plugin's prolog" "$(fluxc job eventlog "$id")" 'prolog-start description="vnibroker"'
fluxc jobtap remove vnib-jobtap.so
kill -CONT "$BROKER_PID"
sleep 1
expect_eq "with the plugin removed the job is still held (RUN, not started)" \
    "$(fluxc jobs -no {state} "$id"):$(fluxc job eventlog "$id" | grep -c ' start')" RUN:0
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "loaded again, the plugin reserved and let the job run" "$(fluxc jobs -no {result} "$id")" COMPLETED
expect_match "... with its VNIs" "$(flux_event "$id" cray-slingshot)" '^\{"vnis":\[30[0-9][0-9]\]\}$'
expect_match "... and a lease again, which the nodes started it from" "$(flux_event "$id" vnibroker | jq -r '.lease // empty')" '^vnib1\.'
expect_eq "... the hold was ended once" "$(fluxc job eventlog "$id" | grep -c 'prolog-finish description="vnibroker"')" 1
expect_eq "... the plugin counts one recovered job" "$(flux_query | jq -r .counts.recovered)" 1
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
expect_eq "... and released at its end" "$(state_of "$dec")" released

# ---- removed while the job is held, the job canceled meanwhile -------------
kill -STOP "$BROKER_PID"
id=$(fluxc submit -N1 sleep 1)
dec=$(fluxc job id --to=dec "$id")
wait_for 10 sh -c "$FLUX job eventlog $id | grep -q 'prolog-start.*description=\"vnibroker\"'"
fluxc jobtap remove vnib-jobtap.so
kill -CONT "$BROKER_PID"
fluxc cancel "$id"
sleep 1
expect_eq "canceled while the plugin was out, the job waits in CLEANUP for the plugin's hold" \
    "$(fluxc jobs -no {state} "$id")" CLEANUP
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"
fluxc job wait-event -t 30s "$id" clean >/dev/null
expect_eq "loaded again, the plugin ended the hold: the job is done" "$(fluxc jobs -no {state} "$id")" INACTIVE
expect_eq "... the hold ended once" "$(fluxc job eventlog "$id" | grep -c 'prolog-finish description="vnibroker"')" 1
wait_for 10 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state != \"active\"' >/dev/null"
resv "$dec"
expect_match "... and nothing of it is left active at the broker ($HTTP_STATUS)" \
    "$HTTP_STATUS $(jq -r '.state // empty' <<<"$HTTP_BODY")" '^(404 |200 (releasing|released))$'

# ---- loaded again with vnis-per-job changed, the first reserve made --------
# The job's first reserve (1 VNI) is committed while the plugin is out;
# the plugin loaded again with vnis-per-job = 2 recovers the job with a
# reserve that asks for 2: the broker answers the job's reservation as it
# is, and logs what differs (issue 45: such a job used to fail with 409).
kill -STOP "$BROKER_PID"
id=$(fluxc submit -N1 sleep 1)
dec=$(fluxc job id --to=dec "$id")
wait_for 10 sh -c "$FLUX job eventlog $id | grep -q 'prolog-start.*description=\"vnibroker\"'"
fluxc jobtap remove vnib-jobtap.so
kill -CONT "$BROKER_PID"
wait_for 10 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"active\"' >/dev/null"
resv "$dec"
expect_eq "the first reserve, in flight when the plugin left, made the job's reservation" \
    "$(jq -c '[.state, .vni_count]' <<<"$HTTP_BODY")" '["active",1]'
FIRST_VNIS=$(jq -c .vnis <<<"$HTTP_BODY")
echo "vnis-per-job = 2" >>"$T/flux.d/vnibroker.toml"
fluxc config reload
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "loaded again with vnis-per-job = 2, the plugin recovered the job and it ran" \
    "$(fluxc jobs -no {result} "$id")" COMPLETED
expect_eq "... with its reservation's VNI" \
    "$(flux_event "$id" cray-slingshot | jq -c .vnis)" "$FIRST_VNIS"
expect_match "... and the broker logged what the recovery asked otherwise" \
    "$(grep "reservation $dec: " "$BROKER_LOG")" 'differs in vni_count \(1 -> 2\)'
sed -i '/^vnis-per-job = 2$/d' "$T/flux.d/vnibroker.toml"
fluxc config reload
fluxc jobtap remove vnib-jobtap.so
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"

# ---- reconcile: a lost release is found and made ----------------------------
# A reservation our token made for a job this instance does not have (its
# release was lost: a job-manager killed with it in memory, a KVS that
# lost the job) is released by the next pass (every 2 s here); a running
# job's, and another token's, are left alone.
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"999999999999","uid":0,"user":"root","nodes":"fx0"}'
expect_eq "a reservation of a job Flux does not have (lost release)" "$HTTP_STATUS" 201
TOKEN=$ADMIN_TOKEN http POST /v1/reservations -d '{"job_id":"888","uid":0,"user":"root","nodes":"fx1"}'
expect_eq "... and one an admin made" "$HTTP_STATUS" 201
id=$(fluxc submit -N1 sleep 60)
fluxc job wait-event -t 30s "$id" start >/dev/null
dec=$(fluxc job id --to=dec "$id")
expect_eq "the plugin learnt its token's name from that job's reserve" \
    "$(flux_query | jq -r '.reconcile["token-name"]')" slurmctld
wait_for 15 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/999999999999 | jq -e '.state != \"active\"' >/dev/null"
resv 999999999999
expect_match "reconcile released the lost one" "$(jq -r .state <<<"$HTTP_BODY")" '^(releasing|released)$'
sleep 5
resv "$dec"
expect_eq "... not the running job's, after several passes" "$(jq -r .state <<<"$HTTP_BODY")" active
resv 888
expect_eq "... nor the admin's" "$(jq -r .state <<<"$HTTP_BODY")" active
expect_eq "the plugin counts one reconciled release" "$(flux_query | jq -r .counts.reconciled)" 1
expect_match "... and logs it" "$(cat "$T/flux.log")" 'reconcile: job 999999999999 is not active here but its reservation is; releasing it'
expect_eq "... and the running job is still running" "$(fluxc jobs -no {state} "$id")" RUN
fluxc cancel "$id"
fluxc job attach "$id" >/dev/null 2>&1

# ---- the instance stopped with a job running, the broker up ---------------
id=$(fluxc submit -N1 sleep 60)
fluxc job wait-event -t 30s "$id" start >/dev/null
dec=$(fluxc job id --to=dec "$id")
flux_stop
st=$(state_of "$dec")
expect_match "the instance stopped: the canceled job's reservation was released (state $st)" "$st" '^(releasing|released)$'

# ---- stopped with a job running and the broker down ------------------------
flux_start || { not_ok "flux starts again"; flux_dump_logs; finish; }
id=$(fluxc submit -N1 sleep 60)
fluxc job wait-event -t 30s "$id" start >/dev/null
dec2=$(fluxc job id --to=dec "$id")
kill -9 "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
flux_stop
expect_eq "stopped with the broker down: the release is in the spool on disk" "$(ls "$T/flux-spool")" "$dec2"
broker_start "$T/b.toml" || { not_ok "the broker restarts"; finish; }
expect_eq "... nothing released it meanwhile" "$(state_of "$dec2")" active
flux_start || { not_ok "flux starts again"; flux_dump_logs; finish; }
wait_for 10 sh -c "[ -z \"\$(ls $T/flux-spool)\" ]"
expect_eq "the restarted instance's plugin sent the spooled release" "$(ls "$T/flux-spool" | wc -l)" 0
st=$(state_of "$dec2")
expect_match "... the job's reservation is released (state $st)" "$st" '^(releasing|released)$'

flux_stop
finish
