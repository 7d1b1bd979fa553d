#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# `make bench`: build and run the benchmarks, printing one table of
# scenario, figure, target and whether the target is met.  Benchmarks
# never fail the build: targets are reported, not asserted (timing on a
# shared 2-core machine is not a test).
#
# Two parts.  The library micro-benchmarks (bench_lib) need nothing.  The
# API benchmarks (bench_api, driving the load generator in loadgen.c) start
# their own PostgreSQL (fsync on, like the integration tests, whose
# tests/integration/lib.sh this script reuses) and a non-sanitized broker
# with a generated configuration, tokens file and node key; they compare
# reserve+release throughput with pgbench one-row inserts on the same
# server.  Everything started here is stopped on exit, also on failure or
# interrupt.  Rows of scenarios that cannot run yet (a broker without the
# reservation API) say "not run".  The exit status is non-zero only when
# the harness itself breaks (PostgreSQL or the broker do not start).
#
# This file sets up and holds the helpers; the scenarios are in the files
# it sources near its end, one per group (tests/bench/run-*.sh: api,
# fullmachine, drain-agent, faults, history, failover, jobstart).
set -eu
BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP"
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
# The Makefile names what the benchmarks need (bench-bins): file targets
# spelled here would have to match its spelling of $(BUILD) exactly.
make -s --no-print-directory BUILD="$BUILD" bench-bins
echo "== library ($(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
"$BUILD/tests/bench/bench_lib"

# ---- the API part ---------------------------------------------------------

# Knobs for a quick look or for tuning: seconds per measured scenario,
# the broker's HTTP threads and database pool, and which API scenarios to
# run (nodeprolog healthz compare openloop bigjob populate nodeview rss
# storm frag stepstorm fullmachine drain agent fmslow hwcoll slowclients
# contention history uiscale failover patroni ridethrough slurmstart
# fluxstart; pairs is compare), the rounds of the alternated comparisons
# (compare, history, frag), and the drain scenario's Fabric Manager
# release-queue workers.
SECS=${BENCH_SECONDS:-10}
FM_CONCURRENCY=${BENCH_FM_CONCURRENCY:-12}
THREADS=${BENCH_THREADS:-8}
POOL=${BENCH_POOL:-8}
ONLY=${BENCH_ONLY:-}
ROUNDS=${BENCH_ROUNDS:-3}
VNIB_BUILD=$BUILD
. "$TOP/tests/integration/lib.sh"
set +e
BENCH_API=$BUILD/tests/bench/bench_api
HARNESS_FAILED=0

# row_not_run NAME UNIT OP TARGET WHY: a row for a scenario that did not run.
row_not_run () {
    printf '%-52s %12s %-6s %s %10.3f  not run (%s)\n' "$1" n/a "$2" "$3" "$4" "$5"
}

# steal_mark and steal_note WHAT: a "#" line with the share of CPU time
# that the virtual machine's host took (steal, /proc/stat) between the two.
# Every figure here assumes the cores are ours; with more than 2% taken,
# latency tails and ratios are the host's, not the broker's.
steal_mark () {
    STEAL0=$(steal_counters)
}

steal_counters () {
    awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t }' \
        /proc/stat 2>/dev/null
}

steal_note () {
    [ -n "${STEAL0:-}" ] || return 0
    # shellcheck disable=SC2086
    set -- "$1" $STEAL0 $(steal_counters)
    [ $# -eq 5 ] || return 0
    awk -v w="$1" -v s0="$2" -v t0="$3" -v s1="$4" -v t1="$5" 'BEGIN {
        if (t1 <= t0) exit
        p = 100 * (s1 - s0) / (t1 - t0)
        printf "#   %s: the VM host took %.1f%% of the CPU time (steal)%s\n", w, p,
            (p > 2 ? "; over 2%, figures are not comparable with a quiet machine" : "") }'
}

# wanted SCENARIO: true unless BENCH_ONLY leaves it out.
wanted () {
    [ -z "$ONLY" ] && return 0
    case " $ONLY " in *" $1 "*) return 0 ;; esac
    return 1
}

# scenario NAME [steal]: when wanted, NAME_scenario, and NAME_not_run with
# why_not when the API is not up, or with why when the scenario fails;
# with steal, the VM host's share of the CPU time (steal_note) around it.
scenario () {
    wanted "$1" || return 0
    if [ "$api_ready" != 1 ]; then
        "$1_not_run" "$why_not"
        return 0
    fi
    [ "${2:-}" != steal ] || steal_mark
    "$1_scenario" || "$1_not_run" "$why"
    [ "${2:-}" != steal ] || steal_note "$1"
}

# stop_pids PID...: SIGTERM each and wait for it.
stop_pids () {
    for sp_pid in "$@"; do
        kill -TERM "$sp_pid" 2>/dev/null
        wait "$sp_pid" 2>/dev/null
    done
}

# api SCENARIO [ARGS...]: one bench_api scenario, bounded in time even if
# the load generator's own bounds failed.  It runs in the background and is
# tracked, so that an interrupt stops it at once through lib.sh's cleanup.
api () {
    wanted "$1" || return 0
    api_at "$BROKER_URL" "$@"
}

# api_at URL SCENARIO [ARGS...]: the same against another broker, whatever
# BENCH_ONLY says.
api_at () {
    url=$1
    sc=$2
    shift 2
    timeout -k 5 300 "$BENCH_API" -u "$url" -T "$T/sched.token" \
        -k "$T/node.key" "$@" "$sc" &
    api_pid=$!
    track "$api_pid"
    wait "$api_pid" || {
        echo "#   bench_api $sc failed (exit $?)"
        HARNESS_FAILED=1
    }
}

fail_setup () {
    echo "bench: $*" >&2
    exit 1
}

# ---- the node: a job's start from a lease -----------------------------------
#
# Issue 43's per-node target: `vnib-agent prolog --lease` on a node of 4
# simulated NICs, run as a scheduler runs it (a process), at most 20 ms
# more than creating the 4 services alone, alternated, BENCH_NODE_ROUNDS
# (30) rounds (tests/bench/bench_node.c).  No broker takes part: it runs
# before the API part.
if wanted nodeprolog; then
    echo "== node ($(nproc) cores)"
    printf '%-52s %12s %-6s %2s %10s  %s\n' scenario figure unit "" target result
    steal_mark
    "$BUILD/tests/bench/bench_node" "$BUILD/vnib-agent" "${BENCH_NODE_ROUNDS:-30}" ||
        row_not_run "node: prolog --lease minus the services alone" ms "<=" 20 \
            "bench_node failed"
    steal_note nodeprolog
fi

# ---- credentials ----------------------------------------------------------

umask 077
tokline=""
if [ -x "$BUILD/vnibctl" ]; then
    # line 1 the token, line 2 "ROLE NAME SHA256HEX"
    out=$("$BUILD/vnibctl" token new scheduler bench 2>/dev/null) &&
        tok=$(printf '%s\n' "$out" | sed -n 1p) &&
        tokline=$(printf '%s\n' "$out" | sed -n 2p) &&
        printf '%s' "$tok" >"$T/sched.token" || tokline=""
    case "$tokline" in "scheduler bench "*) ;; *) tokline="" ;; esac
fi
if [ -z "$tokline" ]; then
    rm -f "$T/sched.token"
    "$BENCH_API" token "$T/sched.token" || fail_setup "cannot make a token"
    tokline="scheduler bench $(sha256sum <"$T/sched.token" | cut -d' ' -f1)"
fi
printf '%s\n' "$tokline" >"$T/tokens"
"$BENCH_API" nodekey "$T/node.key" || fail_setup "cannot make a node key"
umask 022

# ---- PostgreSQL and pgbench -----------------------------------------------

# The server runs as one that has been up a while, not as a new one.  A
# new cluster makes each WAL segment it moves into: 16 MB of zeros and an
# fsync, under the WAL write lock, so every commit in flight waits for it
# (50-65 ms here, every 3-4 s at 1,500 pairs/s: the largest requests of
# the pairs runs, traced to the segment switches).  An older one renames
# the segments a checkpoint no longer needs into the next ones
# (min_wal_size, deploy/README.md 3.2).  So BENCH_WAL_SEGMENTS (64, as
# many as min_wal_size keeps) segments are filled and recycled before any
# run.
PG_OPTS="-c min_wal_size=1GB -c max_wal_size=4GB"
pg_start || fail_setup "PostgreSQL does not start"
as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib pgbench ||
    fail_setup "cannot create the pgbench database"
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pgbench -XAtq \
    -v ON_ERROR_STOP=1 -c 'CREATE TABLE t (v integer)' >/dev/null ||
    fail_setup "cannot create the pgbench table"
WAL_SEGMENTS=${BENCH_WAL_SEGMENTS:-64}
as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d pgbench -XAtq \
    -v ON_ERROR_STOP=1 \
    -c "DO \$\$ BEGIN FOR i IN 1 .. $WAL_SEGMENTS LOOP
            INSERT INTO t VALUES (i); PERFORM pg_switch_wal();
        END LOOP; END \$\$" \
    -c 'CHECKPOINT' -c 'TRUNCATE t' >/dev/null ||
    fail_setup "cannot fill and recycle the WAL segments"
echo 'INSERT INTO t (v) VALUES (1);' >"$T/insert.sql"
chmod 644 "$T/insert.sql"

# pgbench_run CLIENTS SCRIPT DATABASE TAG: SCRIPT for $SECS seconds with
# prepared statements (as the broker's); sets tps ("" if pgbench failed or
# a transaction failed, with its log's end as "#" lines).  Long commands
# run in the background and are waited for, never inside $(...), so that
# an interrupt reaches the trap at once.
pgbench_run () {
    log=$T/pgbench.$4.$1.log
    as_pg_user "$PG_BIN/pgbench" -n -h "$PGSOCK" -U vnib -c "$1" -j 2 \
        -M prepared -T "$SECS" -f "$2" "$3" >"$log" 2>&1 &
    pgb_pid=$!
    track "$pgb_pid"
    wait "$pgb_pid"
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$log" | tail -n 1)
    if [ -z "$tps" ] || grep -q '^number of failed transactions: [1-9]' "$log"; then
        echo "#   pgbench $4 with $1 clients failed:"
        tail -n 5 "$log" | sed 's/^/#   /'
        tps=""
    fi
}

# ---- the broker -----------------------------------------------------------

# bench_config FILE WITH_AUTH: threads near the database pool, as the
# example configuration advises; two cores gain nothing from more, and
# commits (fsync) batch better with a few connections waiting together.
# The load generators connect from 127.0.0.1 and stand for the scheduler,
# whose host deploy/README.md (section 6) says to list in
# server.priority_addresses; the attacks come from other addresses.
bench_config () {
    cat >"$1" <<EOF
[server]
address = "127.0.0.1"
port = $PORT
threads = $THREADS
max_connections = 1024
priority_addresses = ["127.0.0.1"]
connection_timeout_s = 60

[database]
conninfo = "host=$PGSOCK dbname=vnibroker user=vnib"
pool_size = $POOL
connect_timeout_ms = 2000
query_timeout_ms = 10000
acquire_timeout_ms = 10000${BENCH_GROUP_LEADERS:+
group_leaders = $BENCH_GROUP_LEADERS}${BENCH_GROUP_MAX:+
group_max = $BENCH_GROUP_MAX}

[log]
level = "warning"
EOF
    if [ "$2" = 1 ]; then
        cat >>"$1" <<EOF

[auth]
tokens_file = "$T/tokens"
node_key_file = "$T/node.key"

[vni]
pool = "1024-65535"
per_job_default = 1

[lease]
key_file = "$T/lease.key"
EOF
    fi
}

# The "listening on" line is a notice, which level "warning" does not
# print; so the port is chosen here and readiness is /healthz answering.
bench_broker_start () {
    BROKER_LOG=$T/broker.log
    "$VNIBROKERD" -c "$1" >"$BROKER_LOG" 2>&1 &
    BROKER_PID=$!
    track "$BROKER_PID"
    BROKER_URL=http://127.0.0.1:$PORT
    wait_for 10 curl -sf -o /dev/null "$BROKER_URL/healthz" && return 0
    stop_pids "$BROKER_PID"
    return 1
}

WITH_AUTH=1
PORT=0
# The broker's lease key (docs/node-path.md): reserves with "lease": true.
(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/lease.key" 2>/dev/null) ||
    fail_setup "cannot make a lease key (openssl)"
bench_config "$T/bench.toml" 1
if ! "$VNIBROKERD" --check-config "$T/bench.toml" >"$T/check.log" 2>&1; then
    # a broker from before the reservation API: /healthz and pgbench only
    echo "#   the broker refuses [auth]/[vni]: $(grep -m1 . "$T/check.log")"
    WITH_AUTH=0
    bench_config "$T/bench.toml" 0
fi
"$VNIBROKERD" -c "$T/bench.toml" --migrate >"$T/migrate.log" 2>&1 || {
    cat "$T/migrate.log" >&2
    fail_setup "migration failed"
}
started=0
for _ in 1 2 3; do  # a port taken between freeport and bind: again
    PORT=$("$BENCH_API" freeport) || break
    bench_config "$T/bench.toml" "$WITH_AUTH"
    if bench_broker_start "$T/bench.toml"; then
        started=1
        break
    fi
done
if [ "$started" != 1 ]; then
    sed 's/^/#   /' "$BROKER_LOG" >&2
    fail_setup "the broker does not start"
fi

# The reservation API is there when a reserve answers 201 or 200.
api_ready=0
why_not="API not available"
if [ "$WITH_AUTH" = 1 ]; then
    # the token goes to curl in a file, not on its command line
    (umask 077 && printf 'Authorization: Bearer %s\n' "$(cat "$T/sched.token")" \
        >"$T/auth.header")
    code=$(curl -s -o "$T/probe.body" -w '%{http_code}' --max-time 10 \
        -H @"$T/auth.header" -H 'Content-Type: application/json' \
        -d '{"job_id":"probe","uid":1000,"user":"bench","nodes":"n[1-4]","vni_count":1}' \
        "$BROKER_URL/v1/reservations")
    case "$code" in
        200 | 201) api_ready=1 ;;
        *) why_not="POST /v1/reservations answers $code" ;;
    esac
    curl -s -o /dev/null --max-time 10 -X DELETE \
        -H @"$T/auth.header" "$BROKER_URL/v1/reservations/probe"
else
    why_not="broker rejects [auth]/[vni]: $(grep -m1 . "$T/check.log" | cut -c1-60)"
fi

# ---- rows, medians and ranges ---------------------------------------------

# empty_files PREFIX NAME...: empty (create) each PREFIX.NAME, the files a
# scenario's rounds append their figures to.
empty_files () {
    ef_prefix=$1
    shift
    for ef_name; do : >"$ef_prefix.$ef_name"; done
}

# rotate WORD...: the words with the first moved to the end, so that each
# round of a scenario starts its runs with another one.
rotate () {
    rot_first=$1
    shift
    echo "$* $rot_first"
}

# rounds RUN NOTE WORD...: $ROUNDS rounds, each of "RUN WORD ROUND" for
# every WORD, then "NOTE ROUND ORDER"; each round starts with the next WORD.
rounds () {
    rd_run=$1
    rd_note=$2
    shift 2
    rd_order=$*
    rd_r=0
    while [ "$rd_r" -lt "$ROUNDS" ]; do
        rd_r=$((rd_r + 1))
        for rd_w in $rd_order; do "$rd_run" "$rd_w" "$rd_r"; done
        "$rd_note" "$rd_r" "$rd_order"
        rd_order=$(rotate $rd_order)
    done
}

# median_range FILE: "MEDIAN MIN MAX" of the numbers in FILE.
median_range () {
    sort -n "$1" | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

# row_ref NAME FIGURE UNIT NOTE: a reference row (no target of its own).
row_ref () {
    printf '%-52s %12.3f %-6s %2s %10s  %s\n' "$1" "$2" "$3" "" - "ref${4:+ ($4)}"
}

# row_cmp NAME FIGURE UNIT OP TARGET NOTE: a row with its target.
row_cmp () {
    printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$1" "$2" "$3" "$4" "$5" \
        "$(awk -v f="$2" -v t="$5" -v op="$4" 'BEGIN {
            m = (op == "<=") ? (f <= t) : (f >= t); print m ? "met" : "NOT MET" }')${6:+ ($6)}"
}

# row_of FILE NAME: the figure of row NAME in bench_api's output FILE.
row_of () {
    grep -F "$2" "$1" | head -n 1 | cut -c54-65 | tr -d ' ' | grep -v '^n/a$'
}

# largest_of FILE: the largest single request of a pairs run, in ms.
largest_of () {
    sed -n 's/^#   largest single request: \([0-9.]*\) ms$/\1/p' "$1" | head -n 1
}

# bench_out FILE URL SCENARIO [ARGS...]: api_at with the output in FILE.
bench_out () {
    out=$1
    shift
    api_at "$@" >"$out"
}

# ---- the scenarios, one file per group ------------------------------------

# Sourced in this order, each runs the scenarios BENCH_ONLY wants with
# the broker and helpers above.
. "$TOP/tests/bench/run-api.sh"
. "$TOP/tests/bench/run-fullmachine.sh"
. "$TOP/tests/bench/run-drain-agent.sh"
. "$TOP/tests/bench/run-faults.sh"
. "$TOP/tests/bench/run-history.sh"
. "$TOP/tests/bench/run-failover.sh"
. "$TOP/tests/bench/run-jobstart.sh"

if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "#   the broker died during the run:"
    tail -n 20 "$BROKER_LOG" | sed 's/^/#   /'
    HARNESS_FAILED=1
elif [ -s "$BROKER_LOG" ]; then
    echo "#   broker warnings: $(wc -l <"$BROKER_LOG") lines; the first:"
    head -n 3 "$BROKER_LOG" | cut -c1-200 | sed 's/^/#   /'
fi
exit "$HARNESS_FAILED"
