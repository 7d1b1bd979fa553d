#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# D4: a requeue is safe with hardware collectives.  FM job ids are unique
# per reservation, "<prefix>-<job_id>-r<reservation_id>", so a job
# released while the FM is down and reserved again as soon as it is back
# gets an FM reservation of its own: the queued deletion of the old one
# never touches it, reconciliation never calls it lost, and the
# on_reservation_lost hook never runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux "
[hooks]
on_reservation_lost = [\"/bin/sh\", \"-c\", \"echo lost \$0 \$1 >> $T/hook.out\", \"{job_id}\", \"{fm_job_id}\"]
timeout_s = 5"
broker_migrate_start "$T/b.toml"

reserve () { # JOB
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\",\"hwcoll\":\"on\"}"
}
hw_state () { # JOB: the newest reservation's hwcoll state
    curl -s -H "Authorization: Bearer $SCHED_TOKEN" "$BROKER_URL/v1/reservations/$1" | jq -r .hwcoll.state
}
hw_state_is () { [ "$(hw_state "$1")" = "$2" ]; }
queue_empty () { [ "$(psql_q 'SELECT count(*) FROM fm_queue')" = 0 ]; }
queue_tried () { [ "$(psql_q 'SELECT coalesce(max(attempts), 0) FROM fm_queue')" -ge 1 ]; }
old_released () { [ "$(psql_q "SELECT hwcoll_state FROM reservations WHERE id = $RID1")" = released ]; }

# ---- the id format --------------------------------------------------------------------
reserve one
expect_json "a reservation with hardware collectives" .hwcoll.state reserved
ID_ONE=$(jq -r .id "$T/http.body")
expect_json "D4 the FM job id is <prefix>-<job_id>-r<reservation_id>" .hwcoll.fm_job_id "tux-one-r$ID_ONE"
expect_json "D4 ... as FI_CXI_COLL_JOB_ID" .environment.FI_CXI_COLL_JOB_ID "tux-one-r$ID_ONE"
expect_eq "D4 fmsim holds it under that id" "$(fm_ids | grep -c "^tux-one")" 1
wait_for 5 fm_has "tux-one-r$ID_ONE"
expect_eq "D4 ... exactly" "$(fm_ids | grep "^tux-one")" "tux-one-r$ID_ONE"

# ---- a requeue across an FM outage --------------------------------------------------------
reserve rq
expect_json "rq reserved with hardware collectives" .hwcoll.state reserved
RID1=$(jq -r .id "$T/http.body")
FM1=$(jq -r .hwcoll.fm_job_id "$T/http.body")
fm_fault '{"outage":"refuse"}'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/rq
expect_status "rq released while the FM is down" 200
expect_json "... its FM reservation is releasing" .hwcoll.state releasing
# The queue tries the deletion, finds the FM unreachable, and pauses.
wait_for 5 queue_tried
fm_fault '{"outage":"none"}'
reserve rq
expect_status "rq reserved again as soon as the FM is back (requeue)" 201
RID2=$(jq -r .id "$T/http.body")
expect_eq "... as a new reservation" "$([ "$RID2" != "$RID1" ] && echo new)" new
wait_for 10 hw_state_is rq reserved
TOKEN=$SCHED_TOKEN http GET /v1/reservations/rq
FM2=$(jq -r .hwcoll.fm_job_id "$T/http.body")
expect_json "the new reservation's hardware collectives are reserved" .hwcoll.state reserved
expect_eq "D4 the new reservation has its own FM job id, not the old one's ($FM1)" \
    "$([ "$FM2" != "$FM1" ] && echo differs)" differs
expect_eq "D4 ... <prefix>-rq-r<new id>" "$FM2" "tux-rq-r$RID2"

# The old deletion drains, and reconciliation runs after it.
wait_for 20 queue_empty
expect_eq "the FM queue drains" "$(psql_q 'SELECT count(*) FROM fm_queue')" 0
wait_for 10 old_released
expect_eq "the old reservation's FM job is released" \
    "$(psql_q "SELECT hwcoll_state FROM reservations WHERE id = $RID1")" released
n=$(metric "$BROKER_URL" vnib_fm_reconciles_total)
wait_for 15 reconciles_at_least "$BROKER_URL" $((n + 1))
expect_eq "a reconciliation ran after the queue drained" \
    "$(reconciles_at_least "$BROKER_URL" $((n + 1)) && echo ran)" ran
expect_eq "D4 the new reservation is still reserved after it (today: lost)" "$(hw_state rq)" reserved
fm_ids >"$T/fm.ids"
expect_eq "D4 the FM holds the new FM job" "$(grep -cxF -- "$FM2" "$T/fm.ids")" 1
expect_eq "D4 ... and not the old one" "$(grep -cxF -- "tux-rq-r$RID1" "$T/fm.ids")" 0
expect_eq "D4 the on_reservation_lost hook never ran" "$(cat "$T/hook.out" 2>/dev/null)" ""
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "D4 /v1/fabric-manager: the last reconciliation lost nothing" .last_reconcile.lost 0
expect_json "... and had no error" .last_reconcile.error null

# Release it: the new FM job goes, nothing else is left.
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/rq
wait_for 10 fm_lacks "$FM2"
expect_eq "releasing the requeued job deletes its FM job" "$(fm_ids | grep -c '^tux-rq')" 0
broker_stop
finish
