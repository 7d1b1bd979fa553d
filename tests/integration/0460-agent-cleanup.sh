#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cleanup that never lies: EBUSY within the epilog's window; EBUSY past it
# (the epilog warns and exits 0, housekeeping exits 1, the broker keeps
# the VNI quarantined and the node drained); `clean --all` after a
# simulated crash and reboot releases the quarantine.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
agent_setup n1 4
reserve () { # JOB NODES
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1000,\"user\":\"alice\",\"nodes\":\"$2\",\"vni_count\":1}"
}
state_of () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    jq -r .state <<<"$HTTP_BODY"
}

# ---- EBUSY three times, then success inside the 5 s window ------------------
reserve k1 n1
agent n1 prolog --job k1
expect_eq "k1 prolog" "$AGENT_RC" 0
sim_jq n1 cxi2 '.faults.destroy_ebusy = 3'
start=$(date +%s%N)
agent n1 epilog --job k1
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "epilog rides out 3 EBUSY answers and exits 0" "$AGENT_RC" 0
expect_match "... having destroyed all four" "$AGENT_OUT" "destroyed 4 service"
expect_eq "... retrying once a second (3 retries: 3-5 s)" "$([ "$ms" -ge 2500 ] && [ "$ms" -lt 5500 ] && echo yes || echo "no ($ms ms)")" yes
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/k1
expect_json "k1 releases at once (n1 confirmed)" .state released

# ---- EBUSY past the window ----------------------------------------------------
reserve k2 n1
K2_VNI=$(jq -r '.vnis[0]' <<<"$HTTP_BODY")
agent n1 prolog --job k2
sim_jq n1 cxi2 '.services |= map(if .uid == 1000 then .lnis = 1 else . end)'
agent n1 epilog --job k2 --retry-busy 1s
expect_eq "epilog with a stuck service exits 0 (the job is not held back)" "$AGENT_RC" 0
expect_match "... warning what is left" "$AGENT_ERR" "warning: job k2: 1 CXI service\(s\) still busy after 1000 ms, left for housekeeping: cxi2 svc [0-9]+ \(busy\)"
expect_eq "... the other NICs are clean" "$(sim_count n1 cxi0)$(sim_count n1 cxi2)" 01
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/k2
expect_status "the scheduler releases k2" 202
expect_json "... the VNI stays quarantined" .state releasing
TOKEN=$(node_token n1) http GET /v1/nodes/n1
expect_json "the broker marked n1 drained" .drained true
expect_match "... saying what is left" "$(jq -r .drained_reason <<<"$HTTP_BODY")" "epilog: 1 service\(s\) remain after 1000 ms: cxi2 svc"
TOKEN=$ADMIN_TOKEN http GET "/v1/vnis/$K2_VNI"
expect_json "the VNI is held by k2 in quarantine" .state quarantined

agent n1 housekeeping --job k2 --retry-busy 1s
expect_eq "housekeeping with the service still busy exits 1 (drain)" "$AGENT_RC" 1
expect_match "... saying what to do" "$AGENT_ERR" "drain this node, then run 'vnib-agent clean --all'"
expect_eq "k2 is still quarantined" "$(state_of k2)" releasing

sim_jq n1 cxi2 '.services |= map(.lnis = 0)'
agent n1 housekeeping --job k2 --retry-busy 1s
expect_eq "housekeeping once the LNIs are gone exits 0" "$AGENT_RC" 0
expect_eq "... and the quarantine ends" "$(state_of k2)" released
TOKEN=$ADMIN_TOKEN http DELETE /v1/nodes/n1/drain
expect_json "an admin returns n1" .drained false

# ---- a crash and a reboot: clean --all ---------------------------------------
reserve k3 n1
reserve k4 n1
agent n1 prolog --job k3
agent n1 prolog --job k4
expect_eq "two jobs on n1" "$(sim_count n1 cxi1)" 2
# Something outside the pool (an admin's test service) must survive.
sim_jq n1 cxi1 '.services += [{"svc_id": 90, "uid": 0, "vnis": [5], "restricted_vnis": true}]'
# The node crashes: the jobs' state directory (on /run) is gone, and the
# scheduler releases the jobs while n1 is down.
rm -rf "$T/n1/state"
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/k3
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/k4
expect_eq "both stay quarantined while n1 holds their services" "$(state_of k3) $(state_of k4)" "releasing releasing"
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_json "the pool counts them" .quarantined 2

agent n1 --dry-run clean --all
expect_eq "clean --all --dry-run exits 0" "$AGENT_RC" 0
expect_match "... and says what it would do" "$AGENT_OUT" "would destroy 8 service\(s\), 0 remain; 2 job\(s\) reported"
expect_eq "... without doing it" "$(sim_count n1 cxi1)" 3
agent n1 clean
expect_eq "clean without --all is a usage error" "$AGENT_RC" 2
agent n1 clean --all
expect_eq "clean --all exits 0" "$AGENT_RC" 0
expect_match "... destroying both jobs' services on every NIC" "$AGENT_OUT" "destroyed 8 service\(s\), 0 remain; 2 job\(s\) reported"
expect_eq "... leaving the service outside the pool" "$(jq -c '[.services[] | select(.svc_id == 90) | .vnis[0]]' "$T/n1/sim/cxi1.json")" "[5]"
expect_eq "the quarantines end" "$(state_of k3) $(state_of k4)" "released released"
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_json "the pool has nothing quarantined" .quarantined 0

finish
