#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A statement PostgreSQL rolls back to break a deadlock is run again by
# the broker, and the client is answered as if nothing had happened: a
# deadlock is the database's own lock order, not a reason for a 503.
#
# A psql session (superuser, its own deadlock_timeout set to a minute, so
# that PostgreSQL always picks the broker's side as the victim) locks a
# job's reservation row; the job's release then takes the job's lock
# (vnib_jobs_lock) and waits for that row; the session then asks for the
# job's lock: a cycle.  After the broker's deadlock_timeout (1 s)
# PostgreSQL rolls the release back; the broker runs it again, it waits
# for the row until the session commits, and the release is answered 200.
# The broker's log says it ran the statement again; PostgreSQL's log has
# the deadlock, so the test knows one happened.  Then the job is released,
# once (no node had reported: no quarantine).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"
sed -i -e 's/^query_timeout_ms = .*/query_timeout_ms = 20000/' "$T/b.toml"
broker_migrate_start "$T/b.toml"

http_reserve dl1 "n[1-2]"

# The session: commands fed one at a time through a FIFO.
mkfifo "$T/sql.in"
chmod 0666 "$T/sql.in"
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d vnibroker -XAtq \
    -v ON_ERROR_STOP=1 <"$T/sql.in" >"$T/locker.out" 2>&1 &
LOCKER=$!
track "$LOCKER"
exec 7>"$T/sql.in"
echo "BEGIN; SET LOCAL deadlock_timeout = '60s';
      SELECT 'row ' || count(*) FROM (SELECT 1 FROM reservations
                                       WHERE job_id = 'dl1' FOR UPDATE) x;" >&7
wait_for 10 grep -q '^row 1$' "$T/locker.out" ||
    not_ok "the session holds the job's row ($(cat "$T/locker.out"))"

curl -s -m 30 -o "$T/rel.body" -w '%{http_code}' -X DELETE \
    -H "Authorization: Bearer $SCHED_TOKEN" \
    "$BROKER_URL/v1/reservations/dl1" >"$T/rel.code" 2>/dev/null &
REL=$!
wait_for 10 lock_waiters 1
expect_eq "the release waits for the session's row, holding the job's lock" \
    "$(psql_q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")" 1
echo "SELECT 'job lock ' || pg_advisory_xact_lock(1986947426, hashtext('dl1'))::text;
      COMMIT;" >&7
exec 7>&-
wait "$REL"
wait "$LOCKER"

expect_eq "PostgreSQL broke a deadlock" \
    "$(grep -c 'deadlock detected' "$T/pglog/pg.log")" 1
expect_match "... the session got the job's lock once the release was rolled back" \
    "$(cat "$T/locker.out")" '^job lock $'
expect_match "the release is answered as if there had been none" "$(cat "$T/rel.code")" '^20[02]$'
expect_eq "... with the job's state" "$(jq -r .state "$T/rel.body")" released
expect_match "the broker ran the statement again, logged as a warning" \
    "$(grep 'deadlock detected' "$BROKER_LOG")" \
    'warning.*deadlock detected \(SQLSTATE 40P01\); rolled back, run again'
expect_eq "... not as an error" "$(grep -c '"level":"err".*deadlock\|error.*deadlock' "$BROKER_LOG")" 0
expect_eq "one release event" \
    "$(psql_q "SELECT count(*) FROM events WHERE job_id = 'dl1' AND action = 'release'")" 1
TOKEN=$SCHED_TOKEN http GET /v1/reservations/dl1
expect_eq "the job is released (no node had reported)" "$(jq -r .state <<<"$HTTP_BODY")" released
expect_db_consistent
finish
