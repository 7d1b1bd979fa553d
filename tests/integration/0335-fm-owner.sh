#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# D5: reconciliation goes by ownership, not by prefix.  Two clusters,
# "tux" and "tux-a", each with its own database, share one Fabric Manager.
# tux's reconciliation must neither delete tux-a's FM jobs (whose ids also
# start with "tux-") nor an FM job with our prefix that no database of ours
# knows; tux-a's reservation stays reserved.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
pg_createdb vnib2 || { not_ok "second database"; finish; }
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/tux.toml" tux
hwcoll_config "$T/tuxa.toml" tux-a
sed -i 's/dbname=vnibroker/dbname=vnib2/' "$T/tuxa.toml"
broker_migrate "$T/tux.toml" || { not_ok "migrate tux"; finish; }
broker_migrate "$T/tuxa.toml" || { not_ok "migrate tux-a"; finish; }
broker_start_as TUX "$T/tux.toml" tux
broker_start_as TUXA "$T/tuxa.toml" tux-a

reserve () { # URL JOB
    BROKER_URL=$1 TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$2\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\",\"hwcoll\":\"on\"}"
}
queue_empty () { [ "$(psql_q 'SELECT count(*) FROM fm_queue')" = 0 ]; }
hw_state () { # URL JOB
    curl -s -H "Authorization: Bearer $SCHED_TOKEN" "$1/v1/reservations/$2" | jq -r .hwcoll.state
}

reserve "$URL_TUXA" 42
expect_status "tux-a reserves job 42" 201
expect_json "... with hardware collectives" .hwcoll.state reserved
FM42=$(jq -r .hwcoll.fm_job_id "$T/http.body")
expect_match "... FM job tux-a-42(-r<id>)" "$FM42" '^tux-a-42(-r[0-9]+)?$'
reserve "$URL_TUX" 7
expect_status "tux reserves job 7" 201
expect_json "... with hardware collectives" .hwcoll.state reserved
FM7=$(jq -r .hwcoll.fm_job_id "$T/http.body")
# An FM job with tux's prefix that no database knows: someone else's.
curl -s -o /dev/null -X POST -d '{"jobID":"tux-999","mcastLimit":2}' \
    "$FM_URL/fabric/collectives/jobs"
expect_eq "fmsim holds tux-999, tux-a's and tux's jobs" "$(fm_ids | tr '\n' ' ')" \
    "$(printf '%s\n' tux-999 "$FM42" "$FM7" | sort | tr '\n' ' ')"

# Let tux reconcile three more times (every 5 s); tux-a reconciles too.
n=$(metric "$URL_TUX" vnib_fm_reconciles_total)
wait_for 25 reconciles_at_least "$URL_TUX" $((n + 3))
expect_eq "tux reconciled three times" "$(reconciles_at_least "$URL_TUX" $((n + 3)) && echo yes)" yes
# Whatever was queued is done by now.
wait_for 10 queue_empty
fm_ids >"$T/fm.ids"
expect_eq "D5 tux's reconciliation left tux-a's FM job $FM42 alone" "$(grep -cxF -- "$FM42" "$T/fm.ids")" 1
expect_eq "D5 tux's reconciliation left tux-999 (ours by prefix, unknown to tux) alone" \
    "$(grep -cxF tux-999 "$T/fm.ids")" 1
expect_eq "tux's own job is still there" "$(grep -cxF -- "$FM7" "$T/fm.ids")" 1
expect_eq "D5 tux-a's job 42 stays reserved (today: lost)" "$(hw_state "$URL_TUXA" 42)" reserved
expect_eq "tux's job 7 stays reserved" "$(hw_state "$URL_TUX" 7)" reserved
expect_eq "D5 no FM job was deleted at all" \
    "$(curl -s "$FM_ADMIN/fmsim/state" | jq '.counters.requests["DELETE /fabric/collectives/jobs/{jobID}"] // 0')" 0
fm_status "$URL_TUX" "$MONITOR_TOKEN"
expect_eq "D5 tux's /v1/fabric-manager: the last reconciliation had no error" \
    "$(jq -r .last_reconcile.error "$T/fmstatus.json")" null
expect_eq "D5 ... it released nothing" "$(jq -r .last_reconcile.released "$T/fmstatus.json")" 0
expect_eq "D5 ... no FM error" "$(jq -r .last_error "$T/fmstatus.json")" null
expect_eq "... connection up" "$(jq -r .connection "$T/fmstatus.json")" up
fm_status "$URL_TUXA" "$MONITOR_TOKEN"
expect_eq "D5 tux-a's reconciliation lost nothing" "$(jq -r .last_reconcile.lost "$T/fmstatus.json")" 0
expect_eq "D5 tux-a's lost count stays 0" "$(metric "$URL_TUXA" vnib_hwcoll_lost_total)" 0

# Each cluster still releases its own.
BROKER_URL=$URL_TUX TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/7
wait_for 10 fm_lacks "$FM7"
expect_eq "tux's release deletes its own FM job" "$(fm_ids | grep -cxF -- "$FM7")" 0
expect_eq "... and only that" "$(fm_ids | tr '\n' ' ')" "$(printf '%s\n' tux-999 "$FM42" | sort | tr '\n' ' ')"
BROKER_PID=$PID_TUXA
broker_stop
BROKER_PID=$PID_TUX
broker_stop
finish
