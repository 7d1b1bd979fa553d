#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A database that refuses writes for lack of a resource (disk full:
# SQLSTATE 53100; any class 53 error or 58030 I/O error is treated alike):
# writes answer 503 database_full with a fixed message and Retry-After,
# reads still work, nothing half-written is left, /readyz reports not
# ready until a write succeeds again (its own probe write, or a
# request's), and the broker recovers by itself.  The refusal is made by
# triggers raising SQLSTATE 53100, the same error PostgreSQL raises when
# it cannot extend a file (filling a real filesystem needs a mount, which
# the test machine's configuration is not changed for).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml"

reserve () {
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1000,\"user\":\"u\",\"nodes\":\"n[1-2]\"}"
}
reserve before
expect_status "a reserve before the disk fills" 201

psql_q "CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS \$\$
        BEGIN
            RAISE EXCEPTION 'could not extend file \"base/1/2\": No space left on device'
                USING ERRCODE = 'disk_full';
        END \$\$;
        CREATE TRIGGER full_reservations BEFORE INSERT ON reservations
            FOR EACH ROW EXECUTE FUNCTION test_disk_full();
        CREATE TRIGGER full_probe BEFORE INSERT ON write_probe
            FOR EACH ROW EXECUTE FUNCTION test_disk_full();" >/dev/null
events=$(psql_q "SELECT count(*) FROM events")

reserve full1
expect_status "a reserve while the disk is full is 503" 503
expect_json "... with code database_full" .error.code database_full
expect_match "... a fixed message" "$(jq -r .error.message "$T/http.body")" \
    '^the database cannot write: out of disk space or another resource'
expect_no_match "... which does not quote the server" "$(cat "$T/http.body")" 'base/1/2'
expect_match "... and Retry-After" "$(header Retry-After)" '^[0-9]+$'
expect_match "the log has the server's words and SQLSTATE" "$(cat "$BROKER_LOG")" \
    'No space left on device \(SQLSTATE 53100\)'
expect_eq "nothing of the refused reserve was written" \
    "$(psql_q "SELECT count(*) FROM reservations WHERE job_id = 'full1'") $(psql_q "SELECT count(*) FROM events")" \
    "0 $events"

http GET /readyz
expect_status "readyz is 503 while writes fail" 503
expect_json "... with code database_full" .error.code database_full
http GET /healthz
expect_status "healthz stays 200" 200
TOKEN=$SCHED_TOKEN http GET /v1/reservations/before
expect_status "reads still work" 200

# A request's write succeeding again makes the broker ready (the probe's
# write still fails here).
psql_q "DROP TRIGGER full_reservations ON reservations" >/dev/null
http GET /readyz
expect_status "readyz stays 503 while nothing has written" 503
reserve full2
expect_status "a reserve once space is back" 201
http GET /readyz
expect_status "... makes readyz 200" 200

# The probe's own write succeeding makes it ready too.
psql_q "CREATE TRIGGER full_reservations BEFORE INSERT ON reservations
            FOR EACH ROW EXECUTE FUNCTION test_disk_full()" >/dev/null
reserve full3
expect_status "the disk fills again: 503" 503
http GET /readyz
expect_status "... not ready" 503
psql_q "DROP TRIGGER full_reservations ON reservations;
        DROP TRIGGER full_probe ON write_probe" >/dev/null
http GET /readyz
expect_status "space back: readyz is 200 through its probe write alone" 200
reserve full3
expect_status "... and the refused reserve, sent again, succeeds" 201
expect_eq "the broker was never restarted" "$(kill -0 "$BROKER_PID" && echo alive)" alive
finish
