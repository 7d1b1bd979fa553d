#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Migrations: refused start on an old schema, --migrate applies once, a
# second run is a no-op, and concurrent runs are safe; rows written under
# an older schema keep their meaning (0016: hwcoll causes; 0019: a
# fragmented job's nodes).  The SQL functions (schema/functions/, 0020):
# applied after the migrations and recorded by their SHA-256, again only
# when that differs, never to a newer schema; a database upgraded from
# any earlier schema ends with the catalogue of a fresh one, and the
# function files alone re-create every function it has.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"

# psql_db DB ARGS...: psql on database DB (psql_q is vnibroker's).
psql_db () {
    pd_db=$1
    shift
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d "$pd_db" -XAtq -v ON_ERROR_STOP=1 "$@"
}

# new_db DB: an empty database DB and $T/DB.toml, a config for it.
new_db () {
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib "$1"
    sed "s/dbname=vnibroker/dbname=$1/" "$T/b.toml" >"$T/$1.toml"
}

# db_at DB N: new_db DB with migrations 1..N applied as the release that
# needed schema N left them: each file and its schema_version row, and
# from schema 13 on every row's SHA-256.  psql runs as postgres, so it
# reads copies of the files (the checkout may be private).
db_at () {
    new_db "$1"
    da_args=()
    da_sums=""
    for f in "$TOP"/schema/[0-9][0-9][0-9][0-9]_*.sql; do
        v=$((10#$(basename "$f" | cut -c1-4)))
        [ "$v" -le "$2" ] || continue
        da_args+=(-f "$(share "$f")" -c "INSERT INTO schema_version (version, name) VALUES ($v, '$(basename "$f")')")
        da_sums="$da_sums${da_sums:+, }($v, '$(sha256sum <"$f" | cut -d' ' -f1)')"
    done
    if [ "$2" -ge 13 ]; then
        da_args+=(-c "UPDATE schema_version s SET sha256 = d.sha
                        FROM (VALUES $da_sums) d(v, sha) WHERE s.version = d.v")
    fi
    [ "$2" -eq 0 ] || psql_db "$1" "${da_args[@]}" >/dev/null
}

# functions_sha256: the SHA-256 of the function files' texts, one after
# the other in file-name order.
functions_sha256 () {
    cat $(LC_ALL=C ls -d "$TOP"/schema/functions/*.sql) | sha256sum | cut -d' ' -f1
}
FN_SHA=$(functions_sha256)

# schema_dump DB: pg_dump --schema-only of DB, without the \restrict
# lines (newer pg_dump writes a random key there).
schema_dump () {
    as_pg_user "$PG_BIN/pg_dump" -h "$PGSOCK" -U vnib --schema-only "$1" |
        grep -v '^\\\(un\)\?restrict '
}

# expect_fresh_catalogue LABEL DB: DB's schema dump is $T/fresh.dump (a
# fresh database migrated by the broker); the diff on failure.
expect_fresh_catalogue () {
    schema_dump "$2" >"$T/$2.dump"
    if diff -u "$T/fresh.dump" "$T/$2.dump" >"$T/$2.diff"; then
        ok "$1"
    else
        not_ok "$1"
        sed 's/^/#   /' "$T/$2.diff" | head -n 80
    fi
}

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
expect_match "... after applying the SQL functions" "$out" \
    "applying SQL functions \\(SHA-256 ${FN_SHA:0:12}\\.\\.\\.; the database had none recorded\\)"
expect_eq "schema_version holds one row per migration" "$(psql_q "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version")" "$SCHEMA_VERSIONS"
expect_eq "schema_functions records the functions applied: the files' SHA-256, at this schema" \
    "$(psql_q "SELECT string_agg(schema_version || ' ' || sha256, E'\n' ORDER BY id) FROM schema_functions")" \
    "$SCHEMA_VERSION $FN_SHA"
fn_xmins=$(psql_q "SELECT string_agg(xmin::text, ',' ORDER BY oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace")

expect_run 0 "a second --migrate succeeds" "... as a no-op" \
    "schema is current \\(version $SCHEMA_VERSION\\)" "$VNIBROKERD" -c "$T/b.toml" --migrate
expect_match "... saying the SQL functions are current" "$out" \
    "SQL functions are current \\(SHA-256 ${FN_SHA:0:12}\\.\\.\\.\\)"
expect_no_match "... applying none" "$out" 'applying'
expect_eq "... adding no rows" "$(psql_q 'SELECT count(*) FROM schema_version')" "$SCHEMA_VERSION"
expect_eq "... none to schema_functions" "$(psql_q 'SELECT count(*) FROM schema_functions')" 1
expect_eq "... and replacing no function" \
    "$(psql_q "SELECT string_agg(xmin::text, ',' ORDER BY oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace")" \
    "$fn_xmins"

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
expect_eq "... and the SQL functions, which the others found current" \
    "$(cat "$T"/race.*.log | grep -c "applying SQL functions")/$(cat "$T"/race.*.log | grep -c "SQL functions are current")" 1/3
expect_eq "the race left one row per migration" \
    "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d race -XAtq -c 'SELECT count(*) FROM schema_version')" "$SCHEMA_VERSION"
expect_eq "... and one of the SQL functions" "$(psql_db race -c 'SELECT count(*) FROM schema_functions')" 1

# An older database: only the first migration applied, as by an earlier
# release.  The broker refuses it; --migrate brings it forward.
db_at old 1
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

# The SQL functions of another build of this schema version.  Ours were
# never applied (here: the record of them changed, and a function with
# it): the broker is not ready and will not start, as on an older schema,
# and --migrate applies them again.
probe_def () {
    psql_db "$1" -c "SELECT md5(pg_get_functiondef('vnib_write_probe'::regproc))"
}
good_probe=$(probe_def vnibroker)
http GET /readyz
expect_status "ready with its own SQL functions" 200

# (An older schema under a running broker: not ready, the log says why.)
last_row=$(psql_q "SELECT name || ' ' || sha256 FROM schema_version WHERE version = $SCHEMA_VERSION")
psql_q "DELETE FROM schema_version WHERE version = $SCHEMA_VERSION"
http GET /readyz
expect_status "a schema older than the broker's under it: not ready" 503
expect_match "... logging how to migrate" "$(cat "$BROKER_LOG")" \
    "schema is at version $((SCHEMA_VERSION - 1)), this vnibrokerd needs $SCHEMA_VERSION: run 'vnibrokerd --migrate'"
psql_q "INSERT INTO schema_version (version, name, sha256)
        VALUES ($SCHEMA_VERSION, '${last_row% *}', '${last_row#* }')"
http GET /readyz
expect_status "... ready again once it is back" 200
psql_q "UPDATE schema_functions SET sha256 = repeat('0', 64)"
psql_q "CREATE OR REPLACE FUNCTION vnib_write_probe() RETURNS void LANGUAGE sql AS 'SELECT'"
http GET /readyz
expect_status "SQL functions that were never this broker's: not ready" 503
expect_json "... as an outdated schema" .error.code schema_outdated
expect_match "... logging how to migrate" "$(cat "$BROKER_LOG")" \
    "lacks this vnibrokerd's SQL functions \\(SHA-256 ${FN_SHA:0:12}\\.\\.\\.\\): run 'vnibrokerd --migrate'"
broker_stop
expect_run 1 "... and it does not start on them (exit 1)" "... saying the same" \
    "cannot start: database schema $SCHEMA_VERSION lacks this vnibrokerd's SQL functions" \
    timeout 20 "$VNIBROKERD" -c "$T/b.toml"
expect_run 0 "--migrate applies them again" "... saying what the database had" \
    "applying SQL functions \\(SHA-256 ${FN_SHA:0:12}\\.\\.\\.; the database had 000000000000\\.\\.\\.\\)" \
    "$VNIBROKERD" -c "$T/b.toml" --migrate
expect_eq "... every function as the files state it" "$(probe_def vnibroker)" "$good_probe"
expect_eq "... recorded as the newest" \
    "$(psql_q "SELECT string_agg(schema_version || ' ' || sha256, ' ' ORDER BY id) FROM schema_functions")" \
    "$SCHEMA_VERSION $(printf '0%.0s' $(seq 64)) $SCHEMA_VERSION $FN_SHA"

# Ours were applied, then another build's replaced them (a rolling
# upgrade to a build with changed functions): an older replica serves
# on, warning once; its --migrate applies its own again.
psql_q "INSERT INTO schema_functions (schema_version, sha256) VALUES ($SCHEMA_VERSION, repeat('f', 64))"
broker_start "$T/b.toml"
expect_eq "the functions of a later build do not stop a replica whose functions were applied before" "$?" 0
http GET /readyz
expect_status "... which is ready" 200
http GET /readyz
expect_eq "... and warns, once" "$(grep -c "SQL functions are another build's (SHA-256 ffffffffffff\.\.\." "$BROKER_LOG")" 1
broker_stop
out=$("$VNIBROKERD" -c "$T/b.toml" --migrate 2>&1)
expect_match "its --migrate applies its own again" "$out" \
    "applying SQL functions \\(SHA-256 ${FN_SHA:0:12}\\.\\.\\.; the database had ffffffffffff\\.\\.\\.\\)"

# A database migrated by a newer release still serves (with a warning),
# and --migrate changes nothing there: not its SQL functions either
# (here: a function of the newer release, recorded as such).
psql_q "INSERT INTO schema_version (version, name) VALUES (999, '0999_future.sql')"
broker_start "$T/b.toml"
expect_eq "a newer schema does not stop an older replica" "$?" 0
expect_match "... which warns" "$(cat "$BROKER_LOG")" 'newer than this vnibrokerd'
broker_stop
psql_q "CREATE OR REPLACE FUNCTION vnib_write_probe() RETURNS void LANGUAGE sql AS 'SELECT'"
psql_q "INSERT INTO schema_functions (schema_version, sha256) VALUES (999, repeat('9', 64))"
newer_probe=$(probe_def vnibroker)
expect_run 0 "--migrate on a newer schema succeeds" "... doing nothing, the SQL functions included" \
    "newer than this vnibrokerd knows \\($SCHEMA_VERSION\\); nothing to do, its SQL functions included" \
    "$VNIBROKERD" -c "$T/b.toml" --migrate
expect_no_match "... applying none" "$out" 'applying'
expect_eq "... leaving the newer release's functions as they were" "$(probe_def vnibroker)" "$newer_probe"
expect_eq "... and their record" \
    "$(psql_q "SELECT schema_version || ' ' || sha256 FROM schema_functions ORDER BY id DESC LIMIT 1")" \
    "999 $(printf '9%.0s' $(seq 64))"

# Rows written before 0016, when a timed-out reserve was known by its
# reason's wording: --migrate gives each failure its cause.
db_at pre16 15
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
db_at pre19 18
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pre19 -XAtq -v ON_ERROR_STOP=1 -c "
WITH r AS (INSERT INTO reservations (job_id, uid, username, nodes, node_count,
                                     vni_count, tcs_mask, created_by)
           VALUES ('f', 1, 'u', 'node[' || (SELECT string_agg(k::text, ',')
                                             FROM generate_series(1, 199, 2) k) || ']',
                   100, 0, 0, 'test') RETURNING id)
INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
SELECT r.id, 'node', '', 0, k, k FROM r, generate_series(1, 199, 2) k" >/dev/null
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

# The catalogue of a fresh database migrated by the broker ...
new_db fresh
"$VNIBROKERD" -c "$T/fresh.toml" --migrate >"$T/fresh.log" 2>&1 ||
    not_ok "a fresh database migrates"
schema_dump fresh >"$T/fresh.dump"

# ... is that of a database of every earlier schema once migrated: the
# migrations as the release of that schema applied them, then --migrate.
failed=""
for n in $(seq 0 $((SCHEMA_VERSION - 1))); do
    db_at "up$n" "$n"
    if ! "$VNIBROKERD" -c "$T/up$n.toml" --migrate >"$T/up$n.log" 2>&1; then
        failed="$failed $n"
        sed 's/^/#   /' "$T/up$n.log" | tail -n 5
        continue
    fi
    schema_dump "up$n" >"$T/up$n.dump"
    if ! diff -u "$T/fresh.dump" "$T/up$n.dump" >"$T/up$n.diff"; then
        failed="$failed $n"
        echo "# schema $n, migrated, differs from a fresh database:"
        sed 's/^/#   /' "$T/up$n.diff" | head -n 80
    fi
    as_pg_user "$PG_BIN/dropdb" -h "$PGSOCK" -U vnib "up$n"
done
expect_eq "a database of each schema 0-$((SCHEMA_VERSION - 1)) migrates to the catalogue of a fresh one (schemas that differ)" \
    "${failed# }" ""

# The function files alone re-create every function of the schema (none
# lives only in a migration), in their order from none at all.
new_db refn
"$VNIBROKERD" -c "$T/refn.toml" --migrate >"$T/refn.log" 2>&1 ||
    not_ok "another fresh database migrates"
psql_db refn -c "DO \$\$DECLARE f regprocedure;
                 BEGIN
                     FOR f IN SELECT oid FROM pg_proc
                               WHERE pronamespace = 'public'::regnamespace LOOP
                         EXECUTE 'DROP FUNCTION ' || f;
                     END LOOP;
                 END\$\$"
expect_eq "with every function dropped, none is left" \
    "$(psql_db refn -c "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace")" 0
fn_args=()
for f in $(LC_ALL=C ls -d "$TOP"/schema/functions/*.sql); do
    fn_args+=(-f "$(share "$f")")
done
psql_db refn "${fn_args[@]}" >>"$T/refn.log" 2>&1
rc=$?
expect_eq "schema/functions/*.sql apply in file-name order to a schema with no function" "$rc" 0
[ "$rc" = 0 ] || sed 's/^/#   /' "$T/refn.log" | tail -n 5
expect_fresh_catalogue "... and give it the catalogue of a fresh database" refn
finish
