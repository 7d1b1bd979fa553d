#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Jobs with hardware collectives under concurrent load on two replicas,
# one or the other killed with SIGKILL every few seconds: the history
# client (tests/stress/history.c --hwcoll) checks its usual invariants and
# that every session token a reserve reported is the one the broker keeps
# (the FM outcomes of concurrent reserves commit in groups, and the
# release queue confirms its work in batches: neither may lose or mix up
# anything).  Once the clients are done and the release queue has
# drained, the Fabric Manager holds no job, and no reservation is left
# reserved, pending or releasing.
#
# Knobs: HWHIST_SECONDS (default 24), HWHIST_THREADS (8),
# HWHIST_KILL_EVERY (6 s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

HISTORY=$BUILD/tests/stress/history
SECONDS_RUN=${HWHIST_SECONDS:-24}
THREADS=${HWHIST_THREADS:-8}
KILL_EVERY=${HWHIST_KILL_EVERY:-6}

[ -x "$HISTORY" ] || { not_ok "the history client is built ($HISTORY)"; finish; }
pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
auth_setup
umask 077
printf '%s' "$SCHED_TOKEN" >"$T/sched.token"
printf '%s' "$ADMIN_TOKEN" >"$T/admin.token"
umask 022

# Both replicas share the FM, the database and the token key; each client
# thread runs far more jobs a second than a node reports: no report limit.
for r in A B; do
    hwcoll_config "$T/$r.toml" hist
    sed -i -e '/^\[server\]/a report_rate = 0' \
        -e 's/^acquire_timeout_ms = .*/acquire_timeout_ms = 2000/' \
        -e 's/^level = .*/level = "notice"/' "$T/$r.toml"
done
replicas_ab_start
ok "two replicas with hardware collectives on fixed ports: $URL_A $URL_B"

history_with_kills --hwcoll --nodes-prefix hw
expect_match "... tokens were reported and read back, so the check had teeth" \
    "$(grep 'hwcoll: every session token' "$T/history.out")" \
    'PASS .*told [1-9][0-9]*, read back [1-9][0-9]*, differed 0\)'

# The FM outcomes went through group commit (how many share a transaction
# depends on timing, so only that the path ran is checked here).
groups=0
for u in "$URL_A" "$URL_B"; do
    g=$(curl -s --max-time 10 -H "Authorization: Bearer $ADMIN_TOKEN" "$u/metrics" |
        awk '/^vnib_db_groups_total\{op="hwcoll"\}/ { print $2 }')
    groups=$((groups + ${g:-0}))
done
expect_match "FM outcomes were written through group commit ($groups transactions)" "$groups" '^[1-9]'

# ---- after the run: the release queue drains --------------------------------
queue_drained () {
    [ "$(psql_q "SELECT count(*) FROM fm_queue")" = 0 ] && [ -z "$(fm_ids)" ]
}
wait_for 90 queue_drained
expect_eq "the release queue drained" "$(psql_q "SELECT count(*) FROM fm_queue")" 0
expect_eq "... and the FM holds no job" "$(fm_ids | wc -l)" 0
expect_eq "no reservation is left reserved, pending or releasing" \
    "$(psql_q "SELECT count(*) FROM reservations
                WHERE hwcoll_state IN ('reserved', 'pending', 'releasing')")" 0
released=$(psql_q "SELECT count(*) FROM reservations WHERE hwcoll_state = 'released'")
expect_match "jobs had multicast reservations released ($released)" "$released" '^[1-9]'
expect_eq "every FM release the queue confirmed has its event" \
    "$(psql_q "SELECT count(*) FROM reservations r
                WHERE hwcoll_state = 'released' AND NOT EXISTS (
                      SELECT 1 FROM events e WHERE e.reservation_id = r.id
                         AND e.action = 'hwcoll'
                         AND e.detail->>'state' = 'released')")" 0
expect_db_consistent
# A deadlock PostgreSQL breaks costs its victim deadlock_timeout (1 s) and
# is run again by its broker (store_run): no client is told.  Each is
# shown, with its DETAIL (both processes' statements: which locks crossed).
deadlocks=$(grep -c 'deadlock detected' "$T/pglog/pg.log")
retried=$(cat "$T"/broker-*.log | grep -c 'deadlock detected.*rolled back, run again')
echo "# deadlocks PostgreSQL broke: $deadlocks; statements the brokers ran again for one: $retried"
[ "$deadlocks" = 0 ] ||
    grep -A 12 'deadlock detected' "$T/pglog/pg.log" | head -n 60 | sed 's/^/#   /'
expect_eq "every deadlock's victim was run again by its broker" \
    "$((retried >= deadlocks))" 1
finish
