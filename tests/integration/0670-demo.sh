#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make demo` (deploy/local/demo.sh) does what README.md's "Demo" section
# says: run for a minute (DEMO_SECONDS) in a private run folder and port,
# it prints the status page's URL with the monitor token, serves /ui/,
# reserves and releases a stream of jobs on its 16 simulated nodes (some
# with hardware collectives), the two faulty nodes' cleanups fail and the
# broker drains them, every other node's quarantines end, and when it
# stops by itself nothing it started is left running.
. "$(dirname "$0")/lib.sh"

for p in python3 jq setsid; do
    command -v "$p" >/dev/null || skip_all "$p not installed (make deps)"
done

RUN=$T/run
PORT=$(pick_port) || skip_all "no free port"
FMPORT=$(pick_port) || skip_all "no free port"
URL=http://127.0.0.1:$PORT
BROKER_URL=$URL
FAULTY="node3 node12"

run_folder "$RUN" || { not_ok "a PostgreSQL cluster"; finish; }

DEMO_PID=""
trap 'stop_script "$DEMO_PID"; cleanup' EXIT

VNIB_RUN_DIR=$RUN VNIB_PORT=$PORT VNIB_FMSIM_PORT=$FMPORT DEMO_SECONDS=60 \
    DEMO_NODES=16 DEMO_FAULTY="node12,node3" \
    sh "$TOP/deploy/local/demo.sh" "$BUILD" >"$T/demo.out" 2>&1 &
DEMO_PID=$!

if wait_for 60 grep -q 'status page:' "$T/demo.out"; then
    ok "the demo starts"
else
    not_ok "the demo starts"
    sed 's/^/#   /' "$T/demo.out" | tail -n 30
    finish
fi
expect_eq "it prints the status page's URL with the monitor token" \
    "$(sed -n 's/^ *status page: *//p' "$T/demo.out")" "$URL/ui/#token=$(cat "$RUN/monitor.token")"
expect_match "it names the faulty nodes" "$(cat "$T/demo.out")" "faulty NICs .*: node3 node12"

TOKEN=""
http GET /ui/
expect_status "GET /ui/ on the demo's broker" 200
expect_match "... as text/html" "$(header Content-Type)" '^text/html'

ADMIN=$(cat "$RUN/admin.token")
TOKEN=$ADMIN http GET /v1/pool
expect_json "the demo's pool is 64 VNIs, 1024-1087" '"\(.ranges) \(.total)"' "1024-1087 64"
drained () {
    TOKEN=$ADMIN http GET "/v1/nodes/$1"
    [ "$(printf '%s' "$HTTP_BODY" | jq -r .drained)" = true ]
}
for n in $FAULTY; do
    if wait_for 55 drained "$n"; then
        ok "faulty $n is drained by the broker while the demo runs"
    else
        not_ok "faulty $n is drained by the broker while the demo runs"
        printf '%s\n' "$HTTP_BODY" | sed 's/^/#   /'
    fi
done
TOKEN=$ADMIN http GET /v1/nodes/node3
expect_match "... for a failed cleanup" "$(printf '%s' "$HTTP_BODY" | jq -r '.drained_reason // empty')" .

# It stops by itself after DEMO_SECONDS, and stops everything.
if wait_for 100 sh -c "! kill -0 $DEMO_PID"; then
    wait "$DEMO_PID"
    expect_eq "the demo stops by itself after DEMO_SECONDS, status 0" "$?" 0
else
    not_ok "the demo stops by itself after DEMO_SECONDS"
fi
DEMO_PID=""
expect_match "it stopped the broker, fmsim and PostgreSQL" "$(tail -n 3 "$T/demo.out")" \
    'run: stopped vnibrokerd, fmsim and PostgreSQL'
left=$(pgrep -a -f "$T/" || true)
expect_eq "no process it started is left (agents, driver, broker, fmsim, database)" "$left" ""
expect_eq "... PostgreSQL's pid file is gone" \
    "$([ -f "$RUN/pg/postmaster.pid" ] && echo present || echo gone)" gone

# What happened, from the database it leaves.
PGDIR=$RUN/pg
PGSOCK=$RUN/sock
PGLOG=$RUN/log/postgresql-after.log
pg_resume_start || { not_ok "the demo's database starts again"; finish; }
jobs=$(psql_q "SELECT count(*) FROM events WHERE action = 'reserve'")
rel=$(psql_q "SELECT count(*) FROM events WHERE action = 'release'")
if [ "$jobs" -ge 10 ]; then ok "jobs were reserved ($jobs)"; else not_ok "jobs were reserved ($jobs)"; fi
expect_eq "every job was released when it stopped" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE state = 'active'")/$rel" "0/$jobs"
hw=$(psql_q "SELECT count(*) FROM reservations
              WHERE hwcoll_state IN ('reserved', 'releasing', 'released')")
if [ "$hw" -ge 1 ]; then
    ok "some jobs had hardware collectives reserved ($hw)"
else
    not_ok "some jobs had hardware collectives reserved"
fi
expect_eq "the broker drained the faulty nodes, and only them" \
    "$(psql_q "SELECT string_agg(name, ' ' ORDER BY name) FROM nodes WHERE drained")" "node12 node3"
expect_eq "the nodes still holding services are the faulty ones" \
    "$(psql_q "SELECT string_agg(DISTINCT node, ' ' ORDER BY node) FROM node_reports
                WHERE cxi <> 'destroyed'")" "node12 node3"
expect_eq "every quarantine without a faulty node ended" \
    "$(psql_q "SELECT count(*) FROM reservations r WHERE state <> 'released'
                AND NOT EXISTS (SELECT 1 FROM node_reports n WHERE n.reservation_id = r.id
                                 AND n.node IN ('node3', 'node12'))")" 0
q=$(psql_q "SELECT count(*) FROM reservations WHERE state = 'releasing'")
if [ "$q" -ge 1 ]; then
    ok "the faulty nodes' jobs stay quarantined ($q)"
else
    not_ok "the faulty nodes' jobs stay quarantined ($q)"
fi
expect_eq "quarantines ended as nodes confirmed" \
    "$(psql_q "SELECT count(*) > 0 FROM events WHERE action = 'quarantine_end'")" t
pg_stop
finish
