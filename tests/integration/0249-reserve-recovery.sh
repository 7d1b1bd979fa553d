#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A reserve recovers its own reservation (issue 45, part 3): the same job
# reserved again by the scheduler that made its active reservation, for
# the same uid and nodes, gets that reservation as it is (200, its own
# VNIs, count and hwcoll mode) whatever else its settings changed (user,
# vni_count, hwcoll, lease), with "differs" naming what did and a broker
# log line naming the job and each field (old -> new); no VNI moves.  A
# lease asked on a reservation made without one makes it presumed; one
# not asked leaves a presumed reservation presumed.  Other nodes, another
# uid or another scheduler's token is 409 reservation_conflict, the
# message naming what differs.  The same, many at once through group
# commit, recoveries and new jobs in the same groups; and with group
# commit off (database.group_max = 1).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
auth_setup
OTHER_TOKEN=$(new_token)
echo "scheduler flux-b $(printf %s "$OTHER_TOKEN" | sha256sum | cut -d' ' -f1)" >>"$T/tokens"
umask 077
openssl genpkey -algorithm ed25519 -out "$T/lease.key" 2>/dev/null
umask 022
CONF_TAIL="[vni]
pool = \"2000-2039\"

[lease]
key_file = \"$T/lease.key\""
broker_config "$T/b.toml" 'workers = 40
max_connections = 256'
sed -i 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$T/b.toml"
printf '\n%s\n' "$CONF_TAIL" >>"$T/b.toml"
broker_migrate_start "$T/b.toml"
TOKEN=$SCHED_TOKEN

# reserve JOB UID USER NODES VNI_COUNT [EXTRA-JSON-MEMBERS]
reserve () {
    http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":$2,\"user\":\"$3\",\"nodes\":\"$4\",\"vni_count\":$5${6:+,$6}}"
}
free_vnis () {
    psql_q "SELECT count(*) FROM vni_free"
}

# ---- a recovery with changed settings is the same reservation ----------------
reserve r1 1001 alice 'tux[1-4]' 2
expect_status "the first reserve is 201" 201
R1_ID=$(jq .id "$T/http.body")
R1_VNIS=$(jq -c .vnis "$T/http.body")
FREE=$(free_vnis)
reserve r1 1001 1001 'tux[1-4]' 1 '"hwcoll":"off"'
expect_status "the same job, scheduler and nodes with another user, vni_count and hwcoll is 200" 200
expect_eq "... the same reservation, with its own VNIs" \
    "$(jq -c '[.id, .vnis]' "$T/http.body")" "[$R1_ID,$R1_VNIS]"
expect_eq "... as it is: its user, vni_count and hwcoll mode" \
    "$(jq -c '[.user, .vni_count, .hwcoll.mode]' "$T/http.body")" '["alice",2,"auto"]'
expect_json "... differs names the fields that differ" '.differs | join(",")' user,vni_count,hwcoll
expect_json "... the job token is the reservation's" '.job_token | test("^vnibjob\\.'"$R1_ID"'\\.r1\\.")' true
expect_eq "... and no VNI was taken" "$(free_vnis)" "$FREE"
expect_eq "... the database holds the reservation as it was" \
    "$(psql_q "SELECT username || ' ' || vni_count || ' ' || hwcoll_mode FROM reservations WHERE job_id = 'r1'")" \
    "alice 2 auto"
line=$(grep "reservation r1: " "$BROKER_LOG" | grep "differs in" | tail -1)
expect_match "the broker logs the job and each field, old -> new" "$line" \
    'reservation r1: a reserve by slurmctld found the job.s active reservation [0-9]+ .*differs in user \(alice -> 1001\), vni_count \(2 -> 1\), hwcoll \(auto -> off\)'
expect_match "... at warning level" "$line" 'warn'
reserve r1 1001 alice 'tux[4,1-3]' 2
expect_status "an identical retry (the nodes as a set) is 200" 200
expect_json "... with no differs" '.differs' null

# ---- the lease -------------------------------------------------------------
reserve r1 1001 alice 'tux[1-4]' 2 '"lease":true'
expect_status "a recovery that asks for a lease is 200" 200
expect_json "... differs: lease" '.differs | join(",")' lease
expect_json "... the reservation is presumed from now on" .presumed true
expect_eq "... in the database too" \
    "$(psql_q "SELECT presumed FROM reservations WHERE id = $R1_ID")" t
LEASE=$(jq -r .lease "$T/http.body")
b64=$(printf '%s' "$LEASE" | cut -d. -f2 | tr '_-' '/+')
while [ $((${#b64} % 4)) -ne 0 ]; do b64="$b64="; done
payload=$(printf '%s' "$b64" | base64 -d)
expect_eq "... it carries a lease of the reservation, presumed, without differs" \
    "$(printf '%s' "$payload" | jq -c '[.id, .presumed, .differs]')" "[$R1_ID,true,null]"
expect_match "the broker logs the lease change" \
    "$(grep "reservation r1: " "$BROKER_LOG" | tail -1)" 'lease \(false -> true, now presumed\)'
reserve r1 1001 alice 'tux[1-4]' 2
expect_status "a recovery without the lease is 200" 200
expect_json "... differs: lease" '.differs | join(",")' lease
expect_eq "... the reservation stays presumed, and no lease is signed" \
    "$(jq -c '[.presumed, .lease]' "$T/http.body")" '[true,null]'

# ---- a different job is 409 ------------------------------------------------
FREE=$(free_vnis)
reserve r1 1001 alice 'tux[1-5]' 2
expect_status "the same job id on other nodes is 409" 409
expect_json "... reservation_conflict" .error.code reservation_conflict
expect_match "... naming the nodes" "$(jq -r .error.message "$T/http.body")" \
    'differs in nodes; made by slurmctld, uid 1001, nodes tux\[1-4\]\)'
reserve r1 1002 alice 'tux[1-4]' 2
expect_status "the same job id for another uid is 409" 409
expect_match "... naming the uid" "$(jq -r .error.message "$T/http.body")" 'differs in uid;'
TOKEN=$OTHER_TOKEN reserve r1 1001 alice 'tux[1-4]' 2
expect_status "the same job, uid and nodes from another scheduler's token is 409" 409
expect_json "... reservation_conflict" .error.code reservation_conflict
expect_match "... naming the scheduler" "$(jq -r .error.message "$T/http.body")" \
    'differs in created_by; made by slurmctld'
TOKEN=$OTHER_TOKEN reserve r1 1002 bob 'tux[1-2]' 1
expect_match "... and everything that differs" "$(jq -r .error.message "$T/http.body")" \
    'differs in created_by,uid,nodes;'
expect_eq "no refused reserve took a VNI" "$(free_vnis)" "$FREE"
expect_eq "... or changed the reservation" \
    "$(psql_q "SELECT count(*) || ' ' || min(created_by) || ' ' || min(uid) || ' ' || min(nodes) FROM reservations WHERE job_id = 'r1'")" \
    "1 slurmctld 1001 tux[1-4]"

# ---- in groups ---------------------------------------------------------------
# reserve_bg TOKEN JOB VNIS USER NAME: POST in the background; status in
# $T/NAME.code, body in $T/NAME.body.
reserve_bg () {
    curl -s -m 30 -o "$T/$5.body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $1" -H "Content-Type: application/json" \
        -d "{\"job_id\":\"$2\",\"uid\":1001,\"user\":\"$4\",\"nodes\":\"n[1-2]\",\"vni_count\":$3}" \
        "$BROKER_URL/v1/reservations" >"$T/$5.code" 2>/dev/null &
    pids="$pids $!"
}
# many_at_once LABEL: 8 jobs reserved, then 8 recoveries of them with
# another user and vni_count, 8 of them by the other scheduler and 8 new
# jobs, all at once.
many_at_once () {
    pids=""
    for i in $(seq 1 8); do reserve_bg "$SCHED_TOKEN" "$1g$i" 1 alice "first$i"; done
    # shellcheck disable=SC2086
    wait $pids
    pids=""
    for i in $(seq 1 8); do
        reserve_bg "$SCHED_TOKEN" "$1g$i" 2 1001 "again$i"
        reserve_bg "$OTHER_TOKEN" "$1g$i" 1 alice "other$i"
        reserve_bg "$SCHED_TOKEN" "$1n$i" 1 alice "new$i"
    done
    # shellcheck disable=SC2086
    wait $pids
    codes() {
        for i in $(seq 1 8); do cat "$T/$1$i.code"; echo; done | sort | uniq -c | tr -s ' ' | sed 's/^ //' | paste -sd, -
    }
    expect_eq "$2: 8 recoveries with other settings are 200" "$(codes again)" "8 200"
    same=0
    for i in $(seq 1 8); do
        [ "$(jq -c '[.vnis, .vni_count, .user, (.differs | join(","))]' "$T/again$i.body")" = \
            "$(jq -c '[.vnis, .vni_count, .user, "user,vni_count"]' "$T/first$i.body")" ] &&
            same=$((same + 1))
    done
    expect_eq "... each with its own reservation as it was, and differs" "$same" 8
    expect_eq "... 8 of another scheduler are 409" "$(codes other)" "8 409"
    expect_eq "... 8 new jobs are 201" "$(codes new)" "8 201"
    expect_eq "... each job holds one active reservation, of its VNIs" \
        "$(psql_q "SELECT count(*) || ' ' || sum(vni_count) || ' ' || sum(cardinality(vnis)) FROM reservations WHERE state = 'active' AND (job_id LIKE '$1g%' OR job_id LIKE '$1n%')")" \
        "16 16 16"
}
many_at_once a "group commit"
http GET /metrics
largest=$(awk '/^vnib_db_group_largest\{op="reserve"\}/ { print $2 }' "$T/http.body")
expect_match "reserves were written in groups (largest: $largest requests)" \
    "$largest" '^([2-9]|[1-9][0-9]+)$'
broker_stop

# ---- without group commit ---------------------------------------------------
sed -i 's/^\[database\]$/[database]\ngroup_max = 1/' "$T/b.toml"
broker_start "$T/b.toml" || { not_ok "the broker starts with group_max = 1"; finish; }
many_at_once b "group_max = 1"
http GET /metrics
expect_eq "... (no group was written)" \
    "$(awk '/^vnib_db_group_largest\{op="reserve"\}/ { print $2 }' "$T/http.body")" 0
broker_stop

expect_db_consistent
finish
