#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Changing vni.pool and restarting keeps every live reservation as it is;
# VNIs outside the new pool are never handed out again and leave when
# their reservations are released.  Also the pool and vni views.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 1024-1027)"
# The first start on a database records the pool: the migrations' own
# free queue is not a change an admin made.
expect_match "a first start logs the pool as recorded" "$(cat "$BROKER_LOG")" \
    "vni.pool 1024-1027: recorded as this database's pool"
expect_eq "... and no 'added, removed' count" "$(grep -c 'free queue now matches' "$BROKER_LOG")" 0
TOKEN=$SCHED_TOKEN
http POST /v1/reservations -d '{"job_id":"old1","uid":1,"user":"u","nodes":"n1","vni_count":2}'
expect_json "old1 takes 1024,1025" '.vnis | join(",")' 1024,1025
http POST /v1/reservations -d '{"job_id":"old2","uid":1,"user":"u","nodes":"n1"}'
expect_json "old2 takes 1026" '.vnis | join(",")' 1026
TOKEN=$(node_token n1) http PUT /v1/reservations/old2/nodes/n1 -d '{"cxi":"created"}'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/old2
expect_status "old2 quarantined" 202
broker_stop

# Shrink and move the pool: 1025-1026 stay in it, 1024 leaves.
sed -i 's/pool = "1024-1027"/pool = "1025-1026,2000-2001"/' "$T/b.toml"
broker_start "$T/b.toml" || { not_ok "broker restarts with the new pool"; finish; }
expect_match "a changed pool is logged as a change" "$(cat "$BROKER_LOG")" \
    'vni.pool is now 1025-1026,2000-2001 \(was 1024-1027\)'
TOKEN=$SCHED_TOKEN http GET /v1/reservations/old1
expect_json "a live reservation keeps its VNIs across the change" '.vnis | join(",")' 1024,1025
expect_json "... and its state" .state active
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_json "the pool shows the new ranges" .ranges 1025-1026,2000-2001
expect_json "total" .total 4
expect_json "1024 is held outside the pool" .outside_pool 1
expect_json "active VNIs (old1)" .active 2
expect_json "quarantined VNIs (old2)" .quarantined 1
expect_json "free: 2000 and 2001" .free 2
TOKEN=$SCHED_TOKEN
http POST /v1/reservations -d '{"job_id":"new1","uid":1,"user":"u","nodes":"n1","vni_count":2}'
expect_json "new jobs take only VNIs of the new pool" '.vnis | join(",")' 2000,2001
http POST /v1/reservations -d '{"job_id":"new2","uid":1,"user":"u","nodes":"n1"}'
expect_status "the new pool is full: held and quarantined VNIs are not handed out" 503
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/old1
expect_status "old1 released" 200
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_json "1024 disappears once released" .outside_pool 0
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"new3","uid":1,"user":"u","nodes":"n1","vni_count":2}'
expect_status "only the freed in-pool VNI is available: 2 requested is 503" 503
expect_match "... 1 free" "$(jq -r .error.message "$T/http.body")" '2 VNIs requested, 1 free'
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"new4","uid":1,"user":"u","nodes":"n1"}'
expect_json "1025 comes back; 1024 never does" '.vnis | join(",")' 1025

TOKEN=$ADMIN_TOKEN http GET /v1/vnis/1024
expect_json "GET /v1/vnis: 1024 is free and out of the pool" '[.state, .in_pool] | join(",")' free,false
expect_json "... last held by old1" .reservation.job_id old1
expect_match "... with the time of release" "$(jq -r .last_released_at "$T/http.body")" '^20[0-9-]+T'
TOKEN=$ADMIN_TOKEN http GET /v1/vnis/1026
expect_json "1026 is quarantined by old2" '[.state, .reservation.job_id] | join(",")' quarantined,old2
TOKEN=$ADMIN_TOKEN http GET /v1/vnis/2000
expect_json "2000 is active for new1" '[.state, .reservation.job_id] | join(",")' active,new1
TOKEN=$ADMIN_TOKEN http GET /v1/vnis/9
expect_json "a VNI never handed out" '[.state, (.reservation == null)] | join(",")' free,true
TOKEN=$ADMIN_TOKEN http GET /v1/vnis/70000
expect_status "a VNI past 65535 is 400" 400
TOKEN=$ADMIN_TOKEN http GET /v1/vnis/abc
expect_status "a non-numeric VNI is 400" 400

# Listing with filters and pages.
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?state=active&limit=1'
expect_json "a page of one" '.reservations | length' 1
next=$(jq -r .next "$T/http.body")
TOKEN=$ADMIN_TOKEN http GET "/v1/reservations?state=active&limit=1&after=$next"
expect_json "the next page" '.reservations[0].job_id' new4
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?node=n1&state=releasing'
expect_json "filter by node and state" '[.reservations[].job_id] | join(",")' old2
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?node=n2'
expect_json "a node in no job" '.reservations | length' 0
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?uid=2'
expect_json "filter by uid" '.reservations | length' 0
for bad in 'state=bogus:a bad state filter' 'limit=0:limit 0' 'limit=1001:limit 1001'; do
    TOKEN=$ADMIN_TOKEN http GET "/v1/reservations?${bad%%:*}"
    expect_status "${bad#*:} is 400" 400
done

# History is purged by age: make old1 look 100 days old, and run the
# sweeper (every second here) with a 90-day retention.
broker_stop
psql_q "UPDATE reservations SET released_at = now() - interval '100 days', created_at = now() - interval '101 days' WHERE job_id = 'old1'" >/dev/null
psql_q "UPDATE events SET at = now() - interval '100 days' WHERE job_id = 'old1'" >/dev/null
# ... and 2,500 more, so that one sweep has to purge batch after batch
# (1,000 a batch) to forget all 2,501 at once, as its log line says.
psql_q "INSERT INTO reservations (id, job_id, state, uid, username, nodes,
            node_count, vni_count, vnis, tcs_mask, created_at, created_by,
            release_requested_at, released_at, released_by, forced,
            hwcoll_mode, hwcoll_state, hwcoll_updated_at)
        SELECT 1000000 + i, 'bulk' || i, 'released', 1000, 'u', 'n1', 1, 1,
               ARRAY[5000 + i], 10, now() - interval '101 days', 'test',
               now() - interval '100 days', now() - interval '100 days',
               'test', false, 'auto', 'disabled', now() - interval '100 days'
          FROM generate_series(1, 2500) i" >/dev/null
expect_eq "2,500 old released reservations loaded" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'bulk%'")" 2500
sed -i 's/^\[vni\]$/[vni]\nsweep_interval_s = 1\nretain_days = 90/' "$T/b.toml"
broker_start "$T/b.toml" || not_ok "broker restarts"
bulk_gone () {
    [ "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'bulk%'")" = 0 ]
}
wait_for 30 bulk_gone
expect_eq "the sweeper purges the 2,500 old reservations" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id LIKE 'bulk%'")" 0
expect_match "... in one run, batch after batch" \
    "$(grep -o 'forgot [0-9]* reservations.*batches)' "$BROKER_LOG")" \
    '^forgot 2501 reservations released more than 90 days ago \(3 batches\)$'
wait_for 5 sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $ADMIN_TOKEN' '$BROKER_URL/v1/reservations?state=released' | jq '[.reservations[] | select(.job_id == \"old1\")] | length')\" = 0 ]"
TOKEN=$ADMIN_TOKEN http GET '/v1/reservations?state=released'
expect_json "a reservation released longer ago than retain_days is purged" '[.reservations[] | select(.job_id == "old1")] | length' 0
TOKEN=$ADMIN_TOKEN http GET '/v1/events?job_id=old1'
expect_json "... with its old audit events" '.events | length' 0
expect_eq "... and its node ranges" "$(psql_q "SELECT count(*) FROM reservation_ranges g WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = g.reservation_id)")" 0
TOKEN=$ADMIN_TOKEN http GET /v1/reservations/old2
expect_json "younger reservations stay" .job_id old2
TOKEN=$ADMIN_TOKEN http GET '/v1/events?job_id=old2'
expect_match "... with their events" "$(jq '.events | length' "$T/http.body")" '^[1-9]'

# A pool that includes the default service's VNIs is refused at load.
sed -i 's/pool = ".*"/pool = "1-100"/' "$T/b.toml"
out=$("$VNIBROKERD" --check-config "$T/b.toml" 2>&1)
expect_eq "a pool with VNI 1 or 10 is a configuration error" "$?" 2
expect_match "... saying why" "$out" 'VNIs 1 and 10 belong to the default CXI service'
sed -i 's/pool = ".*"/pool = "1000-70000"/' "$T/b.toml"
out=$("$VNIBROKERD" --check-config "$T/b.toml" 2>&1)
expect_match "VNIs above 65535 are refused" "$out" 'vni.pool: .*70000'
broker_stop
finish
