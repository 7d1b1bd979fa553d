#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A broker outage at job end (issue 19, item 3): the node agent destroys the
# job's services from its own record without waiting on the broker, keeps
# its report in the spool instead of failing (which would drain every node
# of the job), and sends it when the broker is back: from `vnib-agent
# flush`, or from its next run.  Until then the job's VNIs stay
# quarantined.  A late report lands on the reservation it names even after
# the job was requeued; a report the broker refuses is dropped; a spool
# others could write is refused.  The node Epilog hook exits 0 and logs
# what the agent said.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
# A fixed port, so that the broker comes back where the agents look.
broker_pin_port "$T/b.toml"

for n in n1 n2; do agent_setup "$n" 2; done
# A fetch would wait its whole deadline with the broker down: make that
# long, so that an epilog which asked the broker could not pass for one
# that did not.
sed -i 's/^fetch_timeout_ms = .*/fetch_timeout_ms = 20000/' "$T/n1/agent.toml"
spooled () { ls "$T/$1/spool" 2>/dev/null | grep -c '\.json$'; }
reserve () { # JOB NODES
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1000,\"user\":\"alice\",\"nodes\":\"$2\",\"vni_count\":1}"
}

reserve s1 'n[1-2]'
expect_status "s1 reserved on n1 and n2" 201
R1=$(jq -r .id <<<"$HTTP_BODY")
V1=$(jq -r '.vnis[0]' <<<"$HTTP_BODY")
agent n1 prolog --job s1
expect_eq "n1 prolog" "$AGENT_RC" 0
agent n2 prolog --job s1
expect_eq "n2 prolog" "$AGENT_RC" 0
expect_eq "n1 holds a service per NIC" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 11

# ---- the broker goes down; the job ends ------------------------------------
broker_stop
start=$(date +%s%N)
agent n1 epilog --job s1
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "epilog with the broker down exits 0 (the node is clean)" "$AGENT_RC" 0
expect_eq "... its services are destroyed" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)" 00
expect_match "... it warns that the report is spooled" "$AGENT_ERR" \
    "warning: job s1: the broker did not take the report \(.*\); spooled in $T/n1/spool for 'vnib-agent flush'"
expect_eq "... one report is in the spool" "$(spooled n1)" 1
expect_eq "... the spool is root-only (0700, file 0600)" \
    "$(stat -c %a "$T/n1/spool") $(stat -c %a "$T/n1/spool"/*.json)" "700 600"
expect_eq "... the report says destroyed, for reservation $R1" \
    "$(jq -c '[.cxi, .reservation_id, .node]' "$T/n1/spool"/*.json)" "[\"destroyed\",$R1,\"n1\"]"
echo "# epilog with the broker down took $ms ms (spool_after_ms 500, fetch_timeout_ms 20000)"
expect_eq "... without asking the broker (the record says it all; a fetch waits 20 s)" \
    "$([ "$ms" -lt 15000 ] && echo yes || echo "no ($ms ms)")" yes

agent n2 housekeeping --job s1 --json
expect_eq "housekeeping (the Epilog's command) exits 0 too: no drain" "$AGENT_RC" 0
expect_eq "... its JSON says the report was spooled" "$(jq -r .report <<<"$AGENT_OUT")" spooled
expect_eq "... n2's report is spooled" "$(spooled n2)" 1

agent n1 epilog --job s-none
expect_eq "a job this node holds no record of: exit 0 with the broker down" "$AGENT_RC" 0
expect_match "... saying why nothing is to be destroyed" "$AGENT_ERR" "no record on this node, so its prolog made no service"

agent n1 flush
expect_eq "flush with the broker still down exits 3" "$AGENT_RC" 3
expect_match "... and says what is left" "$AGENT_OUT" "flush: 0 sent, 0 dropped, 1 left"
expect_eq "... keeping the report" "$(spooled n1)" 1

# ---- the broker is back -----------------------------------------------------
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/s1
expect_status "the scheduler releases s1" 202
expect_json "... its VNI stays quarantined: no node has reported" .state releasing

agent n1 flush
expect_eq "flush exits 0" "$AGENT_RC" 0
expect_match "... having sent n1's report" "$AGENT_OUT" "flush: 1 sent, 0 dropped, 0 left"
expect_eq "... the spool is empty" "$(spooled n1)" 0
TOKEN=$SCHED_TOKEN http GET /v1/reservations/s1
expect_json "s1 still waits on n2" .state releasing

# The job is requeued before n2 sends its report, and runs on n2 again.
reserve s1 'n[1-2]'
expect_status "s1 requeued: a new reservation" 201
R2=$(jq -r .id <<<"$HTTP_BODY")
agent n2 prolog --job s1
expect_eq "n2's prolog of the new reservation" "$AGENT_RC" 0
expect_eq "... sent the spooled report on its way" "$(spooled n2)" 0
TOKEN=$ADMIN_TOKEN http GET "/v1/vnis/$V1"
expect_json "the late report ended the old reservation's quarantine" .state free
expect_json "... it was reservation $R1's" .reservation.id "$R1"
TOKEN=$ADMIN_TOKEN http GET "/v1/events?job_id=s1&limit=100"
expect_eq "the events record n2's report on reservation $R1 and its quarantine's end" \
    "$(jq -c "[.events[] | select(.reservation_id == $R1 and (.action == \"quarantine_end\" or (.action == \"report\" and .node == \"n2\" and .detail.cxi == \"destroyed\"))) | .action] | sort" "$T/http.body")" \
    '["quarantine_end","report"]'
TOKEN=$SCHED_TOKEN http GET /v1/reservations/s1
expect_json "the new reservation is untouched" '[.id, .state] | map(tostring) | join(" ")' "$R2 active"

# ---- a refused report is dropped; an unsafe spool is refused ---------------
mkdir -p "$T/n1/spool"
printf '{"job_id":"gone","node":"n1","reservation_id":999999,"cxi":"destroyed"}' \
    >"$T/n1/spool/00000000000000999999_gone.json"
chmod 600 "$T/n1/spool/00000000000000999999_gone.json"
agent n1 flush
expect_eq "a report of an unknown job: flush exits 0" "$AGENT_RC" 0
expect_match "... dropping it" "$AGENT_OUT" "flush: 0 sent, 1 dropped, 0 left"
expect_match "... with a warning" "$AGENT_ERR" "spool: job gone: the broker refused the spooled destroyed report of reservation 999999"
expect_eq "... the spool is empty" "$(spooled n1)" 0

printf '{"job_id":"x","node":"n1","reservation_id":1,"cxi":"destroyed"}' >"$T/n1/spool/00000000000000000001_x.json"
chmod 777 "$T/n1/spool"
agent n1 flush
expect_eq "a spool others can write: flush fails (1)" "$AGENT_RC" 1
expect_match "... saying why" "$AGENT_ERR" "the report spool must be a directory of uid [0-9]+ that only its owner may write"
expect_eq "... sending nothing" "$(spooled n1)" 1
chmod 700 "$T/n1/spool"
chmod 666 "$T/n1/spool/00000000000000000001_x.json"
agent n1 flush
expect_match "a report file others can write is left, with a warning" "$AGENT_ERR" "not a regular file of this user that only its owner may write; left in place"
rm -f "$T/n1/spool/00000000000000000001_x.json"

# ---- the node Epilog hook, broker down --------------------------------------
if [ "$(id -u)" -ne 0 ]; then
    skip_all "the hook reads root's settings file"
fi
reserve s2 n1
agent n1 prolog --job s2
expect_eq "s2 prolog on n1" "$AGENT_RC" 0
HOOK=$T/vnib-slurm-hook
sed "s|@HOOKS_CONF@|$T/hooks.conf|" "$TOP/plugins/slurm/hook/vnib-slurm-hook.in" >"$HOOK"
chmod 755 "$HOOK"
{
    echo "VNIB_AGENT=$BUILD/vnib-agent"
    echo "AGENT_CONFIG=$T/%n/agent.toml"
    echo "EPILOG_RETRY_BUSY=1s"
    echo "LOGGER="
    echo "LOG_FILE=$T/hook.log"
} >"$T/hooks.conf"
chmod 644 "$T/hooks.conf"
broker_stop
ERR=$(env -i SLURM_SCRIPT_CONTEXT=epilog_slurmd SLURM_JOB_ID=s2 SLURMD_NODENAME=n1 \
    "$HOOK" 2>&1 >/dev/null)
expect_eq "the node Epilog with the broker down exits 0 (ON_BROKER_DOWN=fail): no drain" "$?" 0
expect_match "... the agent's warning is in the hook's log file" "$(cat "$T/hook.log" 2>&1)" \
    "warning vnibroker: epilog_slurmd job s2: the broker did not take the report .*spooled in $T/n1/spool"
expect_match "... and on stderr" "$ERR" "spooled in"
expect_eq "... the report is spooled" "$(spooled n1)" 1
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
agent n1 flush
expect_match "flush sends it" "$AGENT_OUT" "flush: 1 sent"
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/s2
expect_json "s2's release needs no quarantine: n1 confirmed" .state released
finish
