#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A slow Fabric Manager does not hold the request threads: at most
# hwcoll.request_concurrency reserves wait on it in request threads; the
# others answer at once with hwcoll "pending" and the workers complete
# them within seconds.  Node fetches stay fast meanwhile.  A deferred
# reserve is marked in the database, so a broker that restarts completes
# it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux "request_concurrency = 2"
# A reserve is one FM request (two if the job exists), so 2-4 s with 2 s
# of latency each.
set_key "$T/b.toml" reserve_timeout_ms 10000
broker_migrate_start "$T/b.toml"

TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"base","uid":1,"user":"u","nodes":"n[1-2]","hwcoll":"off"}'
expect_status "a job for node fetches" 201
NODE_TOKEN=$(node_token n1)

fm_fault '{"latency_ms":2000}'
fm_posts () {
    curl -sS --max-time 10 "$FM_ADMIN/fmsim/state" |
        jq -r '.counters.requests["POST /fabric/collectives/jobs/"] // 0'
}
posts0=$(fm_posts)
for i in 1 2 3 4 5 6 7 8; do
    curl -sS -o "$T/r$i.json" -w '%{time_total}\n' --max-time 20 \
        -H "Authorization: Bearer $SCHED_TOKEN" -H "Content-Type: application/json" \
        -d "{\"job_id\":\"b$i\",\"uid\":1,\"user\":\"u\",\"nodes\":\"n[1-3]\"}" \
        "$BROKER_URL/v1/reservations" >"$T/r$i.time" 2>&1 &
    CURLS="${CURLS:-} $!"
    # Apart, so that each connection goes to an idle server thread (one
    # that waits on the FM accepts none).
    sleep 0.05
done
# The node fetches start once request_concurrency (2) reserves wait on the FM.
fm_waited_on () { [ "$(fm_posts)" -ge $((posts0 + 2)) ]; }
wait_for 10 fm_waited_on || echo "# fmsim has $(fm_posts) reserve requests, expected $((posts0 + 2))"
slowest=0
for i in 1 2 3 4 5 6; do
    t=$(curl -sS -o /dev/null -w '%{time_total} %{http_code}' --max-time 20 \
        -H "Authorization: Bearer $NODE_TOKEN" "$BROKER_URL/v1/reservations/base")
    ms=$(printf '%s\n' "$t" | awk '{ printf "%d", $1 * 1000 }')
    [ "$ms" -gt "$slowest" ] && slowest=$ms
    case "$t" in *" 200") ;; *) not_ok "node fetch $i answers 200 ($t)" ;; esac
    sleep 0.2
done
if [ "$slowest" -lt 500 ]; then
    ok "node fetches answer fast while the FM is slow (slowest $slowest ms)"
else
    not_ok "node fetches wait on the FM (slowest $slowest ms)"
fi
for p in $CURLS; do wait "$p"; done
done_at=$(date +%s%N)

pending=0
fast=0
reserved=0
for i in 1 2 3 4 5 6 7 8; do
    st=$(jq -r .hwcoll.state "$T/r$i.json" 2>/dev/null)
    echo "# b$i: ${st:-?} $(cat "$T/r$i.time") $(jq -c "[.error, .hwcoll.reason]" "$T/r$i.json" 2>/dev/null)"
    ms=$(awk '{ printf "%d", $1 * 1000 }' "$T/r$i.time")
    case "$st" in
    pending)
        pending=$((pending + 1))
        [ "$ms" -lt 1000 ] && fast=$((fast + 1))
        expect_match "b$i: the pending answer says why" \
            "$(jq -r .hwcoll.reason "$T/r$i.json")" 'Fabric Manager is busy'
        ;;
    reserved) reserved=$((reserved + 1)) ;;
    esac
done
expect_eq "request_concurrency 2: two reserves waited on the FM" "$reserved" 2
expect_eq "... the six others answered pending" "$pending" 6
expect_eq "... at once (< 1 s)" "$fast" 6

all_reserved () {
    [ "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'b%' AND hwcoll_state = 'reserved'")" = 8 ]
}
if wait_for 15 all_reserved; then
    ms=$((($(date +%s%N) - done_at) / 1000000))
    ok "all eight are reserved in the FM ($ms ms after the answers)"
    # The FM answers a deferred reserve after 4 s, as any.
    if [ "$ms" -lt 7000 ]; then ok "... within seconds"; else not_ok "... took $ms ms"; fi
else
    not_ok "all eight are reserved in the FM"
    psql_q "SELECT job_id, hwcoll_state, hwcoll_reason FROM reservations ORDER BY id"
fi
expect_eq "fmsim holds the eight" "$(fm_ids | grep -c '^tux-b[0-9]-r')" 8
TOKEN=$SCHED_TOKEN http GET /v1/reservations/b8
expect_json "a deferred reservation shows its session token when done" \
    '.hwcoll.session_token | length > 8' true
expect_match "vnib_hwcoll_deferred_total counts them" \
    "$(metric "$BROKER_URL" vnib_hwcoll_deferred_total)" '^6$'
fm_fault '{"latency_ms":0}'

# ---- a deferred reserve survives a restart ---------------------------------------
# The broker stops with a reservation marked deferred that no worker has
# taken yet (made here in the database); the next broker completes it.
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"later","uid":1,"user":"u","nodes":"n[1-3]","hwcoll":"off"}'
expect_status "a job" 201
broker_stop
id=$(psql_q "SELECT id FROM reservations WHERE job_id = 'later'")
psql_q "UPDATE reservations SET hwcoll_mode = 'on', hwcoll_state = 'pending',
        hwcoll_reason = 'the Fabric Manager is busy', fm_job_id = 'tux-later-r$id',
        addrs_per_job = 4, hwcoll_due = now() WHERE id = $id" >/dev/null
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
later_reserved () {
    [ "$(psql_q "SELECT hwcoll_state FROM reservations WHERE id = $id")" = reserved ]
}
if wait_for 10 later_reserved; then ok "the restarted broker completes the deferred reserve"; else not_ok "the restarted broker completes the deferred reserve"; fi
expect_eq "... in the FM" "$(fm_ids | grep -c "^tux-later-r$id\$")" 1
broker_stop
finish
