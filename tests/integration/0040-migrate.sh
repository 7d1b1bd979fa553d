#!/bin/bash
# Migrations: refused start on an old schema, --migrate applies once, a
# second run is a no-op, and concurrent runs are safe; rows written under
# an older schema keep their meaning (0016: hwcoll causes; 0019: a
# fragmented job's nodes).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"

# expect_run RC LABEL MATCH-LABEL REGEX CMD...: run CMD; its exit status
# is RC and its output (stdout and stderr, also left in out) matches REGEX.
expect_run () {
    rc=$1 label=$2 mlabel=$3 re=$4
    shift 4
    out=$("$@" 2>&1)
    expect_eq "$label" "$?" "$rc"
    expect_match "$mlabel" "$out" "$re"
}

expect_run 1 "the broker refuses an unmigrated database (exit 1)" "... and says how to migrate" \
    "schema is at version 0.*run 'vnibrokerd -c $T/b.toml --migrate'" timeout 20 "$VNIBROKERD" -c "$T/b.toml"

expect_run 0 "--migrate succeeds" "... reporting the upgrade" \
    "schema upgraded from version 0 to $SCHEMA_VERSION" "$VNIBROKERD" -c "$T/b.toml" --migrate
expect_eq "schema_version holds one row per migration" "$(psql_q "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version")" "$SCHEMA_VERSIONS"

expect_run 0 "a second --migrate succeeds" "... as a no-op" \
    "schema is current \\(version $SCHEMA_VERSION\\)" "$VNIBROKERD" -c "$T/b.toml" --migrate
expect_eq "... adding no rows" "$(psql_q 'SELECT count(*) FROM schema_version')" "$SCHEMA_VERSION"

# Each applied migration's SHA-256 is recorded (schema/0013): the texts
# compiled into the binary are the files of this checkout.
digests () {
    for f in "$TOP"/schema/[0-9][0-9][0-9][0-9]_*.sql; do
        printf '%s %s\n' "$(basename "$f")" "$(sha256sum <"$f" | cut -d' ' -f1)"
    done
}
expect_eq "every applied migration's SHA-256 is recorded, as the files' own" \
    "$(psql_q "SELECT string_agg(name || ' ' || sha256, E'\n' ORDER BY version) FROM schema_version")" \
    "$(digests)"

# Two replicas migrating a fresh database at once.
as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib race
sed "s/dbname=vnibroker/dbname=race/" "$T/b.toml" >"$T/race.toml"
for i in 1 2 3 4; do
    "$VNIBROKERD" -c "$T/race.toml" --migrate >"$T/race.$i.log" 2>&1 &
    eval "p$i=\$!"
done
rcs=""
for i in 1 2 3 4; do
    eval "wait \$p$i"
    rcs="$rcs$?"
done
expect_eq "four concurrent --migrate all succeed" "$rcs" "0000"
expect_eq "exactly one of them applied the migration" \
    "$(cat "$T"/race.*.log | grep -c "upgraded from version 0 to $SCHEMA_VERSION")" 1
expect_eq "the race left one row per migration" \
    "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d race -XAtq -c 'SELECT count(*) FROM schema_version')" "$SCHEMA_VERSION"

# An older database: only the first migration applied, as by an earlier
# release.  The broker refuses it; --migrate brings it forward.  psql runs
# as postgres, so it reads a copy of the file (the checkout may be private).
as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib old
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d old -XAtq -v ON_ERROR_STOP=1 \
    -f "$(share "$TOP/schema/0001_init.sql")" \
    -c "INSERT INTO schema_version (version, name) VALUES (1, '0001_init.sql')" >/dev/null
sed "s/dbname=vnibroker/dbname=old/" "$T/b.toml" >"$T/old.toml"
expect_run 1 "a database one release behind is refused (exit 1)" "... naming both versions" \
    "schema is at version 1, this vnibrokerd needs $SCHEMA_VERSION" timeout 20 "$VNIBROKERD" -c "$T/old.toml"
out=$("$VNIBROKERD" -c "$T/old.toml" --migrate 2>&1)
expect_match "--migrate applies only the missing migrations" "$out" "upgraded from version 1 to $SCHEMA_VERSION"
expect_no_match "... not the first one again" "$out" 'applying 0001'

broker_start "$T/b.toml"
expect_eq "the broker serves once migrated" "$?" 0
http GET /readyz
expect_status "ready" 200

expect_eq "digests recorded before 0013 are filled in by the first migrate that knows them" \
    "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d old -XAtq -c 'SELECT count(*) FROM schema_version WHERE sha256 IS NULL')" 0

# An applied migration whose text changed (here: its recorded digest) is
# refused at start and by --migrate, naming the file; so is a renamed one.
broker_stop
good=$(psql_q "SELECT sha256 FROM schema_version WHERE version = 4")
psql_q "UPDATE schema_version SET sha256 = repeat('0', 64) WHERE version = 4"
expect_run 1 "a changed migration stops the broker (exit 1)" "... naming the file" \
    'migration 0004_contention.sql differs from the one applied' timeout 20 "$VNIBROKERD" -c "$T/b.toml"
expect_run 1 "--migrate refuses it too" "... naming the file" \
    '0004_contention.sql differs' "$VNIBROKERD" -c "$T/b.toml" --migrate
psql_q "UPDATE schema_version SET sha256 = '$good' WHERE version = 4"
psql_q "UPDATE schema_version SET name = '0004_renamed.sql' WHERE version = 4"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_match "a renamed migration is refused, naming both names" "$out" \
    'migration 4 was applied as 0004_renamed.sql, but this vnibrokerd carries 0004_contention.sql'
psql_q "UPDATE schema_version SET name = '0004_contention.sql' WHERE version = 4"
broker_start "$T/b.toml"
expect_eq "restored, the broker starts again" "$?" 0

# A database migrated by a newer release still serves (with a warning).
broker_stop
psql_q "INSERT INTO schema_version (version, name) VALUES (999, '0999_future.sql')"
broker_start "$T/b.toml"
expect_eq "a newer schema does not stop an older replica" "$?" 0
expect_match "... which warns" "$(cat "$BROKER_LOG")" 'newer than this vnibrokerd'
broker_stop

# Rows written before 0016, when a timed-out reserve was known by its
# reason's wording: --migrate gives each failure its cause.
as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib pre16
args=()
for f in "$TOP"/schema/00*.sql; do
    v=$((10#$(basename "$f" | cut -c1-4)))
    [ "$v" -le 15 ] || continue
    args+=(-f "$(share "$f")" -c "INSERT INTO schema_version (version, name) VALUES ($v, '$(basename "$f")')")
done
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre16 -XAtq -v ON_ERROR_STOP=1 "${args[@]}" >/dev/null
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre16 -XAtq -v ON_ERROR_STOP=1 -c "
INSERT INTO reservations (job_id, uid, username, nodes, node_count, vni_count,
                          tcs_mask, created_by, hwcoll_state, hwcoll_reason)
VALUES ('t', 1, 'u', 'n1', 1, 0, 0, 'test', 'unavailable',
        'timed out after 750 ms waiting for the Fabric Manager'),
       ('u', 1, 'u', 'n1', 1, 0, 0, 'test', 'unavailable',
        'Fabric Manager unreachable'),
       ('d', 1, 'u', 'n1', 1, 0, 0, 'test', 'unavailable',
        'timeout; the late Fabric Manager reservation was deleted'),
       ('r', 1, 'u', 'n1', 1, 0, 0, 'test', 'reserved', NULL),
       ('n', 1, 'u', 'n1', 1, 0, 0, 'test', 'not_eligible', 'off by request')" >/dev/null
sed "s/dbname=vnibroker/dbname=pre16/" "$T/b.toml" >"$T/pre16.toml"
out=$("$VNIBROKERD" -c "$T/pre16.toml" --migrate 2>&1)
expect_match "a database of schema 15 with hwcoll history migrates" "$out" "upgraded from version 15 to $SCHEMA_VERSION"
expect_eq "... each failure gets its cause from its old wording, the rest none" \
    "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre16 -XAtq -c \
        "SELECT string_agg(job_id || '=' || coalesce(hwcoll_cause, '-'), ' ' ORDER BY job_id) FROM reservations")" \
    "d=timeout_late_deleted n=- r=- t=timeout u=unreachable"
expect_eq "... the reasons clients read unchanged" \
    "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre16 -XAtq -c \
        "SELECT hwcoll_reason FROM reservations WHERE job_id = 't'")" \
    "timed out after 750 ms waiting for the Fabric Manager"

# A job of 100 ranges reserved at schema 18, its ranges as the broker
# writes them: after --migrate (0019 reads a node's range backwards), its
# nodes' reports and fetches are judged as before, by the rows as they
# are (0019 rewrites none).
as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib pre19
args=()
for f in "$TOP"/schema/00*.sql; do
    v=$((10#$(basename "$f" | cut -c1-4)))
    [ "$v" -le 18 ] || continue
    args+=(-f "$(share "$f")" -c "INSERT INTO schema_version (version, name) VALUES ($v, '$(basename "$f")')")
done
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre19 -XAtq -v ON_ERROR_STOP=1 "${args[@]}" >/dev/null
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre19 -XAtq -v ON_ERROR_STOP=1 -c "
WITH r AS (INSERT INTO reservations (job_id, uid, username, nodes, node_count,
                                     vni_count, tcs_mask, created_by)
           VALUES ('f', 1, 'u', 'node[' || (SELECT string_agg(k::text, ',')
                                             FROM generate_series(1, 199, 2) k) || ']',
                   100, 0, 0, 'test') RETURNING id)
INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
SELECT r.id, 'node', '', 0, k, k FROM r, generate_series(1, 199, 2) k" >/dev/null
sed "s/dbname=vnibroker/dbname=pre19/" "$T/b.toml" >"$T/pre19.toml"
out=$("$VNIBROKERD" -c "$T/pre19.toml" --migrate 2>&1)
expect_match "a database of schema 18 with a fragmented job migrates" "$out" \
    "upgraded from version 18 to $SCHEMA_VERSION"
broker_start "$T/pre19.toml" || not_ok "the broker starts on it"
for n in node1 node199 node2 node10 node01; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT \
        -H "Authorization: Bearer $(node_token "$n")" -H 'Content-Type: application/json' \
        -d '{"cxi":"creating"}' "$BROKER_URL/v1/reservations/f/nodes/$n")
    code=$code/$(curl -s -o /dev/null -w '%{http_code}' \
        -H "Authorization: Bearer $(node_token "$n")" "$BROKER_URL/v1/reservations/f")
    case "$n" in node1 | node199) want=200/200 ;; *) want=403/403 ;; esac
    expect_eq "... $n's report and fetch: $want" "$code" "$want"
done
broker_stop
finish
