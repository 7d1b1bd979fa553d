# SPDX-License-Identifier: GPL-2.0-or-later
# Integration test harness, sourced by every tests/integration/NNNN-*.sh.
#
# It gives each test script a private temporary directory, a throwaway
# PostgreSQL server on a Unix socket inside it (run as the `postgres` user
# when the tests run as root, since PostgreSQL refuses root, else as the
# current user), helpers to start the real vnibrokerd binary and talk HTTP
# to it with curl, and TAP-style assertions.  Everything a test starts is
# recorded by PID and stopped on exit, also when the test fails or is
# interrupted, and the directory is removed.
#
# The checkout may be private (a clone under /root, mode 0700): whatever
# another user must read (PostgreSQL as postgres, the Slurm daemons, a
# job's user) is copied into $T with `share`, or made there, and never read
# from the checkout; and the test runs in $T, so that what it starts as
# another user never inherits a working directory in the checkout.  Files
# the tests make are world-readable (umask 022) for the same reason,
# whatever umask the caller has.
#
# Each script ends with `finish`, which prints "# counts: PASSED FAILED
# SKIPPED" for tests/run-all.sh and exits non-zero when anything failed.
# A check that cannot run here is a `skip REASON`, counted apart from the
# passes; a script that cannot run at all ends with `skip_all REASON`, or
# `skip_slurm REASON` when it needs the Slurm harness (a failure instead
# under VNIB_REQUIRE_SLURM=1).

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${VNIB_BUILD:-$TOP/build}
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
VNIBROKERD=$BUILD/vnibrokerd
# The schema version this tree's vnibrokerd needs: its newest migration.
SCHEMA_VERSION=$(ls "$TOP"/schema/[0-9][0-9][0-9][0-9]_*.sql | wc -l)
SCHEMA_VERSIONS=$(seq -s, 1 "$SCHEMA_VERSION")
TEST_NAME=$(basename "$0" .sh)

umask 022
T=$(mktemp -d "${TMPDIR:-/tmp}/vnib-$TEST_NAME.XXXXXX")
chmod 755 "$T"
# Everything the test starts inherits this working directory: a daemon or
# job run as another user (PostgreSQL, Patroni's workers, slurmd's jobs)
# must be able to enter it, and the checkout may be closed to them.  $0
# is made absolute first (bash), for the scripts' "$(dirname "$0")".
case "$0" in /*) ;; */*) BASH_ARGV0=$PWD/$0 ;; esac
cd "$T" || exit 1
PASSED=0
FAILED=0
SKIPPED=0
STARTED_PIDS=""
PGDIR=""
PGSOCK=""
PGLOG=""
PG_OPTS=""
PG_CLUSTERS=""
BROKER_PID=""
BROKER_URL=""
BROKER_LOG=""

# ---- assertions -------------------------------------------------------------

ok () {
    PASSED=$((PASSED + 1))
    echo "ok $((PASSED + FAILED + SKIPPED)) - $*"
}

not_ok () {
    FAILED=$((FAILED + 1))
    echo "not ok $((PASSED + FAILED + SKIPPED)) - $*"
}

# skip REASON: a check that cannot run here (TAP "# skip"), counted apart
# from the passes; tests/run-all.sh lists each with its reason.
skip () {
    SKIPPED=$((SKIPPED + 1))
    echo "ok $((PASSED + FAILED + SKIPPED)) # skip $*"
}

# skip_all REASON: nothing of this script can run here; skip and finish.
skip_all () {
    skip "$@"
    finish
}

# skip_slurm REASON: the script needs the Slurm harness (slurm.sh: root,
# the Slurm daemons) or root's Slurm hook set-up, which this run lacks.
# A skip, unless VNIB_REQUIRE_SLURM=1 (CI, where Slurm must run), which
# makes it a failure with the same reason.  Finishes the script.
skip_slurm () {
    if [ "${VNIB_REQUIRE_SLURM:-0}" = 1 ]; then
        not_ok "VNIB_REQUIRE_SLURM=1 but the Slurm test cannot run: $*"
        finish
    fi
    skip_all "$@"
}

# expect_eq DESCRIPTION GOT WANT
expect_eq () {
    if [ "$2" = "$3" ]; then
        ok "$1"
    else
        not_ok "$1"
        echo "#   got:  '$2'"
        echo "#   want: '$3'"
    fi
}

# expect_match DESCRIPTION TEXT PATTERN (grep -E)
expect_match () {
    if printf '%s\n' "$2" | grep -Eq -- "$3"; then
        ok "$1"
    else
        not_ok "$1"
        echo "#   text:    '$(printf '%s' "$2" | head -c 600)'"
        echo "#   pattern: '$3'"
    fi
}

# expect_no_match DESCRIPTION TEXT PATTERN
expect_no_match () {
    if printf '%s\n' "$2" | grep -Eq -- "$3"; then
        not_ok "$1"
        echo "#   unexpected match of '$3' in '$(printf '%s' "$2" | head -c 600)'"
    else
        ok "$1"
    fi
}

# expect_status DESCRIPTION WANT: checks the last http call.
expect_status () {
    if [ "$HTTP_STATUS" = "$2" ]; then
        ok "$1"
    else
        not_ok "$1"
        echo "#   status: $HTTP_STATUS (want $2)"
        echo "#   body:   $(head -c 600 "$T/http.body" 2>/dev/null)"
    fi
}

# expect_json DESCRIPTION JQ-FILTER WANT: on the last http body.
expect_json () {
    expect_eq "$1" "$(jq -r "$2" "$T/http.body" 2>&1)" "$3"
}

finish () {
    echo "# counts: $PASSED $FAILED $SKIPPED"
    [ "$FAILED" -eq 0 ]
    exit $?
}

# share FILE: copy FILE into $T/share, readable by everyone (and executable
# by everyone if it is executable), and print the copy's path.  For what
# another user must read: a migration file for psql as postgres, a SPANK
# plugin for sbatch as the job's user, programs the Slurm daemons run.
share () {
    mkdir -p "$T/share" && chmod 755 "$T/share" || return 1
    s_copy=$T/share/$(basename "$1")
    cp "$1" "$s_copy" || return 1
    if [ -x "$1" ]; then chmod 755 "$s_copy"; else chmod 644 "$s_copy"; fi
    printf '%s\n' "$s_copy"
}

# ---- processes --------------------------------------------------------------

track () {
    STARTED_PIDS="$STARTED_PIDS $1"
}

cleanup () {
    for pid in $STARTED_PIDS; do
        kill -CONT "$pid" 2>/dev/null
        kill -TERM "$pid" 2>/dev/null
    done
    for d in $PG_CLUSTERS $PGDIR; do
        if [ -f "$d/postmaster.pid" ]; then
            pg_resume "$d"
            as_pg_user "$PG_BIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
        fi
    done
    sleep 0.2
    for pid in $STARTED_PIDS; do
        kill -KILL "$pid" 2>/dev/null
    done
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then
        echo "# kept $T"
    else
        cd / && rm -rf "$T"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# now_ms: the wall clock in milliseconds, for the figures tests print.
now_ms () {
    echo $(($(date +%s%N) / 1000000))
}

# probe_reserve URL ID: one reserve of a fresh job (probe-ID, 1 VNI on
# node prID) at broker URL, within 3 s; true when it was acknowledged.
probe_reserve () {
    BROKER_URL=$1 TOKEN=$SCHED_TOKEN http POST /v1/reservations --max-time 3 \
        -d "{\"job_id\":\"probe-$2\",\"uid\":1000,\"user\":\"probe\",\"nodes\":\"pr$2\",\"vni_count\":1}"
    [ "$HTTP_STATUS" = 201 ] || [ "$HTTP_STATUS" = 200 ]
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds, for at most
# SECONDS of wall-clock time however long each try of COMMAND takes (a
# count of tries would not bound it), and one last try at the deadline.
wait_for () {
    deadline=$(($(date +%s%N) / 1000000 + $1 * 1000))
    shift
    while [ "$(($(date +%s%N) / 1000000))" -lt "$deadline" ]; do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.05
    done
    "$@" >/dev/null 2>&1
}

# wait_lines FILE N STALL: wait until FILE has N non-empty lines, for as
# long as it keeps growing: false once it has not grown for STALL seconds
# (and after 900 s in all).  For streams of jobs, whose pace is the
# machine's (a loaded CI machine runs them at a fraction of an idle
# one's), so the bound is on progress, not on the clock.
wait_lines () {
    local n last=-1 t_last t_end
    t_last=$(now_ms)
    t_end=$((t_last + 900000))
    while :; do
        n=$(grep -c . "$1" 2>/dev/null)
        [ "${n:-0}" -ge "$2" ] && return 0
        if [ "$n" != "$last" ]; then
            last=$n
            t_last=$(now_ms)
        fi
        [ $(($(now_ms) - t_last)) -lt $(($3 * 1000)) ] && [ "$(now_ms)" -lt "$t_end" ] ||
            return 1
        sleep 0.5
    done
}

# ---- PostgreSQL -------------------------------------------------------------

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PG_BIN" ] || PG_BIN=$(dirname "$(command -v initdb 2>/dev/null || echo /x/initdb)")
PG_USER=$(id -un)
[ "$(id -u)" -eq 0 ] && PG_USER=postgres

as_pg_user () {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# An initialised cluster is copied rather than made again by every test:
# initdb costs a second or two.  The cache lives in the temporary directory
# (the postgres user must reach it even when the checkout is private).
pg_template () {
    tpl=${TMPDIR:-/tmp}/vnib-pgtemplate-$(id -u)-$(basename "$(dirname "$PG_BIN")")
    if [ ! -f "$tpl/PG_VERSION" ]; then
        rm -rf "$tpl.tmp"
        mkdir -p "$tpl.tmp"
        [ "$(id -u)" -eq 0 ] && chown postgres "$tpl.tmp"
        as_pg_user "$PG_BIN/initdb" -D "$tpl.tmp" -U vnib --auth=trust -E UTF8 \
            --locale=C.UTF-8 --no-sync >"$T/initdb.log" 2>&1 || {
            cat "$T/initdb.log" >&2
            return 1
        }
        mv "$tpl.tmp" "$tpl" 2>/dev/null || rm -rf "$tpl.tmp"
    fi
    echo "$tpl"
}

# run_folder DIR: a run folder for deploy/local/run.sh (VNIB_RUN_DIR)
# with its PostgreSQL cluster copied from the template (run.sh would
# initdb one).  stop_script PID: TERM a script started in the background
# (run.sh, demo.sh) and wait up to a minute for it to stop.
run_folder () {
    mkdir -p "$1"
    rf_tpl=$(pg_template) || return 1
    cp -a "$rf_tpl" "$1/pg" || return 1
    [ "$(id -u)" -ne 0 ] || chown -R postgres "$1/pg"
    chmod 700 "$1/pg"
}
stop_script () {
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null
        wait_for 60 sh -c "! kill -0 $1"
    fi
}

# pg_start: a private server for this test, with fsync on, no TCP, and
# the autovacuum_naptime deploy/README.md asks of sites (section 3.2).
pg_start () {
    tpl=$(pg_template) || return 1
    PGDIR=$T/pg
    PGSOCK=$T/sock
    cp -a "$tpl" "$PGDIR"
    mkdir -p "$PGSOCK" "$T/pglog"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres "$PGDIR" "$PGSOCK" "$T/pglog"
    fi
    chmod 700 "$PGDIR"
    pg_resume_start
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib vnibroker
}

# pg_resume_start: start $PGDIR again, on $PGSOCK, logging to $PGLOG
# (default $T/pglog/pg.log), with $PG_OPTS (server -c options) besides.
pg_resume_start () {
    pg_ctl_start "$PGDIR" "$PGSOCK" "${PGLOG:-$T/pglog/pg.log}" "$PG_OPTS"
}

# pg_ctl_start DIR SOCKET LOG [OPTIONS]: start the cluster in DIR with the
# settings every test server has, and OPTIONS (server -c options) besides.
pg_ctl_start () {
    as_pg_user "$PG_BIN/pg_ctl" -D "$1" -l "$3" -w -t 30 \
        -o "-c listen_addresses='' -c unix_socket_directories='$2' -c fsync=on -c max_connections=200 -c autovacuum_naptime=10s ${4:-}" \
        start >/dev/null || {
        cat "$3" >&2
        return 1
    }
}

pg_stop () {
    as_pg_user "$PG_BIN/pg_ctl" -D "$PGDIR" -m fast -w stop >/dev/null
}

pg_restart () {
    pg_stop && pg_resume_start
}

# Freeze and thaw every PostgreSQL process: a database that accepts
# connections but never answers.
# Both take a cluster directory, $PGDIR by default.
pg_freeze () {
    for pid in $(pg_pids "${1:-$PGDIR}"); do kill -STOP "$pid"; done
}

pg_resume () {
    for pid in $(pg_pids "${1:-$PGDIR}"); do kill -CONT "$pid" 2>/dev/null; done
}

# pg_pids [DIR]: the postmaster of DIR ($PGDIR) and its children.
pg_pids () {
    pp_dir=${1:-$PGDIR}
    [ -f "$pp_dir/postmaster.pid" ] || return 0
    master=$(head -n 1 "$pp_dir/postmaster.pid")
    echo "$master"
    pgrep -P "$master" 2>/dev/null
}

# ---- streaming replication ---------------------------------------------------
#
# A primary and a streaming standby, each with its own data directory,
# socket directory and log under $T, run as postgres like pg_start's
# server.  The template's trust authentication on the Unix socket covers
# replication connections too (initdb's pg_hba.conf has a `local
# replication all` line), and the template's superuser vnib may replicate.

# pg_primary_start NAME: a fresh server in $T/NAME (socket $T/NAME.sock,
# log $T/pglog/NAME.log) ready to stream to standbys, with database
# vnibroker; it becomes $PGDIR/$PGSOCK (what psql_q and pg_freeze use).
pg_primary_start () {
    tpl=$(pg_template) || return 1
    PGDIR=$T/$1
    PGSOCK=$T/$1.sock
    PGLOG=$T/pglog/$1.log
    PG_OPTS="-c wal_level=replica -c max_wal_senders=5 -c wal_keep_size=64MB -c hot_standby=on"
    PG_CLUSTERS="$PG_CLUSTERS $PGDIR"
    cp -a "$tpl" "$PGDIR"
    mkdir -p "$PGSOCK" "$T/pglog"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres "$PGDIR" "$PGSOCK" "$T/pglog"
    fi
    chmod 700 "$PGDIR"
    pg_resume_start || return 1
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib vnibroker
}

# pg_standby_start NAME: a streaming standby of the current primary
# ($PGSOCK), made with pg_basebackup -R in $T/NAME (socket $T/NAME.sock,
# log $T/pglog/NAME.log), whose walreceiver is named NAME (cluster_name)
# for synchronous_standby_names.  Waits until the primary sees it stream.
pg_standby_start () {
    sb_dir=$T/$1
    sb_sock=$T/$1.sock
    mkdir -p "$sb_sock" "$sb_dir"
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres "$sb_sock" "$sb_dir"
    fi
    chmod 700 "$sb_dir"
    as_pg_user "$PG_BIN/pg_basebackup" -h "$PGSOCK" -U vnib -D "$sb_dir" -R \
        -X stream -c fast --no-sync >"$T/pglog/$1.basebackup.log" 2>&1 || {
        cat "$T/pglog/$1.basebackup.log" >&2
        return 1
    }
    PG_CLUSTERS="$PG_CLUSTERS $sb_dir"
    pg_ctl_start "$sb_dir" "$sb_sock" "$T/pglog/$1.log" \
        "$PG_OPTS -c cluster_name=$1" || return 1
    wait_for 15 pg_streaming "$1"
}

# pg_streaming NAME: the current primary streams to standby NAME.
pg_streaming () {
    [ "$(psql_q "SELECT count(*) FROM pg_stat_replication
                  WHERE application_name = '$1' AND state = 'streaming'")" = 1 ]
}

# pg_sync_standby NAME: commits on the primary wait for standby NAME
# (synchronous_standby_names, synchronous_commit = on); waits until the
# primary reports it synchronous.
pg_sync_standby () {
    psql_q "ALTER SYSTEM SET synchronous_standby_names = '\"$1\"'" &&
        psql_q "ALTER SYSTEM SET synchronous_commit = 'on'" &&
        psql_q "SELECT pg_reload_conf()" >/dev/null &&
        wait_for 15 pg_is_sync "$1"
}

pg_is_sync () {
    [ "$(psql_q "SELECT sync_state FROM pg_stat_replication
                  WHERE application_name = '$1'")" = sync ]
}

# pg_promote NAME: promote standby $T/NAME and wait until it accepts
# writes; it becomes $PGDIR/$PGSOCK.
pg_promote () {
    as_pg_user "$PG_BIN/pg_ctl" -D "$T/$1" -w -t 30 promote >/dev/null || return 1
    PGDIR=$T/$1
    PGSOCK=$T/$1.sock
    PGLOG=$T/pglog/$1.log
}

psql_q () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d vnibroker -XAtq -v ON_ERROR_STOP=1 -c "$1"
}

# ---- tokens -----------------------------------------------------------------

# new_token: a named token in the broker's format (see include/vnib/token.h),
# made with openssl so that the tests check the format independently.
new_token () {
    printf 'vnib1.%s' "$(openssl rand 32 | base64 | tr '+/' '-_' | tr -d '=\n')"
}

# auth_setup: a tokens file with one token per role and a node key, both
# mode 0600.  Sets ADMIN_TOKEN, SCHED_TOKEN, MONITOR_TOKEN.
auth_setup () {
    ADMIN_TOKEN=$(new_token)
    SCHED_TOKEN=$(new_token)
    MONITOR_TOKEN=$(new_token)
    umask 077
    {
        echo "# role name sha256"
        echo "admin ops-admin $(printf %s "$ADMIN_TOKEN" | sha256sum | cut -d' ' -f1)"
        echo "scheduler slurmctld $(printf %s "$SCHED_TOKEN" | sha256sum | cut -d' ' -f1)"
        echo "monitor prometheus $(printf %s "$MONITOR_TOKEN" | sha256sum | cut -d' ' -f1)"
    } >"$T/tokens"
    openssl rand 32 >"$T/node.key"
    umask 022
}

# node_token NODE: the node's token under $T/node.key (HMAC-SHA256 of
# "vnib-node:NODE", base64url), computed with openssl.
node_token () {
    hexkey=$(od -An -v -tx1 "$T/node.key" | tr -d ' \n')
    mac=$(printf 'vnib-node:%s' "$1" |
        openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" -binary |
        base64 | tr '+/' '-_' | tr -d '=\n')
    printf 'vnibnode.%s.%s' "$1" "$mac"
}

# pg_hold SQL: a background psql session runs "BEGIN; SQL; COMMIT;" (SQL
# takes a lock and sleeps); sets LOCKER.
pg_hold () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d vnibroker -XAtq -c \
        "BEGIN; $1; COMMIT;" >"$T/locker.out" 2>&1 &
    LOCKER=$!
    track "$LOCKER"
}

# hold_job_lock JOB SECONDS: pg_hold JOB's per-job lock (vnib_job_lock,
# schema/0004_contention.sql) for SECONDS, once it is taken; sets LOCKER.
hold_job_lock () {
    pg_hold "SELECT vnib_job_lock('$1'); SELECT pg_sleep($2)"
    wait_for 5 advisory_granted || not_ok "the lock of $1 is taken"
}

# advisory_granted: an advisory lock is held.
advisory_granted () {
    [ "$(psql_q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")" -ge 1 ]
}

# lock_waiters N: at least N sessions wait for a lock.
lock_waiters () {
    [ "$(psql_q "SELECT count(*) FROM pg_locks WHERE NOT granted")" -ge "$1" ]
}

# ---- the broker -------------------------------------------------------------

# broker_config FILE [EXTRA-TOML]: a config for this test's database with a
# free port; EXTRA-TOML lines are appended to the [server] table unless
# they open tables of their own.
broker_config () {
    [ -f "$T/tokens" ] || auth_setup
    cat >"$1" <<EOF
[server]
address = "127.0.0.1"
port = 0
${2:-}

[auth]
tokens_file = "$T/tokens"
node_key_file = "$T/node.key"

[database]
conninfo = "host=$PGSOCK dbname=vnibroker user=vnib"
connect_timeout_ms = 1000
query_timeout_ms = 2000
acquire_timeout_ms = 1000

[log]
level = "debug"
EOF
}

vnibrokerd () {
    "$VNIBROKERD" "$@"
}

# broker_migrate CONFIG
broker_migrate () {
    "$VNIBROKERD" -c "$1" --migrate >>"$T/migrate.log" 2>&1
}

# broker_start CONFIG: start in the background; sets BROKER_PID, BROKER_URL,
# BROKER_LOG.  Returns non-zero if it does not listen within 10 s.
broker_start () {
    BROKER_LOG=$T/broker.$$.$(date +%s%N).log
    "$VNIBROKERD" -c "$1" >"$BROKER_LOG" 2>&1 &
    BROKER_PID=$!
    track "$BROKER_PID"
    scheme=http
    wait_for 10 grep -q "listening on" "$BROKER_LOG" || {
        echo "# broker did not start:"
        sed 's/^/#   /' "$BROKER_LOG"
        return 1
    }
    line=$(grep -m1 "listening on" "$BROKER_LOG")
    BROKER_URL=$(printf '%s\n' "$line" | sed -E 's|.*listening on (https?://[^ ]+).*|\1|')
}

# broker_migrate_start CONFIG: migrate and start; a failure is reported
# ("migrate", "broker starts") and ends the test.
broker_migrate_start () {
    broker_migrate "$1" || { not_ok "migrate"; finish; }
    broker_start "$1" || { not_ok "broker starts"; finish; }
}

# broker_up CONFIG [EXTRA-TOML]: broker_config CONFIG and
# broker_migrate_start it.
broker_up () {
    broker_config "$1" "${2:-}"
    broker_migrate_start "$1"
}

# slow_clients_up MAX_CONNECTIONS DEADLINE_MS: pg_start and a broker for
# the slow-client tests (0016, 0019): two HTTP threads, MAX_CONNECTIONS
# connections, 16 from one address, DEADLINE_MS for a request to arrive
# and an idle timeout (30 s) that does not end a trickle first; sets PORT.
slow_clients_up () {
    pg_start || exit 1
    broker_up "$T/b.toml" "
threads = 2
max_connections = $1
per_ip_connections = 16
request_deadline_ms = $2
connection_timeout_s = 30"
    PORT=${BROKER_URL##*:}
}

# vni_pool RANGE: a [vni] table with that pool, as EXTRA-TOML.
vni_pool () {
    printf '\n[vni]\npool = "%s"' "$1"
}

# broker_start_as NAME CONFIG [LABEL]: broker_start CONFIG, or report
# "broker LABEL starts" (LABEL defaults to NAME) and end the test; sets
# URL_NAME and PID_NAME.
broker_start_as () {
    broker_start "$2" || { not_ok "broker ${3:-$1} starts"; finish; }
    eval "URL_$1=\$BROKER_URL PID_$1=\$BROKER_PID"
}

# brokers_ab CONFIG: migrate, then start brokers A and B on CONFIG (each
# on a free port); sets URL_A, PID_A, URL_B and PID_B.
brokers_ab () {
    broker_migrate "$1" || { not_ok "migrate"; finish; }
    broker_start_as A "$1"
    broker_start_as B "$1"
}

# clients_ab N CMD [ARGS...]: run CMD ID URL ARGS... for ID 1 .. N in the
# background, even IDs against URL_A and odd ones against URL_B, and wait
# for them all.
clients_ab () {
    ab_n=$1
    ab_cmd=$2
    shift 2
    ab_pids=""
    for ab_id in $(seq 1 "$ab_n"); do
        if [ $((ab_id % 2)) = 0 ]; then ab_url=$URL_A; else ab_url=$URL_B; fi
        "$ab_cmd" "$ab_id" "$ab_url" "$@" &
        ab_pids="$ab_pids $!"
    done
    wait $ab_pids
}

# broker_pin_port CONFIG: restart the running broker of CONFIG on the port
# it got, now written into CONFIG, so that later restarts come back where
# the clients look; sets PORT.
broker_pin_port () {
    PORT=${BROKER_URL##*:}
    broker_stop
    sed -i "s/^port = 0\$/port = $PORT/" "$1"
    broker_start "$1" || { not_ok "broker starts on port $PORT"; finish; }
}

# broker_stop: SIGTERM and wait; echoes nothing, returns the exit status.
broker_stop () {
    kill -TERM "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID"
}

# expect_db_consistent [LABEL]: what the database must hold after any
# load, whatever the history: vni_holds are exactly the VNIs of the live
# reservations, at most one live reservation per job, and no VNI in two
# live reservations.  LABEL (with ": ") prefixes each check's name.
expect_db_consistent () {
    p=${1:+$1: }
    expect_eq "${p}vni_holds are exactly the VNIs of the live reservations" \
        "$(psql_q "SELECT (SELECT count(*) FROM (
                              SELECT vni, reservation_id FROM vni_holds
                              EXCEPT SELECT x, id FROM reservations, unnest(vnis) x
                                      WHERE state <> 'released') d)
                        + (SELECT count(*) FROM (
                              SELECT x, id FROM reservations, unnest(vnis) x
                               WHERE state <> 'released'
                              EXCEPT SELECT vni, reservation_id FROM vni_holds) e)")" 0
    expect_eq "${p}at most one live reservation per job" \
        "$(psql_q "SELECT count(*) FROM (SELECT job_id FROM reservations
                    WHERE state <> 'released' GROUP BY job_id HAVING count(*) > 1) d")" 0
    expect_eq "${p}no VNI in two live reservations" \
        "$(psql_q "SELECT count(*) FROM (SELECT x FROM reservations, unnest(vnis) x
                    WHERE state <> 'released' GROUP BY x HAVING count(*) > 1) d")" 0
}

# ---- replicas on fixed ports ----------------------------------------------
#
# A replica killed with SIGKILL comes back on the same URL, as a load
# balancer would expect.  The ports are drawn below the kernel's ephemeral
# range, which the clients' own connections use, and must not be listened
# on already.

# pick_port: print a free TCP port below the ephemeral range.
pick_port () {
    read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range
    port_lo=$((eph_lo > 12000 ? eph_lo - 10000 : 20000))
    for _ in $(seq 1 50); do
        p=$((port_lo + $(od -An -N2 -tu2 /dev/urandom) % 9000))
        ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
    done
    return 1
}

# replica_start NAME: start vnibrokerd on $T/NAME.toml; sets PID_<NAME>.
# Fails when it does not listen within 10 s (a taken port: it exits).
REPLICA_STARTS=0
replica_start () {
    REPLICA_STARTS=$((REPLICA_STARTS + 1))
    log=$T/broker-$1.$REPLICA_STARTS.log
    "$VNIBROKERD" -c "$T/$1.toml" >"$log" 2>&1 &
    pid=$!
    track "$pid"
    eval "PID_$1=$pid"
    wait_for 10 sh -c "grep -q 'listening on' '$log' || ! kill -0 $pid"
    grep -q 'listening on' "$log" && return 0
    echo "# replica $1 did not start:"
    sed 's/^/#   /' "$log" | tail -n 5
    kill -KILL "$pid" 2>/dev/null
    { wait "$pid"; } 2>/dev/null
    return 1
}

# replica_first NAME: give $T/NAME.toml (a broker_config) a fresh fixed
# port, again if it was taken meanwhile, and start it; sets URL_<NAME>.
replica_first () {
    for _ in 1 2 3 4 5; do
        port=$(pick_port) || break
        sed -i "0,/^port = [0-9]*/s//port = $port/" "$T/$1.toml"
        if replica_start "$1"; then
            eval "URL_$1=http://127.0.0.1:$port"
            return 0
        fi
    done
    return 1
}

# kill_replicas_during PID SECONDS EVERY A B: while process PID (a load
# client running SECONDS) runs, SIGKILL replica A, then B, then A ...
# every EVERY seconds, each restarted on its port half a second later.
# Sets KILLS and RESTARTS.
kill_replicas_during () {
    KILLS=0
    RESTARTS=0
    victim=$4
    elapsed=0
    while [ $((elapsed + $3 + 2)) -lt "$2" ] && kill -0 "$1" 2>/dev/null; do
        sleep "$3"
        elapsed=$((elapsed + $3))
        eval "pid=\$PID_$victim"
        kill -KILL "$pid" 2>/dev/null && KILLS=$((KILLS + 1))
        { wait "$pid"; } 2>/dev/null
        sleep 0.5
        for _ in 1 2 3 4 5; do
            if replica_start "$victim"; then
                RESTARTS=$((RESTARTS + 1))
                break
            fi
            sleep 0.5
        done
        if [ "$victim" = "$4" ]; then victim=$5; else victim=$4; fi
    done
}

# replicas_ab_config VNI-TOML [SED-ARGS...]: $T/A.toml and $T/B.toml for
# replicas_ab_start: broker_config with no report limit (the load clients
# run far more jobs a second on a node than a node reports; 0215 tests
# the limit), quieter logs and SED-ARGS (-e EXPR ...) applied, and a [vni]
# table of the lines VNI-TOML.
replicas_ab_config () {
    rc_vni=$1
    shift
    for rc_name in A B; do
        broker_config "$T/$rc_name.toml" 'report_rate = 0'
        sed -i -e 's/^level = .*/level = "notice"/' "$@" "$T/$rc_name.toml"
        printf '\n[vni]\n%s\n' "$rc_vni" >>"$T/$rc_name.toml"
    done
}

# replicas_ab_start: migrate with $T/A.toml and start replicas A and B
# (replica_first); a failure is reported and ends the test.
replicas_ab_start () {
    broker_migrate "$T/A.toml" || { not_ok "migrate"; finish; }
    replica_first A || { not_ok "replica A starts"; finish; }
    replica_first B || { not_ok "replica B starts"; finish; }
}

# history_with_kills [HISTORY-ARGS...]: run the history client ($HISTORY,
# $THREADS threads for $SECONDS_RUN s) against replicas A and B while
# kill_replicas_during SIGKILLs one, then the other, every $KILL_EVERY s.
# Its output is in $T/history.out (and printed as comments); checks that
# the replicas were killed and restarted and that it found every
# invariant held.
history_with_kills () {
    "$HISTORY" "$@" --url "$URL_A" --url "$URL_B" --threads "$THREADS" \
        --seconds "$SECONDS_RUN" \
        --sched-token-file "$T/sched.token" --admin-token-file "$T/admin.token" \
        --node-key-file "$T/node.key" --settle 3 --log "$T/history.jsonl" \
        >"$T/history.out" 2>&1 &
    HPID=$!
    track "$HPID"
    kill_replicas_during "$HPID" "$SECONDS_RUN" "$KILL_EVERY" A B
    wait "$HPID"
    hrc=$?
    sed 's/^/# /' "$T/history.out"
    expect_match "replicas were killed mid-load ($KILLS) and restarted on their ports ($RESTARTS)" \
        "$KILLS $RESTARTS" '^([1-9][0-9]*) \1$'
    expect_eq "the history checker found every invariant held (exit status)" "$hrc" 0
}

# test_ca CN: a throwaway CA named CN, $T/ca.pem and $T/ca.key.
test_ca () {
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
        -keyout "$T/ca.key" -out "$T/ca.pem" >/dev/null 2>&1
}

# test_cert NAME CN SAN: a certificate of test_ca's CA for CN with
# subjectAltName SAN (IP:127.0.0.1): $T/NAME.pem, and $T/NAME.key (0600).
test_cert () {
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$T/$1.key" \
        -out "$T/$1.csr" >/dev/null 2>&1
    printf 'subjectAltName=%s\n' "$3" >"$T/$1.ext"
    openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
        -CAcreateserial -days 2 -extfile "$T/$1.ext" -out "$T/$1.pem" >/dev/null 2>&1
    chmod 600 "$T/$1.key"
}

# http METHOD PATH [CURL-ARGS...]: sets HTTP_STATUS; body in $T/http.body,
# headers in $T/http.headers.  The URL defaults to $BROKER_URL.  With TOKEN
# set (TOKEN=$SCHED_TOKEN http ...), the request carries it as a bearer.
# POST, PUT and PATCH send Content-Type: application/json unless the
# caller names a Content-Type (the broker refuses other bodies with 415).
http () {
    method=$1
    path=$2
    shift 2
    json_ct=""
    case "$method" in POST | PUT | PATCH)
        json_ct="Content-Type: application/json"
        for a in "$@"; do
            case "$a" in [Cc]ontent-[Tt]ype:*) json_ct="" ;; esac
        done
        ;;
    esac
    set -- ${TOKEN:+-H "Authorization: Bearer $TOKEN"} ${json_ct:+-H "$json_ct"} "$@"
    HTTP_STATUS=$(curl -sS -o "$T/http.body" -D "$T/http.headers" \
        -w '%{http_code}' -X "$method" --max-time 20 "$@" "$BROKER_URL$path" \
        2>"$T/http.err") || HTTP_STATUS="curl-failed:$(cat "$T/http.err")"
    HTTP_BODY=$(cat "$T/http.body" 2>/dev/null)
}

# events_pages TOKEN QUERY OUT: every page of GET /v1/events?QUERY as
# TOKEN, following next (100 pages at the most), as "id time" lines into
# OUT; sets PAGES.  A page that fails is not_ok and ends the walk.
events_pages () {
    : >"$3"
    ep_after=""
    PAGES=0
    while :; do
        TOKEN=$1 http GET "/v1/events?$2${ep_after:+&after=$ep_after}"
        [ "$HTTP_STATUS" = 200 ] || { not_ok "GET /v1/events?$2 page $PAGES: $HTTP_STATUS"; break; }
        jq -r '.events[] | "\(.id) \(.time)"' "$T/http.body" >>"$3"
        PAGES=$((PAGES + 1))
        ep_after=$(jq -r '.next // empty' "$T/http.body")
        [ -n "$ep_after" ] && [ "$PAGES" -lt 100 ] || break
    done
}

# reply_metric NAME-AND-LABELS: the value of one sample of the last reply
# (GET /metrics).
reply_metric () {
    printf '%s\n' "$HTTP_BODY" | awk -v k="$1" '$1 == k { print $2; exit }'
}

# http_reserve JOB NODES [HWCOLL]: the scheduler reserves for JOB (uid 1001,
# alice) on NODES, with hwcoll HWCOLL; the reply must be 201.
http_reserve () {
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"$2\"${3:+,\"hwcoll\":\"$3\"}}"
    expect_status "reserve $1" 201
}

# header NAME: value of a header of the last reply.
header () {
    grep -i "^$1:" "$T/http.headers" | head -n 1 | cut -d: -f2- | tr -d '\r' | sed 's/^ //'
}
