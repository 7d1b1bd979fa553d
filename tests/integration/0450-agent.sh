#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node agent against a real broker on a real PostgreSQL, with simulated
# NICs: prolog, env and epilog for a job on a 4-NIC node; idempotent
# prolog; scale-back on a short NIC and failure below the floor; a node
# token asking for another node's job; the broker unreachable; the env
# formats byte for byte, including the cleared case.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"

agent_setup n1 4
agent_setup n2 4
agent_setup n9 1
reserve () { # JOB NODES [VNI_COUNT] [UID]
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":${4:-1000},\"user\":\"alice\",\"nodes\":\"$2\"${3:+,\"vni_count\":$3}}"
}

# ---- the whole life of a job on one node -----------------------------------
reserve j1 "n[1-2]" 2
expect_status "j1 reserved" 201
J1_VNIS=$(printf '%s' "$HTTP_BODY" | jq -r '.vnis | join(",")')

agent n1 prolog --job j1 --ncores 8
expect_eq "prolog exits 0" "$AGENT_RC" 0
expect_match "prolog says what it made" "$AGENT_OUT" "job j1: uid=1000 ncores=8 vnis=2 services cxi0:3 cxi1:3 cxi2:3 cxi3:3"
svc=$(sim_svc n1 cxi2 "$J1_VNIS")
expect_eq "cxi2 holds one service for uid 1000 with exactly the reserved VNIs" \
    "$(printf '%s' "$svc" | jq -c '[.uid, .vnis, .restricted_vnis, .restricted_members]')" \
    "[1000,[${J1_VNIS}],true,true]"
expect_eq "traffic classes are the reservation's (LL+BE)" "$(printf '%s' "$svc" | jq -c .tcs)" 10
expect_eq "reservations follow HPE's table at 8 cores" \
    "$(printf '%s' "$svc" | jq -c '[.res.txq, .res.tgq, .res.eq, .res.ct, .res.pte, .res.le, .res.ac]')" \
    "[16,8,16,8,48,128,16]"
expect_eq "maxima are clamped to the NIC minus its system service" \
    "$(printf '%s' "$svc" | jq -c '[.max.txq, .max.tgq, .max.pte, .max.le, .max.ac]')" \
    "[960,480,1984,15360,1006]"
TOKEN=$SCHED_TOKEN http GET /v1/reservations/j1
expect_json "the broker has n1's created report" .cleanup.created 1
TOKEN=$(node_token n1) http GET /v1/nodes/n1
expect_json "... with its four services" '[.reservations[0].services[].device] | join(",")' cxi0,cxi1,cxi2,cxi3

agent n1 prolog --job j1 --ncores 8
expect_eq "a second prolog exits 0" "$AGENT_RC" 0
expect_match "... and reuses the services" "$AGENT_OUT" "cxi0:3\\(reused\\) cxi1:3\\(reused\\) cxi2:3\\(reused\\) cxi3:3\\(reused\\)"
expect_eq "... no second service appears" "$(sim_count n1 cxi0)" 1

# The lines that clear the hardware collectives' variables.
UNSET_HWCOLL="unset FI_CXI_COLL_JOB_ID
unset FI_CXI_COLL_JOB_STEP_ID
unset FI_CXI_COLL_MCAST_TOKEN
unset FI_CXI_COLL_FABRIC_MGR_URL
unset FI_CXI_HWCOLL_ADDRS_PER_JOB
unset FI_CXI_HWCOLL_MIN_NODES"
agent n1 env --job j1
expect_eq "env (export) byte for byte" "$AGENT_OUT" "export SLINGSHOT_VNIS=$J1_VNIS
export SLINGSHOT_DEVICES=cxi0,cxi1,cxi2,cxi3
export SLINGSHOT_SVC_IDS=3,3,3,3
export SLINGSHOT_TCS=0xa
$UNSET_HWCOLL"
agent n1 env --job j1 --format slurm-taskprolog
expect_eq "env (slurm-taskprolog) is the same lines" "$(head -n 2 <<<"$AGENT_OUT")" "export SLINGSHOT_VNIS=$J1_VNIS
export SLINGSHOT_DEVICES=cxi0,cxi1,cxi2,cxi3"
agent n1 env --job j1 --format json
expect_eq "env (json) gives null for cleared" "$(jq -c '[.SLINGSHOT_SVC_IDS, .FI_CXI_COLL_JOB_ID]' <<<"$AGENT_OUT")" '["3,3,3,3",null]'
agent n1 env --job j1 --format yaml
expect_eq "an unknown format is a usage error (2)" "$AGENT_RC" 2

envfile=$T/n1/state/jobs/j1.env
expect_eq "the prolog left the job's environment for the task hooks" \
    "$(stat -c '%u %a' "$envfile")" "1000 400"
expect_eq "... in the TaskProlog format" "$(head -n 1 "$envfile")" "export SLINGSHOT_VNIS=$J1_VNIS"
expect_eq "its own record is root's alone" "$(stat -c '%u %a' "$T/n1/state/jobs/j1.json")" "0 600"

agent n1 epilog --job j1
expect_eq "epilog exits 0" "$AGENT_RC" 0
expect_match "... destroyed the four services" "$AGENT_OUT" "destroyed 4 service"
expect_eq "... none is left on any NIC" "$(sim_count n1 cxi0)$(sim_count n1 cxi3)" 00
expect_eq "... the job's files are gone" "$(ls "$T/n1/state/jobs")" ""
TOKEN=$SCHED_TOKEN http GET /v1/reservations/j1
expect_json "the broker has n1 destroyed" .cleanup.destroyed 1

TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/j1
expect_status "release j1: n1 is clean, n2 never touched its NICs" 200
expect_json "... so it is released at once" .state released

# ---- no VNIs: the environment is cleared, nothing leaks --------------------
reserve j0 n1 0
expect_status "a job with no VNIs" 201
agent n1 prolog --job j0
expect_eq "prolog of a 0-VNI job exits 0" "$AGENT_RC" 0
expect_eq "... creates no service" "$(sim_count n1 cxi0)" 0
agent n1 env --job j0
expect_eq "env clears every variable (byte for byte)" "$AGENT_OUT" "unset SLINGSHOT_VNIS
unset SLINGSHOT_DEVICES
unset SLINGSHOT_SVC_IDS
unset SLINGSHOT_TCS
$UNSET_HWCOLL"
agent n1 env --job never-reserved
expect_eq "env for a job the broker does not know clears them too" "$AGENT_RC:$(grep -c '^unset' <<<"$AGENT_OUT")" 0:10
expect_eq "a user reads the cleared file root left" \
    "$(setpriv --reuid=1000 --regid=1000 --clear-groups "$VNIB_AGENT" --config "$T/n1/agent.toml" env --job j0 | head -n 1)" \
    "unset SLINGSHOT_VNIS"

# ---- a node token for another node's job -----------------------------------
reserve j2 n2 1
agent n1 prolog --job j2
expect_eq "n1 asking for n2's job is refused (exit 1)" "$AGENT_RC" 1
expect_match "... saying why" "$AGENT_ERR" "not in job j2's node list"
expect_eq "... and n1's NICs are untouched" "$(sim_count n1 cxi0)" 0

# ---- --uid must match the broker's owner ------------------------------------
agent n2 prolog --job j2 --uid 1234
expect_eq "a scheduler uid that disagrees with the broker is refused" "$AGENT_RC" 1
expect_eq "... before any NIC is touched" "$(sim_count n2 cxi0)" 0

# ---- scale-back on a short NIC, and the floor -------------------------------
# Another job's service on cxi1 of n2 reserves all but 184 PTEs.
sim_jq n2 cxi1 '.services += [{"svc_id": 50, "uid": 2000, "vnis": [7], "restricted_vnis": true, "resource_limits": true, "max": {"pte": 1800}, "res": {"pte": 1800}}]'
agent n2 prolog --job j2 --ncores 64
expect_eq "prolog on a short NIC still succeeds" "$AGENT_RC" 0
expect_match "... warning with the figures" "$AGENT_ERR" "cxi1: NIC short, scaled back: pte 384->184"
J2_VNI=$(TOKEN=$SCHED_TOKEN http GET /v1/reservations/j2; jq -r '.vnis[0]' <<<"$HTTP_BODY")
expect_eq "... cxi1's service reserves what there was" "$(sim_svc n2 cxi1 "$J2_VNI" | jq .res.pte)" 184
expect_eq "... the other NICs the full request" "$(sim_svc n2 cxi0 "$J2_VNI" | jq .res.pte)" 384
agent n2 epilog --job j2
expect_eq "epilog cleans up" "$AGENT_RC" 0
reserve j4 n2 1
sim_jq n2 cxi3 '.services += [{"svc_id": 50, "uid": 2000, "vnis": [8], "restricted_vnis": true, "resource_limits": true, "max": {"pte": 1944}, "res": {"pte": 1944}}]'
agent n2 prolog --job j4 --ncores 64
expect_eq "a NIC below the floor (25%) fails the prolog (exit 1)" "$AGENT_RC" 1
expect_match "... naming the resource and floor" "$AGENT_ERR" "cxi3: cannot reserve the job's resources: below the floor: pte 40 available, floor 96 \\(25% of 384\\)"
expect_eq "... and destroys what it had made on the other NICs" "$(sim_count n2 cxi0)$(sim_count n2 cxi1)$(sim_count n2 cxi2)" 010
TOKEN=$(node_token n2) http GET /v1/nodes/n2
expect_json "... so n2 holds nothing of j4, and the broker does not drain it" .drained false
TOKEN=$SCHED_TOKEN http GET /v1/reservations/j4/nodes
expect_eq "n2 reported j4 destroyed" "$(jq -r '.reports[] | select(.node == "n2") | .cxi' <<<"$HTTP_BODY")" destroyed
expect_match "... with the prolog's reason" \
    "$(jq -r '.reports[] | select(.node == "n2") | .message' <<<"$HTTP_BODY")" "prolog: cxi3: .*; nothing of it is left on this node"

# ---- dry run and list --------------------------------------------------------
reserve j3 n9 1
agent n9 --dry-run prolog --job j3
expect_eq "prolog --dry-run exits 0" "$AGENT_RC" 0
expect_match "... says what it would do" "$AGENT_OUT" "cxi0: would create uid=1000"
expect_eq "... and does nothing" "$(sim_count n9 cxi0)" 0
agent n9 prolog --job j3 --json
expect_eq "prolog --json" "$(jq -c '[.job_id, .node, .services[0].device]' <<<"$AGENT_OUT")" '["j3","n9","cxi0"]'
agent n9 list
expect_match "list shows the job's service" "$AGENT_OUT" "cxi0 +3 +1000 +30[0-9][0-9] +pte=[0-9]+ txq="
expect_match "... and the system service" "$AGENT_OUT" "cxi0 +2/sys"

# ---- the broker unreachable ---------------------------------------------------
"$VNIB_AGENT" --config "$T/n9/agent.toml" --url http://127.0.0.1:1 prolog --job j3 >"$T/out" 2>"$T/err"
rc=$?
expect_eq "prolog with the broker unreachable exits 3 (after its deadline)" "$rc" 3
expect_match "... with one clear line" "$(cat "$T/err")" "prolog: broker unreachable: "

# ---- configuration errors name the file and line -----------------------------
printf '[nic]\nbackend = "cxi"\n' >"$T/bad.toml"
"$VNIB_AGENT" --config "$T/bad.toml" list >/dev/null 2>"$T/err"
expect_eq "a bad backend is a usage error (2)" "$?" 2
expect_match "... naming file and line" "$(cat "$T/err")" "bad.toml:2: nic.backend: 'cxi' is not libcxi or sim"
"$VNIB_AGENT" --config "$T/n9/agent.toml" prolog >/dev/null 2>"$T/err"
expect_eq "a missing --job is a usage error (2)" "$?" 2
"$VNIB_AGENT" --config "$T/n9/agent.toml" epilog --job ../etc >/dev/null 2>"$T/err"
expect_eq "a job id that is not a file name is refused" "$?" 2
chmod 644 "$T/n9/token"
"$VNIB_AGENT" --config "$T/n9/agent.toml" prolog --job j3 >/dev/null 2>"$T/err"
expect_eq "a world-readable token file is refused (2)" "$?" 2
chmod 600 "$T/n9/token"
sed -i 's/^backend = .*/backend = "libcxi"/; s|^libcxi = .*|libcxi = "/nonexistent/libcxi.so.1"|' "$T/n9/agent.toml"
"$VNIB_AGENT" --config "$T/n9/agent.toml" list >/dev/null 2>"$T/err"
expect_eq "the libcxi backend without libcxi fails cleanly (1)" "$?" 1
expect_match "... naming the backend" "$(cat "$T/err")" "libcxi: "

"$VNIB_AGENT" --config "$TOP/agent/agent.example.toml" list >/dev/null 2>"$T/err"
expect_eq "agent.example.toml is valid (it gets as far as loading libcxi)" "$?:$(cut -c1-19 "$T/err")" "1:vnib-agent: libcxi:"

finish
