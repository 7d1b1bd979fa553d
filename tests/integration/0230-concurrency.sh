#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two brokers on one database under concurrent load never put one VNI in
# two live reservations at once (checked over the whole history), and a
# broker killed with SIGKILL mid-load loses nothing it acknowledged.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
POOL_LO=1024
POOL_HI=1100
broker_config "$T/a.toml" "$(vni_pool "$POOL_LO-$POOL_HI")"
brokers_ab "$T/a.toml"

# worker ID URL ITERATIONS: reserve, report creating from a node, release
# (quarantined), report destroyed.  Acknowledged reservations are logged
# as "job vnis".
worker () {
    id=$1 url=$2 n=$3
    node=n$((id % 4 + 1))
    ntok=$(node_token "$node")
    for i in $(seq 1 "$n"); do
        job="w$id-$i"
        out=$(curl -s -m 10 -w '\n%{http_code}' -H "Authorization: Bearer $SCHED_TOKEN" \
            -H "Content-Type: application/json" -d "{\"job_id\":\"$job\",\"uid\":1000,\"user\":\"load\",\"nodes\":\"n[1-4]\"}" \
            "$url/v1/reservations") || continue
        code=$(printf '%s' "$out" | tail -n 1)
        [ "$code" = 201 ] || { echo "$job $code" >>"$T/refused.$id"; continue; }
        printf '%s %s\n' "$job" "$(printf '%s' "$out" | head -n 1 | jq -c .vnis)" >>"$T/acked.$id"
        curl -s -m 10 -o /dev/null -X PUT -H "Authorization: Bearer $ntok" \
            -H "Content-Type: application/json" -d '{"cxi":"creating"}' "$url/v1/reservations/$job/nodes/$node"
        curl -s -m 10 -o /dev/null -X DELETE -H "Authorization: Bearer $SCHED_TOKEN" \
            "$url/v1/reservations/$job"
        curl -s -m 10 -o /dev/null -X PUT -H "Authorization: Bearer $ntok" \
            -H "Content-Type: application/json" -d '{"cxi":"destroyed"}' "$url/v1/reservations/$job/nodes/$node"
    done
}

# The invariant, over every reservation ever made: no VNI is in two
# reservations whose lifetimes (creation to end of quarantine) overlap.
overlaps () {
    psql_q "WITH v AS (SELECT r.id, x AS vni, r.created_at AS t0,
                              coalesce(r.released_at, 'infinity') AS t1
                         FROM reservations r, unnest(r.vnis) x)
            SELECT count(*) FROM v a JOIN v b
                ON a.vni = b.vni AND a.id < b.id AND a.t0 < b.t1 AND b.t0 < a.t1"
}
holds_consistent () {
    psql_q "SELECT (SELECT count(*) FROM vni_holds)
                 = (SELECT coalesce(sum(cardinality(vnis)), 0) FROM reservations
                     WHERE state <> 'released')
               AND NOT EXISTS (SELECT 1 FROM vni_holds h JOIN reservations r
                                 ON r.id = h.reservation_id WHERE r.state = 'released')"
}

start=$(date +%s)
clients_ab 8 worker 25
secs=$(($(date +%s) - start))
acked=$(cat "$T"/acked.* 2>/dev/null | wc -l)
expect_eq "all 200 reservations from 8 clients on 2 brokers were acknowledged (${secs}s)" "$acked" 200
expect_eq "no VNI was ever in two live reservations" "$(overlaps)" 0
expect_eq "holds match the live reservations exactly" "$(holds_consistent)" t
expect_eq "every quarantine ended once its node confirmed" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE state <> 'released'")" 0
reused=$(psql_q "SELECT count(*) FROM (SELECT x FROM reservations, unnest(vnis) x GROUP BY x HAVING count(*) > 1) d")
expect_match "VNIs were reused (a 77-VNI pool, 200 jobs), so the check had teeth" "$reused" '^[1-9]'

# ---- SIGKILL mid-load ----------------------------------------------------------------
rm -f "$T"/acked.* "$T"/refused.*
kill -TERM "$PID_B"
wait "$PID_B" 2>/dev/null
workers=""
for w in 11 12 13 14; do
    worker "$w" "$URL_A" 40 &
    workers="$workers $!"
done
# Kill once the load is under way: some reservations are acknowledged.
acked_some () { [ "$(cat "$T"/acked.* 2>/dev/null | wc -l)" -ge 5 ]; }
wait_for 30 acked_some
kill -KILL "$PID_A"
wait "$PID_A" 2>/dev/null
wait $workers
acked_before=$(cat "$T"/acked.* 2>/dev/null | wc -l)
expect_match "some reservations were acknowledged before the kill ($acked_before)" "$acked_before" '^[1-9]'

sed -i "s/^port = 0/port = ${URL_A##*:}/" "$T/a.toml"
broker_start "$T/a.toml" || { not_ok "broker restarts after SIGKILL"; finish; }
ok "broker restarts after SIGKILL"
missing=0
mismatch=0
while read -r job vnis; do
    got=$(psql_q "SELECT array_to_json(vnis) FROM reservations WHERE job_id = '$job' ORDER BY id DESC LIMIT 1")
    if [ -z "$got" ]; then
        missing=$((missing + 1))
    elif [ "$(printf '%s' "$got" | jq -c .)" != "$vnis" ]; then
        mismatch=$((mismatch + 1))
    fi
done <<EOF2
$(cat "$T"/acked.*)
EOF2
expect_eq "every acknowledged reservation is in the database after the crash" "$missing" 0
expect_eq "... with the VNIs it was acknowledged with" "$mismatch" 0
expect_eq "still no VNI in two live reservations" "$(overlaps)" 0
expect_eq "holds still match the live reservations" "$(holds_consistent)" t

# Allocation continues from the free queue: the next VNI is the one that
# has been free longest (schema/0004), never one still held.
want=$(psql_q "SELECT vni FROM vni_free WHERE vni BETWEEN $POOL_LO AND $POOL_HI ORDER BY seq LIMIT 1")
held=" $(psql_q "SELECT string_agg(vni::text, ' ') FROM vni_holds") "
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"after-crash","uid":1,"user":"u","nodes":"n1"}'
expect_status "reservations work after the restart" 201
expect_json "the VNI free longest comes first after the crash" '.vnis[0]' "$want"
case "$held" in
*" $want "*) not_ok "the queue's head $want is not held" ;;
*) ok "the queue's head $want is not held" ;;
esac
broker_stop
finish
