#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Group commit (server/store/group.c, schema/0008_group_commit.sql): concurrent
# reserves and releases are written in shared transactions, and each
# request still gets exactly its own outcome.
#
#   - A job whose lock is held elsewhere does not hold up the jobs grouped
#     with it: they are all answered while it waits, and it is answered
#     when the lock is free, with the ticket (reservation id) its first
#     try took, so that a stale retry can still be recognised.
#   - A pool too small for everyone, with jobs of 1 and 3 VNIs reserving
#     at once: each job gets all its VNIs or none (503 vni_pool_exhausted), no VNI
#     is handed out twice, and the database holds exactly what the clients
#     were told.
#   - Concurrent releases in groups free every VNI once.
#   - The groups really carried more than one request (/metrics).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1

# reserve_bg JOB VNIS NAME: POST in the background; status in $T/NAME.code,
# body in $T/NAME.body.
reserve_bg () {
    curl -s -m 30 -o "$T/$3.body" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\",\"vni_count\":$2}" \
        "$BROKER_URL/v1/reservations" >"$T/$3.code" 2>/dev/null &
    pids="$pids $!"
}


broker_config "$T/b.toml" 'workers = 40
max_connections = 256'
sed -i 's/query_timeout_ms = 2000/query_timeout_ms = 20000/' "$T/b.toml"
cat >>"$T/b.toml" <<EOF

[vni]
pool = "2000-2063"
EOF
broker_migrate_start "$T/b.toml"

# ---- a held job does not hold up its group ------------------------------------

hold_job_lock held 5
pids=""
reserve_bg held 1 held
held_pid=$pids
wait_for 5 lock_waiters 1 || not_ok "the reserve of 'held' waits on its job's lock"
pids=""
start=$(date +%s%N)
for i in $(seq 1 24); do reserve_bg "g$i" 1 "g$i"; done
# shellcheck disable=SC2086
wait $pids
ms=$((($(date +%s%N) - start) / 1000000))
codes=$(for i in $(seq 1 24); do cat "$T/g$i.code"; echo; done | sort | uniq -c | tr -s ' ' | sed 's/^ //' | paste -sd, -)
expect_eq "24 reserves of other jobs are all created" "$codes" "24 201"
expect_match "... while 'held' still waits (answered in ${ms} ms)" \
    "$(cat "$T/held.code" 2>/dev/null)" '^$'
wait $held_pid
expect_eq "'held' is created once its lock is free" "$(cat "$T/held.code")" 201
held_id=$(jq -r .id "$T/held.body")
# The first try (answered busy) took ticket 1 of this fresh database; a
# second try with a new ticket would have made reservation 2 or later.
expect_eq "'held' kept the ticket of its first try" "$held_id" 1
expect_eq "one event per reserve" \
    "$(psql_q "SELECT count(*) FROM events WHERE action = 'reserve'")" 25

# ---- concurrent releases in groups ------------------------------------------------

pids=""
for j in held $(seq -f 'g%g' 1 24); do
    curl -s -m 30 -o /dev/null -w '%{http_code}\n' -X DELETE \
        -H "Authorization: Bearer $SCHED_TOKEN" "$BROKER_URL/v1/reservations/$j" \
        >"$T/rel.$j" 2>/dev/null &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
expect_eq "25 concurrent releases answered 200" \
    "$(cat "$T"/rel.* | sort | uniq -c | tr -s ' ' | sed 's/^ //')" "25 200"
expect_eq "no VNI is held after them" "$(psql_q "SELECT count(*) FROM vni_holds")" 0
expect_eq "every VNI of the pool is free once" \
    "$(psql_q "SELECT count(*), count(DISTINCT vni) FROM vni_free WHERE vni BETWEEN 2000 AND 2063")" "64|64"

# ---- a pool too small, in groups --------------------------------------------------

broker_stop
sed -i 's/^pool = .*/pool = "2000-2019"/' "$T/b.toml"
broker_start "$T/b.toml" || { not_ok "broker restarts on a 20-VNI pool"; finish; }
pids=""
for i in $(seq 1 40); do reserve_bg "x$i" $((i % 2 ? 1 : 3)) "x$i"; done
# shellcheck disable=SC2086
wait $pids
: >"$T/told"
bad=""
for i in $(seq 1 40); do
    code=$(cat "$T/x$i.code")
    want=$((i % 2 ? 1 : 3))
    case "$code" in
        201)
            n=$(jq '.vnis | length' "$T/x$i.body")
            [ "$n" = "$want" ] || bad="$bad x$i:$n/$want"
            jq -r '.vnis[]' "$T/x$i.body" >>"$T/told"
            echo "x$i" >>"$T/created"
            ;;
        503) jq -e '.error.code == "vni_pool_exhausted"' "$T/x$i.body" >/dev/null ||
            bad="$bad x$i:$(head -c 80 "$T/x$i.body")" ;;
        *) bad="$bad x$i:$code" ;;
    esac
done
expect_eq "each job got all its VNIs or a 503 vni_pool_exhausted" "$bad" ""
expect_eq "no VNI was handed out twice" "$(sort "$T/told" | uniq -d | head -n 3)" ""
expect_match "the pool was used up (VNIs told: $(wc -l <"$T/told"))" \
    "$(wc -l <"$T/told")" '^(1[8-9]|20)$'
expect_eq "the database holds exactly the VNIs the clients were told" \
    "$(psql_q "SELECT vni FROM vni_holds ORDER BY vni" | paste -sd,)" \
    "$(sort -n "$T/told" | paste -sd,)"
expect_eq "... and exactly the jobs that were told 201" \
    "$(psql_q "SELECT job_id FROM reservations WHERE state = 'active' ORDER BY job_id" | paste -sd,)" \
    "$(sort "$T/created" | paste -sd,)"
expect_eq "a refused job left nothing behind (no event, no ranges)" \
    "$(psql_q "SELECT count(*) FROM events e WHERE e.job_id LIKE 'x%' AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.job_id = e.job_id)")|$(psql_q "SELECT count(*) FROM reservation_ranges g WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = g.reservation_id)")" \
    "0|0"

http GET /metrics
largest=$(awk '/^vnib_db_group_largest\{op="reserve"\}/ { print $2 }' "$T/http.body")
expect_match "reserves were written in groups (largest: $largest requests)" \
    "$largest" '^([2-9]|[1-9][0-9]+)$'
expect_match "... and counted" "$(grep -c '^vnib_db_groups_total' "$T/http.body")" '^4$'

broker_stop
expect_eq "clean exit" "$?" 0
expect_eq "no sanitizer report" \
    "$(grep -hE 'Sanitizer|runtime error' "$T"/broker.*.log | head -n 5)" ""
finish
