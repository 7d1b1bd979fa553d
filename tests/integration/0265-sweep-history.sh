#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sweeper ends quarantines while reserves run on two replicas and one
# of them is killed with SIGKILL.  60 reservations are quarantined (their
# node held CXI services when they were released); their nodes' reports
# then turn "destroyed" in the database in batches, as if each report
# landed and its own end of quarantine was lost, so that only the
# sweepers of both replicas (schema 0015's vnib_sweep) can end them.
# Meanwhile one client per replica reserves and releases jobs from the
# same pool.  Then: every quarantine ended exactly once (one
# quarantine_end event each), every VNI of the pool is exactly free or
# held, every reserve a client was answered 201 for is in the database
# with the VNIs it was told, and the database invariants hold.
. "$(dirname "$0")/lib.sh"

POOL_LO=3000
POOL_HI=3199
QUAR=60
LOAD_SECONDS=14

pg_start || exit 1
auth_setup

replicas_ab_config "pool = \"$POOL_LO-$POOL_HI\"
sweep_interval_s = 1"
replicas_ab_start

auth="Authorization: Bearer $SCHED_TOKEN"

# reserve URL JOB COUNT: prints "HTTP-STATUS VNIS" (VNIS comma-separated).
reserve () {
    body=$T/reply.$BASHPID
    out=$(curl -s -m 5 -o "$body" -w '%{http_code}' -H "$auth" \
        -H 'Content-Type: application/json' -X POST "$1/v1/reservations" \
        -d "{\"job_id\":\"$2\",\"uid\":1000,\"user\":\"u\",\"nodes\":\"s1\",\"vni_count\":$3}")
    printf '%s %s\n' "$out" \
        "$(jq -r '(.vnis // []) | map(tostring) | join(",")' "$body" 2>/dev/null)"
    rm -f "$body"
}

# ---- 60 quarantines that only a sweep can end ------------------------------
made=0
for i in $(seq 1 "$QUAR"); do
    set -- $(reserve "$URL_A" "q$i" $((1 + i % 2)))
    [ "$1" = 201 ] && made=$((made + 1))
done
expect_eq "the $QUAR jobs to quarantine are reserved" "$made" "$QUAR"
psql_q "INSERT INTO node_reports (reservation_id, node, cxi)
        SELECT id, 's1', 'created' FROM reservations
         WHERE job_id LIKE 'q%' AND state = 'active'" >/dev/null
for i in $(seq 1 "$QUAR"); do
    curl -s -m 5 -o /dev/null -H "$auth" -X DELETE "$URL_A/v1/reservations/q$i"
done
expect_eq "all $QUAR are quarantined, their node still holding" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'q%' AND state = 'releasing'")" \
    "$QUAR"

# ---- load on both replicas, reports flipped, one replica killed -------------
# load NAME: reserve and release jobs NAME-1, NAME-2, ... for LOAD_SECONDS
# against replica NAME's URL at the time of each call, recording "JOB
# STATUS VNIS" of every reserve in $T/load.NAME.
load () {
    end=$(($(date +%s) + LOAD_SECONDS))
    n=0
    while [ "$(date +%s)" -lt "$end" ]; do
        n=$((n + 1))
        eval "url=\$URL_$1"
        echo "$1-$n $(reserve "$url" "$1-$n" $((1 + n % 3)))" >>"$T/load.$1"
        curl -s -m 5 -o /dev/null -H "$auth" -X DELETE "$url/v1/reservations/$1-$n"
    done
}
: >"$T/load.A"
: >"$T/load.B"
load A &
LA=$!
load B &
LB=$!
# six batches of ten, half a second apart; replica A killed after the
# third and started again on its port
for b in 0 1 2 3 4 5; do
    psql_q "UPDATE node_reports SET cxi = 'destroyed', updated_at = now()
             WHERE reservation_id IN (SELECT id FROM reservations
                                       WHERE job_id LIKE 'q%'
                                       ORDER BY id OFFSET $((b * 10)) LIMIT 10)" >/dev/null
    sleep 0.5
    if [ "$b" = 2 ]; then
        kill -KILL "$PID_A" 2>/dev/null
        { wait "$PID_A"; } 2>/dev/null
        replica_start A || not_ok "replica A starts again after SIGKILL"
    fi
done
wait "$LA" "$LB"

# ---- what the database holds ------------------------------------------------
no_quarantine () {
    [ "$(psql_q "SELECT count(*) FROM reservations WHERE state = 'releasing'")" = 0 ]
}
wait_for 20 no_quarantine
expect_eq "the sweepers ended every quarantine" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'q%' AND state <> 'released'")" 0
expect_eq "each exactly once (one quarantine_end event each)" \
    "$(psql_q "SELECT count(*) FROM (SELECT r.id FROM reservations r
                 LEFT JOIN events e ON e.reservation_id = r.id AND e.action = 'quarantine_end'
                WHERE r.job_id LIKE 'q%' GROUP BY r.id HAVING count(e.id) <> 1) d")" 0
expect_eq "every VNI of the pool is exactly free or held" \
    "$(psql_q "SELECT count(*) FROM generate_series($POOL_LO, $POOL_HI) v
                WHERE (SELECT count(*) FROM vni_free WHERE vni = v)
                    + (SELECT count(*) FROM vni_holds WHERE vni = v) <> 1")" 0
expect_db_consistent

answered=$(cat "$T/load.A" "$T/load.B" | awk '$2 == 201' | wc -l)
expect_match "the clients were answered reserves ($answered) while the sweepers ran" \
    "$answered" '^[1-9][0-9]+$'
# what each client was told against what the database holds
bad=0
while read -r job st vnis; do
    [ "$st" = 201 ] || continue
    got=$(psql_q "SELECT array_to_string(vnis, ',') FROM reservations
                   WHERE job_id = '$job' ORDER BY id DESC LIMIT 1")
    [ "$got" = "$vnis" ] || { bad=$((bad + 1)); echo "# $job: told $vnis, kept '$got'"; }
done < <(cat "$T/load.A" "$T/load.B")
expect_eq "every reserve answered 201 is kept with the VNIs it was told" "$bad" 0
expect_eq "no reserve answered 5xx other than 503 (the kill shows as no answer)" \
    "$(cat "$T/load.A" "$T/load.B" | awk '$2 >= 500 && $2 != 503' | wc -l)" 0
finish
