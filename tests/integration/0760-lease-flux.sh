#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Flux jobs and leases (docs/node-path.md, plugins/flux/README.md): the
# node side, vnib-flux-node, against a real three-broker Flux and a real
# broker.
#
#  - A broker without a lease key answers the plugin's "lease": true with
#    400 lease_disabled: the job starts as before (each node asks the
#    broker: a GET and its creating and created reports), the plugin says
#    so once and asks for no lease; the broker given a key and the plugin
#    loaded again, the next job carries a lease and its nodes ask the
#    broker nothing.
#  - The node side waits for the job's event as long as the prolog runs
#    (a reserve held 6 s by a stopped broker), and only as long as
#    RESERVATION_WAIT when that is set.
#  - By hand: the job's owner is Flux's (a FLUX_JOB_USERID that differs
#    is refused), a lease is refused on a node it does not name, and a
#    settings file that others may write, or that needs a shell, is
#    refused (exit 2).
#  - A job that fails before its reservation drains no node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
FLUX_LEASES=0 flux_cluster
broker_pin_port "$T/b.toml"
FLUX_RESERVE_TIMEOUT_MS=20000 flux_setup
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up, the broker without a lease key"

TASK_ENV='echo "$(flux getattr hostname) $(env | grep -E "^SLINGSHOT_VNIS=")"'
resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }
node_requests () {
    curl -sS --max-time 10 "$BROKER_URL/metrics" | awk '
        /^vnib_http_requests_total\{/ &&
        (/method="GET",route="\/v1\/reservations\/\{job_id\}"/ ||
         /method="PUT",route="\/v1\/reservations\/\{job_id\}\/nodes\/\{node\}"/) { n += $NF }
        END { print n + 0 }'
}
drained () { fluxc resource drain -no '{ranks}' | grep -c .; }

# ---- a broker that signs no leases -------------------------------------------
for k in 1 2; do
    before=$(node_requests)
    id=$(fluxc submit -N3 -o vnibroker.hwcoll=off sh -c "$TASK_ENV; sleep 1")
    fluxc job wait-event -t 30s "$id" start >/dev/null
    after=$(node_requests)
    fluxc job attach "$id" >"$T/nolease$k.out" 2>&1
    expect_eq "without leases, job $k completes" "$(fluxc jobs -no {result} "$id")" COMPLETED
done
expect_eq "... with its VNIs in every task" "$(grep -c 'SLINGSHOT_VNIS=30' "$T/nolease2.out")" 3
expect_eq "... its event has no lease" "$(flux_event "$id" vnibroker | jq -r 'has("lease")')" false
expect_eq "... and each node asked the broker as before (GET, creating, created)" "$((after - before))" 9
expect_eq "the plugin said once that the broker signs no leases" \
    "$(grep -c 'the broker signs no leases (lease_disabled)' "$T/flux.log")" 1
expect_eq "... and asks for none now" "$(flux_query | jq -r .leases)" false

# ---- the broker given a key: leases again ----------------------------------------
printf '\n[lease]\nkey_file = "%s"\n' "$T/lease.key" >>"$T/b.toml"
kill "$BROKER_PID" 2>/dev/null
wait "$BROKER_PID" 2>/dev/null
broker_start "$T/b.toml" || { not_ok "the broker restarts with a lease key"; finish; }
fluxc jobtap remove vnib-jobtap.so
fluxc jobtap load "$VNIB_FLUX_JOBTAP" || not_ok "flux jobtap load"
expect_eq "loaded again, the plugin asks for leases again" "$(flux_query | jq -r .leases)" true
before=$(node_requests)
id=$(fluxc submit -N3 -o vnibroker.hwcoll=off sh -c "$TASK_ENV; sleep 30")
fluxc job wait-event -t 30s "$id" start >/dev/null
after=$(node_requests)
dec=$(fluxc job id --to=dec "$id")
expect_match "the next job's event carries a lease" "$(flux_event "$id" vnibroker | jq -r '.lease // empty')" '^vnib1\.'
expect_eq "... and its nodes started it without a request to the broker" "$((after - before))" 0

# ---- by hand, on that running job ---------------------------------------------
node_by_hand () { # RANK CONF ARGS...: vnib-flux-node on rank RANK, for job $id
    nb_rank=$1
    nb_conf=$2
    shift 2
    fluxc exec -r "$nb_rank" env FLUX_JOB_ID="$id" FLUX_JOB_USERID="${NB_UID:-0}" \
        "$VNIB_FLUX_NODE" --config "$nb_conf" "$@" >"$T/hand.out" 2>"$T/hand.err"
    NB_RC=$?
    NB_ERR=$(cat "$T/hand.err")
}
NB_UID=4242 node_by_hand 0 "$T/flux-node.conf" prolog
expect_eq "a FLUX_JOB_USERID other than the job's owner is refused (1)" "$NB_RC" 1
expect_match "... saying Flux recorded another" "$NB_ERR" \
    "vnibroker: prolog job $id: FLUX_JOB_USERID=4242 is not the job's owner, uid 0 as its submit event has it"
node_by_hand 1 "$T/flux-node.conf" prolog
expect_eq "the job's own prolog again on fx1: done (its services reused)" "$NB_RC" 0
fluxc cancel "$id"
fluxc job attach "$id" >/dev/null 2>&1

id=$(fluxc submit -N1 --requires=host:fx0 -o vnibroker.hwcoll=off sleep 30)
fluxc job wait-event -t 30s "$id" start >/dev/null
node_by_hand 2 "$T/flux-node.conf" prolog
expect_eq "the job's lease on a node it does not name (fx2) is refused (1)" "$NB_RC" 1
expect_match "... saying so" "$NB_ERR" "lease refused: this node, fx2, is not in its node list; no services created"
expect_eq "... and nothing is made there" "$(sim_count fx2 cxi0)" 0
cp "$T/flux-node.conf" "$T/others.conf"
chmod 666 "$T/others.conf"
node_by_hand 0 "$T/others.conf" prolog
expect_eq "a settings file others may write is refused (2)" "$NB_RC" 2
expect_match "... naming it" "$NB_ERR" "$T/others.conf is writable by others; refusing"
printf 'AGENT_CONFIG=$(touch %s/ran)\n' "$T" >"$T/shell.conf"
node_by_hand 0 "$T/shell.conf" housekeeping
expect_eq "a settings file that needs a shell is refused (2)" "$NB_RC:$([ -e "$T/ran" ] && echo ran)" 2:
expect_match "... naming the line" "$NB_ERR" "$T/shell.conf:1: an expansion, escape or command needs a shell"
fluxc cancel "$id"
fluxc job attach "$id" >/dev/null 2>&1

# ---- the wait for the event -----------------------------------------------------
# The broker stopped: the plugin's reserve waits (reserve-timeout-ms 20 s),
# and so does the prolog, well past any fixed few seconds.
kill -STOP "$BROKER_PID"
t0=$(date +%s)
id=$(fluxc submit -N3 -o vnibroker.hwcoll=off true)
wait_for 10 sh -c "$FLUX job eventlog $id | grep -q 'prolog-start.*vnibroker'"
printf 'RESERVATION_WAIT=1\n' >"$T/wait.conf"
cat "$T/flux-node.conf" >>"$T/wait.conf"
node_by_hand 1 "$T/wait.conf" prolog
expect_eq "RESERVATION_WAIT=1: a prolog by hand gives up after a second (1)" "$NB_RC" 1
expect_match "... saying so" "$NB_ERR" "no vnibroker event within RESERVATION_WAIT \(1000 ms\)"
sleep 5
kill -CONT "$BROKER_PID"
fluxc job attach "$id" >/dev/null 2>&1
t1=$(date +%s)
expect_eq "the job's own prologs waited for the reserve ($((t1 - t0)) s) and it ran" \
    "$(fluxc jobs -no {result} "$id"):$([ $((t1 - t0)) -ge 6 ] && echo late)" COMPLETED:late
expect_eq "no node is drained" "$(drained)" 0

# ---- a job that fails before its reservation ------------------------------------
id=$(fluxc submit -N3 -o cray-slingshot.vnicount=42 true)
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "a job failed by its options" "$(fluxc jobs -no {result} "$id")" FAILED
expect_eq "... ends its nodes' prologs without draining any" "$(drained)" 0

flux_stop
finish
