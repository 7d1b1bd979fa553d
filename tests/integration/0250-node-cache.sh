#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node-fetch cache: a broker forgets a job at once when it changes it
# itself; another replica's change shows after at most server.node_cache_ms;
# and a stale answer cannot make a node hold a service the broker does not
# know about, because the report that must precede it is refused.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml" 'node_cache_ms = 1500'
brokers_ab "$T/b.toml"
N1=$(node_token n1)

state_via () {
    curl -s -H "Authorization: Bearer $N1" "$1/v1/reservations/$2" | jq -r .state
}

BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"c1","uid":1,"user":"u","nodes":"n[1-2]"}'
id=$(jq .id "$T/http.body")
expect_eq "a node's first fetch (broker B) reads the database" "$(state_via "$URL_B" c1)" active
BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/c1
expect_status "released on broker A" 200
expect_eq "broker A answers its own change at once" "$(state_via "$URL_A" c1)" released
expect_eq "broker B may answer from its cache for a moment" "$(state_via "$URL_B" c1)" active
BROKER_URL=$URL_B TOKEN=$N1 http PUT /v1/reservations/c1/nodes/n1 -d "{\"cxi\":\"creating\",\"reservation_id\":$id}"
expect_status "but the report a node must make before touching its NIC is refused" 409
expect_json "... the job is no longer active" .error.code job_not_active
# Its cache entry ages out (node_cache_ms, 1.5 s): wait for that, bounded.
b_sees_release () {
    [ "$(state_via "$URL_B" c1)" = released ]
}
wait_for 10 b_sees_release
expect_eq "after node_cache_ms broker B sees the release" "$(state_via "$URL_B" c1)" released

# A broker's own writes invalidate its cache.
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"c2","uid":1,"user":"u","nodes":"n[1-2]"}'
expect_eq "c2 fetched through B" "$(state_via "$URL_B" c2)" active
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/c2
expect_eq "released through B: B's next answer is fresh" "$(state_via "$URL_B" c2)" released
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"c2","uid":1,"user":"u","nodes":"n[1-2]"}'
new=$(jq .id "$T/http.body")
got=$(curl -s -H "Authorization: Bearer $N1" "$URL_B/v1/reservations/c2" | jq .id)
expect_eq "a requeue through B is seen at once (the new reservation)" "$got" "$new"

# The cache never widens access: membership is checked on every hit.
N9=$(node_token n9)
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $N9" "$URL_B/v1/reservations/c2")
expect_eq "a node outside the job is refused even when the job is cached" "$code" 403
# Schedulers always read the database.
BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/c2
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http GET /v1/reservations/c2
expect_json "a scheduler's read on B is never cached" .state released

# node_cache_ms = 0 turns the cache off.
kill -TERM "$PID_A"
wait "$PID_A"
sed -i 's/node_cache_ms = 1500/node_cache_ms = 0/' "$T/b.toml"
broker_start "$T/b.toml" || not_ok "broker C starts"
URL_C=$BROKER_URL
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"c3","uid":1,"user":"u","nodes":"n1"}'
expect_eq "C reads c3" "$(state_via "$URL_C" c3)" active
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/c3
expect_eq "with the cache off, C sees B's release at once" "$(state_via "$URL_C" c3)" released
finish
