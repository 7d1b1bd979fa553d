#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster.topology_file: Slurm's topology.conf as the broker's inventory.
# --check-config reports the inventory, or the file's error with
# file:line:col (and vnibrokerd refuses to start on it); a reservation
# naming a node the file lacks is refused with 400 invalid_field naming
# it, one naming known nodes is made; with reject_unknown_nodes = false
# it is made and warned about once; hwcoll's addrs_per_job comes from the
# file's node and leaf switch counts (the FM's mcastLimit says so); and
# `vnibctl topology` summarises the file and tells the switches a job
# spans.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

CTL=$BUILD/vnibctl

# Slurm's guide: four leaf switches of four nodes under one top switch.
cat >"$T/topology.conf" <<'TOPO'
# topology.conf
# Switch Configuration
SwitchName=s0 Nodes=tux[0-3]
SwitchName=s1 Nodes=tux[4-7]
SwitchName=s2 Nodes=tux[8-11]
SwitchName=s3 Nodes=tux[12-15]
SwitchName=s4 Switches=s[0-3]
TOPO
printf 'SwitchName=s0 Nodes=tux[0-3]\n\nSwitchName=s1 Nodez=tux[4-7]\n' >"$T/bad.conf"

# ---- the configuration ----------------------------------------------------
printf '[cluster]\ntopology_file = "%s"\n' "$T/topology.conf" >"$T/check.toml"
out=$(vnibrokerd --check-config "$T/check.toml" 2>&1)
expect_eq "--check-config with a topology file exits 0" "$?" 0
expect_match "... and reports the inventory" "$out" \
    "# inventory \(cluster.topology_file\): $T/topology.conf: 16 nodes on 4 leaf switches \(5 switches\); reservations naming other nodes are refused"
expect_match "... printing the keys with the others" "$out" 'reject_unknown_nodes = true'
printf '[cluster]\ntopology_file = "%s"\n' "$T/bad.conf" >"$T/bad.toml"
out=$(vnibrokerd --check-config "$T/bad.toml" 2>&1)
expect_eq "a bad topology file fails --check-config with 2" "$?" 2
expect_eq "... naming file:line:col and the key" "$out" \
    "vnibrokerd: cluster.topology_file: $T/bad.conf:3:15: unknown key \"Nodez\""
printf '[cluster]\ntopology_file = "%s"\n' "$T/missing.conf" >"$T/missing.toml"
out=$(vnibrokerd --check-config "$T/missing.toml" 2>&1)
expect_eq "a missing topology file fails with 2" "$?" 2
expect_match "... saying so" "$out" "$T/missing.conf: No such file or directory"
out=$("$CTL" topology --check --file "$T/bad.conf" 2>&1)
expect_eq "vnibctl topology --check of the bad file exits 2" "$?" 2
expect_eq "... with file:line:col" "$out" "vnibctl: $T/bad.conf:3:15: unknown key \"Nodez\""
out=$("$CTL" topology --check --file "$T/topology.conf")
expect_eq "vnibctl topology --check of the good file exits 0" "$?" 0
expect_eq "... saying what it holds" "$out" \
    "$T/topology.conf: ok: 16 nodes on 4 leaf switches (5 switches)"
out=$("$CTL" --json topology --file "$T/topology.conf")
expect_eq "vnibctl topology summarises the file" "$(printf '%s' "$out" | jq -c '[.switches, .leaf_switches, .nodes]')" "[5,4,16]"

pg_start || exit 1
broker_config "$T/start-bad.toml" "
[cluster]
topology_file = \"$T/bad.conf\""
out=$(timeout 20 "$VNIBROKERD" -c "$T/start-bad.toml" 2>&1)
expect_eq "vnibrokerd refuses to start on a bad topology file (2)" "$?" 2
expect_match "... with file:line:col" "$out" "$T/bad.conf:3:15: unknown key"

# ---- a broker with the inventory and hwcoll on fmsim ----------------------
fm_start --state "$T/fmsim.json" || { not_ok "fmsim starts"; finish; }
umask 077
openssl rand 32 >"$T/token.key"
umask 022
# No addrs_per_job, no system_size, no min_job_size: S = 16 nodes and
# S / s = 4 leaf switches, so (4086 / 4) / 1 = 1021.
topo_config () { # FILE REJECT
    broker_config "$1" "
[cluster]
name = \"tux\"
topology_file = \"$T/topology.conf\"
reject_unknown_nodes = $2

[hwcoll]
enabled = true
fm_url = \"$FM_URL\"
auth = \"none\"
min_nodes = 1
total_addrs = 4086
token_key_file = \"$T/token.key\""
}
topo_config "$T/b.toml" true
broker_migrate "$T/b.toml" || { not_ok "migrate"; finish; }
broker_start "$T/b.toml" || { not_ok "broker starts"; finish; }
expect_match "the broker logs the inventory at start" "$(cat "$BROKER_LOG")" \
    "inventory: $T/topology.conf: 16 nodes on 4 leaf switches \(5 switches\); reservations naming other nodes are refused"
expect_match "... and addrs_per_job computed from it" "$(cat "$BROKER_LOG")" \
    "1021 multicast addresses per job \(computed: \(M / \(S / s\)\) / j, S / s = the topology's leaf switches\)"
out=$(vnibrokerd --check-config "$T/b.toml" 2>&1)
expect_match "--check-config shows the computation" "$out" \
    "# hwcoll.addrs_per_job computed: 1021 = \(M / \(S / s\)\) / j with M = 4086, S = 16 \($T/topology.conf\), S / s = 4 leaf switches, j = 1"
sed 's/^total_addrs = 4086$/total_addrs = 4086\nmin_job_size = 2/' "$T/b.toml" >"$T/b-s.toml"
out=$(vnibrokerd --check-config "$T/b-s.toml" 2>&1)
expect_match "an explicit min_job_size is s: (4086 / (16 / 2)) / 1 = 510" "$out" \
    "# hwcoll.addrs_per_job computed: 510 = .* S = 16 \($T/topology.conf\), s = 2, j = 1"

reserve () { # JOB NODES
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"$2\"}"
}

reserve unknown 'tux[14-17],gpu1'
expect_status "a reservation naming unknown nodes is refused" 400
expect_json "... invalid_field" .error.code invalid_field
expect_json "... naming the first unknown node and how many" .error.message \
    "nodes: gpu1 is not in the cluster's topology (3 of 5 nodes are unknown)"
TOKEN=$ADMIN_TOKEN http GET /v1/reservations/unknown
expect_status "... and nothing is reserved" 404

reserve 42 'tux[2-9]'
expect_status "a reservation of known nodes is made" 201
expect_json "... with hwcoll" .hwcoll.state reserved
expect_json "... and addrs_per_job from the topology" .hwcoll.addrs_per_job 1021
FMID=$(jq -r .hwcoll.fm_job_id "$T/http.body")
expect_eq "fmsim holds the reservation with mcastLimit 1021" \
    "$(curl -s "$FM_ADMIN/fmsim/state" | jq -r --arg id "$FMID" '.jobs[] | select(.jobID == $id) | .mcastLimit')" 1021

# ---- vnibctl topology JOB ---------------------------------------------------
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$MONITOR_TOKEN "$CTL" topology --file "$T/topology.conf" 42)
expect_eq "vnibctl topology JOB exits 0" "$?" 0
expect_match "... names the job's nodes" "$out" 'nodes: +tux\[2-9\]'
expect_match "... how many leaf switches they span" "$out" 'leaf_switches: +3'
expect_eq "... and the nodes on each" "$(printf '%s\n' "$out" | sed -n '/^SWITCH/,$p' | tr -s ' ')" \
    "SWITCH NODES
s0 2
s1 4
s2 2"
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$MONITOR_TOKEN "$CTL" --json topology --file "$T/topology.conf" 42)
expect_eq "... and as JSON" "$(printf '%s' "$out" | jq -c '[.node_count, .unknown_nodes, [.switches[] | .switch + ":" + (.nodes | tostring)]]')" \
    '[8,0,["s0:2","s1:4","s2:2"]]'
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$MONITOR_TOKEN "$CTL" topology --file "$T/topology.conf" nosuch 2>&1)
expect_eq "vnibctl topology of an unknown job exits 1" "$?" 1
expect_match "... with the broker's code" "$out" reservation_not_found
broker_stop

# ---- reject_unknown_nodes = false --------------------------------------------
topo_config "$T/warn.toml" false
broker_start "$T/warn.toml" || { not_ok "broker with reject_unknown_nodes = false starts"; finish; }
expect_match "the broker says unknown nodes are only warned about" "$(cat "$BROKER_LOG")" \
    'reservations naming other nodes are warned about'
reserve 43 'tux[14-17],gpu1'
expect_status "with reject_unknown_nodes = false the reservation is made" 201
wait_for 10 grep -q 'reservation 43: gpu1 is not in the cluster' "$BROKER_LOG"
expect_match "... and warned about" "$(cat "$BROKER_LOG")" \
    "warning.*reservation 43: gpu1 is not in the cluster's topology \(3 of 5 nodes are unknown\); accepted, as cluster.reject_unknown_nodes is false"
reserve 43 'tux[14-17],gpu1'
expect_status "a retry returns the same reservation" 200
reserve 44 'tux1'
expect_status "a later reservation of known nodes is made" 201
expect_eq "... and the warning was logged once for the reservation" \
    "$(grep -c 'reservation 43: gpu1 is not' "$BROKER_LOG")" 1
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$MONITOR_TOKEN "$CTL" --json topology --file "$T/topology.conf" 43)
expect_eq "vnibctl topology counts the unknown nodes of a job" \
    "$(printf '%s' "$out" | jq -c '[.unknown_nodes, .first_unknown, .leaf_switches]')" '[3,"gpu1",1]'
broker_stop
finish
