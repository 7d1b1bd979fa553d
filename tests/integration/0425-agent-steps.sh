#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node agent's --step (issue 15) against a real broker on a real
# PostgreSQL, with simulated NICs: a step's services hold the step's VNIs
# then the job's, under its own record; two steps of one job on one node
# keep distinct services (the second, whose job VNI the NIC already holds
# in the first's service, gets its own VNI only, as libcxi up to SHS 14.0.0
# allows); reports go to the step's route, so a released step leaves
# quarantine when its node says destroyed; a step's end report is spooled
# while the broker is down and flushed to the step's route; a node outside
# the step is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
broker_pin_port "$T/b.toml"

agent_setup n1 2
agent_setup n2 2
step_state () { # JOB STEP
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1/steps/$2"
    jq -r .state <<<"$HTTP_BODY"
}

TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"j1","uid":1000,"user":"alice","nodes":"n[1-2]","vni_count":1}'
expect_status "j1 reserved with one job VNI" 201
JV=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
TOKEN=$SCHED_TOKEN http PUT /v1/reservations/j1/steps/0 -d '{"nodes":"n[1-2]","vni_count":1}'
expect_status "step 0 reserved on n1 and n2" 201
S0=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
R0=$(jq -r .id <<<"$HTTP_BODY")
TOKEN=$SCHED_TOKEN http PUT /v1/reservations/j1/steps/1 -d '{"nodes":"n1","vni_count":1}'
expect_status "step 1 reserved on n1" 201
S1=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")

# ---- a step's start ----------------------------------------------------------
agent n1 prolog --job j1 --step 0 --ncores 4
expect_eq "prolog --step 0 exits 0" "$AGENT_RC" 0
expect_match "... naming the step" "$AGENT_OUT" "job j1 step 0: uid=1000 ncores=4 vnis=2 services cxi0:"
for nic in cxi0 cxi1; do
    expect_eq "$nic holds step 0's service: its VNI, then the job's, for uid 1000" \
        "$(sim_svc n1 $nic "$S0,$JV" | jq -c '[.uid, .vnis]')" "[1000,[$S0,$JV]]"
done
expect_eq "... under the step's own record" \
    "$(jq -c '[.job_id, .step_id, .reservation_id, .vnis]' "$T/n1/state/jobs/j1+0.json")" \
    "[\"j1\",\"0\",$R0,[$S0,$JV]]"
agent n1 env --job j1 --step 0 --format json
expect_eq "env --step 0: SLINGSHOT_VNIS is the step's then the job's" \
    "$(jq -r .SLINGSHOT_VNIS <<<"$AGENT_OUT")" "$S0,$JV"
agent n1 --json list
expect_eq "n1 holds two user services" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 11

agent n1 prolog --job j1 --step 1
expect_eq "prolog --step 1 on the same node exits 0" "$AGENT_RC" 0
expect_match "... warning that the NIC holds the job's VNI in step 0's service" "$AGENT_ERR" \
    "warning: job j1 step 1: .*so the step gets its own VNIs, without the job's"
expect_eq "... its service holds its own VNI" "$(sim_svc n1 cxi1 "$S1" | jq -c .vnis)" "[$S1]"
expect_eq "... beside step 0's (two services per NIC)" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 22
expect_eq "... and its own record" "$(jq -c .vnis "$T/n1/state/jobs/j1+1.json")" "[$S1]"

agent n2 prolog --job j1 --step 1
expect_eq "n2 is not in step 1: refused (exit 1)" "$AGENT_RC" 1
expect_match "... by the broker" "$AGENT_ERR" "prolog: refused: forbidden: node n2 is not in step 1"
expect_eq "... and makes nothing" "$(sim_count n2 cxi0)" 0

# ---- a step's end ------------------------------------------------------------
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j1/steps/0
expect_status "the scheduler ends step 0" 202
expect_eq "step 0 is quarantined while n1 holds its services" "$(step_state j1 0)" releasing
agent n1 epilog --job j1 --step 0
expect_eq "epilog --step 0 exits 0" "$AGENT_RC" 0
expect_eq "... saying what it destroyed" "$AGENT_OUT" "job j1 step 0: destroyed 2 service(s)"
expect_eq "... only step 0's: step 1's stay" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 11
expect_eq "... and its record is gone" "$(ls "$T/n1/state/jobs/" | grep -c '^j1+0')" 0
expect_eq "the broker took the report on the step's route: step 0 released" \
    "$(step_state j1 0)" released

# ---- the broker down at a step's end ----------------------------------------
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j1/steps/1
expect_status "the scheduler ends step 1" 202
broker_stop
agent n1 epilog --job j1 --step 1
expect_eq "epilog --step 1 with the broker down exits 0" "$AGENT_RC" 0
expect_eq "... its services are destroyed" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 00
expect_eq "... and the report is spooled with its step" \
    "$(jq -c '[.job_id, .step_id, .cxi]' "$T/n1/spool"/*.json)" '["j1","1","destroyed"]'
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
expect_eq "step 1 is still quarantined" "$(step_state j1 1)" releasing
agent n1 flush
expect_eq "flush exits 0" "$AGENT_RC" 0
expect_match "... having sent the report" "$AGENT_OUT" "flush: 1 sent, 0 dropped, 0 left"
expect_eq "... to the step's route: step 1 released" "$(step_state j1 1)" released

finish
