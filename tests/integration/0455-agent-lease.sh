#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A job's start from a lease (issue 43, docs/node-path.md): `vnib-agent
# prolog --lease` makes the job's services, record and environment on a
# 4-NIC simulated node with no request to the broker at all (counted in its
# /metrics), and refuses a lease of another owner, node, job or step, an
# altered, expired or unknown one, making nothing.  The end of a presumed
# reservation: a prolog killed (kill -9) between its first service and its
# record keeps the VNIs quarantined until the node's housekeeping, or
# after a reboot its `flush`, finds the services by owner and VNIs,
# destroys them and reports; a node that never ran the job ends its
# quarantine with `flush` (or an epilog without a record).  The program
# does not load libcurl: a lease start runs without its broker client.
#
# Leases are the broker's when it issues them (config.example.toml has a
# [lease] table); before that they are signed here with the same key, from
# the reservation as a node's GET renders it, and each node of the
# reservation reports `creating` when it is reserved, which is what a
# presumed reservation stands for.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

pg_start || exit 1
lease_keys
BROKER_LEASES=0
EXTRA=""
if grep -q '^\[lease\]' "$TOP/config.example.toml"; then
    BROKER_LEASES=1
    EXTRA=$(printf '\n[lease]\nkey_file = "%s"' "$T/lease.key")
fi
broker_up "$T/b.toml" "$(vni_pool 3000-3099)$EXTRA"
echo "# leases signed by $([ "$BROKER_LEASES" = 1 ] && echo "the broker" || echo "the test, reservations presumed by creating reports")"

LEASE_TOML="[lease]
public_keys = [\"$T/lease.pub\"]"
for n in n1 n2 n3 n9; do agent_setup "$n" 4 "$LEASE_TOML"; done

# reserve_leased JOB NODES NODE...: JOB reserved for uid 1000 on NODES (the
# NODEs, expanded) with its lease in $T/JOB.lease; sets VNIS and RES.
reserve_leased () {
    rl_job=$1
    rl_nodes=$2
    shift 2
    body="{\"job_id\":\"$rl_job\",\"uid\":1000,\"user\":\"alice\",\"nodes\":\"$rl_nodes\",\"vni_count\":2"
    if [ "$BROKER_LEASES" = 1 ]; then
        TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "$body,\"lease\":true}"
        jq -r .lease <<<"$HTTP_BODY" >"$T/$rl_job.lease"
    else
        TOKEN=$SCHED_TOKEN http POST /v1/reservations -d "$body}"
    fi
    [ "$HTTP_STATUS" = 201 ] || return 1
    VNIS=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
    RES=$(jq -r .id <<<"$HTTP_BODY")
    [ "$BROKER_LEASES" = 1 ] && return 0
    TOKEN=$(node_token "$1") http GET "/v1/reservations/$rl_job"
    lease_sign "$(jq -c 'del(.environment.FI_CXI_COLL_MCAST_TOKEN) + {hwcoll_fetch: false}' \
        "$T/http.body")" >"$T/$rl_job.lease"
    for rl_n; do
        TOKEN=$(node_token "$rl_n") http PUT "/v1/reservations/$rl_job/nodes/$rl_n" \
            -d '{"cxi":"creating"}'
        [ "$HTTP_STATUS" = 200 ] || return 1
    done
}
state_of () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    jq -r .state <<<"$HTTP_BODY"
}
release () {
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$1"
}

# ---- a job's start from its lease: no broker request --------------------------
reserve_leased l1 'n[1-3]' n1 n2 n3 || not_ok "l1 reserved with a lease"
L1_VNIS=$VNIS
before=$(broker_requests)
agent n1 prolog --job l1 --uid 1000 --ncores 8 --lease "@$T/l1.lease"
after=$(broker_requests)
expect_eq "prolog --lease exits 0" "$AGENT_RC" 0
expect_match "... says what it made" "$AGENT_OUT" "job l1: uid=1000 ncores=8 vnis=2 services cxi0:3 cxi1:3 cxi2:3 cxi3:3"
expect_eq "... without a single broker request" "$((after - before))" 0
expect_eq "cxi3 holds one service for uid 1000 with exactly the reserved VNIs" \
    "$(sim_svc n1 cxi3 "$L1_VNIS" | jq -c '[.uid, .vnis, .restricted_vnis, .restricted_members]')" \
    "[1000,[${L1_VNIS}],true,true]"
expect_eq "the record names the reservation, presumed" \
    "$(jq -c '[.reservation_id, .presumed, (.services | length)]' "$T/n1/state/jobs/l1.json")" "[$RES,true,4]"
expect_eq "the environment left for the tasks" \
    "$(head -n 4 "$T/n1/state/jobs/l1.env")" "export SLINGSHOT_VNIS=$L1_VNIS
export SLINGSHOT_DEVICES=cxi0,cxi1,cxi2,cxi3
export SLINGSHOT_SVC_IDS=3,3,3,3
export SLINGSHOT_TCS=0xa"
expect_eq "... owned by the job's user alone" "$(stat -c '%u %a' "$T/n1/state/jobs/l1.env")" "1000 400"
agent n1 env --job l1
expect_eq "... the same as the broker's reservation gives" "$(head -n 4 <<<"$AGENT_OUT")" \
    "$(head -n 4 "$T/n1/state/jobs/l1.env")"

before=$(broker_requests)
"$VNIB_AGENT" --config "$T/n2/agent.toml" prolog --job l1 --uid 1000 --lease - \
    <"$T/l1.lease" >"$T/out" 2>"$T/err"
expect_eq "prolog --lease - reads it from stdin" "$?:$(($(broker_requests) - before))" 0:0

# ---- refusals -------------------------------------------------------------------
LEASE=$(cat "$T/l1.lease")
refused () { # WHAT MESSAGE NODE ARGS...: refused, exit 1, nothing made
    rf_what=$1
    rf_msg=$2
    rf_node=$3
    shift 3
    agent "$rf_node" prolog "$@"
    expect_eq "$rf_what: refused (exit 1)" "$AGENT_RC" 1
    expect_match "... saying why" "$AGENT_ERR" "$rf_msg"
    expect_eq "... making nothing" "$(sim_count "$rf_node" cxi0):$(ls "$T/$rf_node/state/jobs" 2>/dev/null | grep -c "^$2[.+]")" 0:0
}
refused "another owner" "lease refused: its owner is uid 1000, not --uid 1001; no services created" \
    n3 --job l1 --uid 1001 --lease "$LEASE"
refused "a node outside its node list" "lease refused: this node, n9, is not in its node list" \
    n9 --job l1 --uid 1000 --lease "$LEASE"
refused "another job's lease" "lease refused: it is for job l1, not l2" \
    n3 --job l2 --uid 1000 --lease "$LEASE"
refused "the job's lease for a step" "lease refused: it is for the job, not for step 0" \
    n3 --job l1 --step 0 --uid 1000 --lease "$LEASE"
PAYLOAD=$(lease_payload "$LEASE")
altered=$(jq -c '.uid = 1001' <<<"$PAYLOAD" | basenc --base64url -w0 | tr -d '=')
refused "an altered lease" "lease refused: the signature does not verify" \
    n3 --job l1 --uid 1001 --lease "vnib1.$altered.${LEASE##*.}"
refused "an expired lease" "lease refused: expired [0-9]+ s ago" \
    n3 --job l1 --uid 1000 --lease "$(lease_sign "$(jq -c 'del(.v, .kid, .iat, .exp)' <<<"$PAYLOAD")" 60 $(($(date +%s) - 600)))"
(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/other.key" 2>/dev/null)
refused "a lease of a key the node does not have" "lease refused: signed by key [0-9a-f]{16}, which this node does not have" \
    n3 --job l1 --uid 1000 --lease "$(LEASE_KEY=$T/other.key lease_sign "$(jq -c 'del(.v, .kid, .iat, .exp)' <<<"$PAYLOAD")")"
mv "$T/lease.pub" "$T/lease.pub.away"
agent n3 prolog --job l1 --uid 1000 --lease "$LEASE"
expect_eq "a key file that is not there: a configuration error (2)" "$AGENT_RC" 2
expect_match "... naming it" "$AGENT_ERR" "lease.public_keys: $T/lease.pub: "
mv "$T/lease.pub.away" "$T/lease.pub"
agent n3 prolog --job l1 --lease "$LEASE"
expect_eq "--lease without --uid is a usage error (2)" "$AGENT_RC" 2
agent n3 prolog --job l1 --uid 1000 --lease "@$T/nonexistent"
expect_eq "--lease @FILE that cannot be read: 2" "$AGENT_RC:$(grep -c . <<<"$AGENT_ERR")" 2:1

# ---- the job's end ----------------------------------------------------------------
agent n1 epilog --job l1
expect_eq "n1's epilog" "$AGENT_RC:$(sim_count n1 cxi0)" 0:0
expect_eq "... leaves a tombstone until the lease expires, plus the skew" \
    "$(cat "$T/n1/spool/$RES.ended" 2>/dev/null)" "$(($(lease_payload "$LEASE" | jq .exp) + 30))"
# A replay of the lease after the node reported: its VNIs may be cooling,
# and a service made now would outlive the quarantine.
refused "the lease again after the job ended on the node" \
    "lease refused: its reservation $RES already ended on this node" \
    n1 --job l1 --uid 1000 --lease "$LEASE"
agent n2 epilog --job l1
release l1
expect_status "l1 released" 202
expect_json "... n3 never started it: it stays quarantined" .state releasing
TOKEN=$(node_token n3) http GET /v1/nodes/n3
expect_eq "n3's view lists l1 waiting on it" \
    "$(jq -c --arg r "$RES" '[.reservations[] | select(.id == ($r | tonumber)) | [.state, .cleanup_needed, (.vnis | join(","))]]' <<<"$HTTP_BODY")" \
    "[[\"releasing\",true,\"$L1_VNIS\"]]"
agent n3 --dry-run flush
expect_eq "flush --dry-run exits 0" "$AGENT_RC" 0
expect_match "... says what it would do" "$AGENT_OUT" "sweep: job l1 \\(reservation $RES\\): would destroy 0 service\\(s\\); would report destroyed"
expect_eq "... and does not" "$(state_of l1)" releasing
agent n3 flush
expect_eq "flush on the node that never ran l1 exits 0" "$AGENT_RC" 0
expect_match "... reporting it clean" "$AGENT_OUT" "sweep: job l1 \\(reservation $RES\\): destroyed 0 service\\(s\\); report destroyed"
expect_eq "... which ends l1's quarantine" "$(state_of l1)" released

# An epilog without a record asks the broker, and reports too.
reserve_leased l5 'n[1-2]' n1 n2 || not_ok "l5 reserved"
agent n1 prolog --job l5 --uid 1000 --lease "@$T/l5.lease"
agent n1 epilog --job l5
release l5
agent n2 epilog --job l5
expect_eq "an epilog on a node without l5's record exits 0" "$AGENT_RC" 0
expect_match "... and reports it clean" "$AGENT_OUT" "job l5: destroyed 0 service\\(s\\)"
expect_eq "... ending the quarantine" "$(state_of l5)" released

# ---- kill -9 between a service and its record ------------------------------------
# prolog_killed NODE JOB: the prolog stops after cxi2's service (the sim's
# stop_after_alloc fault) and is killed there.
prolog_killed () {
    sim_jq "$1" cxi2 '.faults.stop_after_alloc = 1'
    "$VNIB_AGENT" --config "$T/$1/agent.toml" prolog --job "$2" --uid 1000 \
        --lease "@$T/$2.lease" >"$T/killed.out" 2>&1 &
    pk_pid=$!
    wait_for 10 stopped "$pk_pid" || not_ok "the prolog stops after cxi2's service"
    kill -9 "$pk_pid"
    wait "$pk_pid" 2>/dev/null
}
reserve_leased l2 'n[1-2]' n1 n2 || not_ok "l2 reserved"
L2_VNIS=$VNIS
prolog_killed n1 l2
expect_eq "killed after cxi0-cxi2 had their service, before cxi3" \
    "$(sim_count n1 cxi0)$(sim_count n1 cxi1)$(sim_count n1 cxi2)$(sim_count n1 cxi3)" 1110
expect_eq "... its record (written first) names the reservation, no service" \
    "$(jq -c '[.reservation_id, .services]' "$T/n1/state/jobs/l2.json")" "[$RES,[]]"
agent n2 prolog --job l2 --uid 1000 --lease "@$T/l2.lease"
agent n2 epilog --job l2
release l2
expect_json "l2 released: its VNIs stay quarantined" .state releasing
TOKEN=$ADMIN_TOKEN http GET "/v1/vnis/${L2_VNIS%%,*}"
expect_json "... the VNI is quarantined" .state quarantined
agent n1 housekeeping --job l2
expect_eq "n1's housekeeping exits 0" "$AGENT_RC" 0
expect_match "... finding the three services by owner and VNIs" "$AGENT_OUT" "job l2: destroyed 3 service\\(s\\)"
expect_eq "... none is left" "$(sim_count n1 cxi0)$(sim_count n1 cxi2)" 00
expect_eq "... and the quarantine ends" "$(state_of l2)" released

# The same, and the node reboots (its state directory is on tmpfs): flush.
reserve_leased l3 'n[1-2]' n1 n2 || not_ok "l3 reserved"
R3=$RES
prolog_killed n1 l3
rm -rf "$T/n1/state"
agent n2 prolog --job l3 --uid 1000 --lease "@$T/l3.lease"
agent n2 epilog --job l3
release l3
expect_json "l3 released while n1 holds services it has no record of" .state releasing
agent n1 flush
expect_eq "n1's flush exits 0" "$AGENT_RC" 0
expect_match "... destroying them by their VNIs" "$AGENT_OUT" "sweep: job l3 \\(reservation $R3\\): destroyed 3 service\\(s\\); report destroyed"
expect_eq "... none is left" "$(sim_count n1 cxi0)$(sim_count n1 cxi1)$(sim_count n1 cxi2)" 000
expect_eq "... and the quarantine ends" "$(state_of l3)" released
agent n1 flush
expect_match "a second flush has nothing to sweep" "$AGENT_RC:$AGENT_OUT" "^0:flush: 0 sent, 0 dropped, 0 left$"

# ---- a step from its lease ------------------------------------------------------------
reserve_leased l6 'n[1-2]' n1 n2 || not_ok "l6 reserved"
L6_VNIS=$VNIS
if [ "$BROKER_LEASES" = 1 ]; then
    TOKEN=$SCHED_TOKEN http PUT /v1/reservations/l6/steps/0 -d '{"nodes":"n1","vni_count":1,"lease":true}'
    jq -r .lease <<<"$HTTP_BODY" >"$T/l6.0.lease"
else
    TOKEN=$SCHED_TOKEN http PUT /v1/reservations/l6/steps/0 -d '{"nodes":"n1","vni_count":1}'
    TOKEN=$(node_token n1) http GET /v1/reservations/l6/steps/0
    lease_sign "$(jq -c '. + {hwcoll_fetch: false}' "$T/http.body")" >"$T/l6.0.lease"
    TOKEN=$(node_token n1) http PUT /v1/reservations/l6/steps/0/nodes/n1 -d '{"cxi":"creating"}'
fi
S0_VNI=$(TOKEN=$SCHED_TOKEN http GET /v1/reservations/l6/steps/0; jq -r '.vnis[0]' <<<"$HTTP_BODY")
before=$(broker_requests)
agent n1 prolog --job l6 --step 0 --uid 1000 --lease "@$T/l6.0.lease"
expect_eq "a step's prolog from its lease exits 0, with no request" \
    "$AGENT_RC:$(($(broker_requests) - before))" 0:0
expect_eq "... its services hold the step's VNI, then the job's" \
    "$(sim_svc n1 cxi1 "$S0_VNI,$L6_VNIS" | jq -c .vnis)" "[$S0_VNI,$L6_VNIS]"
refused "the step's lease for the job" "lease refused: it is for step 0, not for the job" \
    n2 --job l6 --uid 1000 --lease "@$T/l6.0.lease"
agent n1 epilog --job l6 --step 0
expect_eq "the step's end destroys its services" "$AGENT_RC:$(sim_count n1 cxi1)" 0:0
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/l6/steps/0
TOKEN=$SCHED_TOKEN http GET /v1/reservations/l6/steps/0
expect_json "... and reports on the step's route: the step is released at once" .state released

# ---- nothing loaded where nothing is called ------------------------------------------
expect_eq "vnib-agent does not link libcurl" "$(ldd "$VNIB_AGENT" | grep -c libcurl)" 0
mkdir "$T/bin"
cp "$VNIB_AGENT" "$T/bin/"
reserve_leased l7 n1 n1 || not_ok "l7 reserved"
agent_bin () { "$T/bin/vnib-agent" --config "$T/n1/agent.toml" "$@" >"$T/out" 2>"$T/err"; }
agent_bin prolog --job l7 --uid 1000 --lease "@$T/l7.lease"
expect_eq "a lease start needs no client of the broker at all (none beside the program)" "$?" 0
agent_bin epilog --job l7
expect_eq "... a command that asks the broker does (2)" "$?" 2
expect_match "... saying where it looked" "$(cat "$T/err")" "vnib-agent-broker.so: not in $T/bin nor in $T/bin/../lib/vnibroker"
cp "$BUILD/vnib-agent-broker.so" "$T/bin/"
chmod 664 "$T/bin/vnib-agent-broker.so"
agent_bin epilog --job l7
expect_eq "a client that its group may write is refused (2)" "$?" 2
expect_match "... saying why" "$(cat "$T/err")" "vnib-agent-broker.so: refused: owned by uid 0, mode 0664"
chmod 644 "$T/bin/vnib-agent-broker.so"
agent_bin epilog --job l7
expect_eq "with it, the epilog exits 0" "$?" 0
TOKEN=$SCHED_TOKEN http GET /v1/reservations/l7
expect_json "... and the broker has n1's report" .cleanup.destroyed 1

# ---- hwcoll_fetch: the one request a lease start may make ----------------------------
lease_sign "$(lease_payload "$(cat "$T/l6.lease")" | jq -c 'del(.v, .kid, .iat, .exp) + {hwcoll_fetch: true}')" >"$T/l6.hw.lease"
before=$(broker_requests)
agent n2 prolog --job l6 --uid 1000 --lease "@$T/l6.hw.lease"
expect_eq "a lease with hwcoll_fetch: one GET, exit 0" "$AGENT_RC:$(($(broker_requests) - before))" 0:1
expect_eq "... and no hardware collectives for a job without them" \
    "$(grep -c '^export FI_CXI' "$T/n2/state/jobs/l6.env")" 0

finish
