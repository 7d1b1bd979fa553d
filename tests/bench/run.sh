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
# contention history uiscale failover patroni slurmstart fluxstart; pairs
# is compare), the rounds of the alternated comparisons
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

# ---- compare: the broker against pgbench at equal concurrency ---------------
#
# With as many clients as the broker has database connections (POOL),
# ROUNDS rounds, each of four runs of SECS seconds in an order that
# rotates from round to round (so that no run always follows the same
# one): the broker's reserve+release pairs (bench_api pairs -c POOL);
# pgbench running the broker's own SQL (tests/bench/pgbench-group.sh,
# prepared statements as the broker's are, on the broker's database):
# the broker writes reserves and releases in groups (group commit), so
# pgbench sends groups of the mean size the broker's groups had in a
# warm-up run at the same concurrency, and counts N pairs per pgbench
# transaction of N-item groups; pgbench one-row
# INSERTs; and the broker's pairs at 32 clients.  Rows: the medians and
# ranges of each, and ratios of the medians (the range of the per-round
# ratios beside):
#   - HTTP overhead, broker pairs/s over pgbench same-SQL pairs/s (>= 0.8):
#     what HTTP, JSON, auth and the broker's threads cost over libpq;
#   - SQL cost, same-SQL pairs/s over half the INSERT tps (>= 0.5): a pair
#     is two commits, so the cheapest conceivable pair is two 1-row INSERTs;
#   - pairs at 32 clients over pairs at POOL clients (>= 0.9): clients
#     beyond the pool queue for a connection and must not cost throughput;
#   - the largest single request of all the broker's pairs runs (<= 50 ms).
WIDE=32

compare_not_run () {
    row_not_run "HTTP overhead: pairs/s / pgbench same SQL pairs/s" ratio ">=" 0.8 "$1"
    row_not_run "SQL cost: same SQL pairs/s / (INSERT tps / 2)" ratio ">=" 0.5 "$1"
    row_not_run "pairs/s, $WIDE clients / $POOL clients" ratio ">=" 0.9 "$1"
    row_not_run "largest single request, pairs runs" ms "<=" 50 "$1"
}

# compare_round ROUND ORDER: the round's figures, and their ratios appended
# to $T/cmp.ovh, $T/cmp.cost and $T/cmp.wratio.
compare_round () {
    echo "#   round $1 ($2): broker $r_broker pair/s (groups of $g_broker)," \
        "same SQL $r_sql pair/s, INSERT $r_insert tps," \
        "broker at $WIDE clients $r_wide pair/s (groups of $g_wide)"
    awk -v b="$r_broker" -v s="$r_sql" -v i="$r_insert" -v w="$r_wide" \
        -v d="$T/cmp" 'BEGIN {
        if (b + 0 > 0 && s + 0 > 0) print b / s >>(d ".ovh")
        if (s + 0 > 0 && i + 0 > 0) print s / (i / 2) >>(d ".cost")
        if (w + 0 > 0 && b + 0 > 0) print w / b >>(d ".wratio") }'
}

# compare_run WHAT ROUND: one run of the compare scenario; appends its
# figure to $T/cmp.WHAT (nothing when it failed).
compare_run () {
    case "$1" in
        broker | wide)
            c=$POOL
            [ "$1" = wide ] && c=$WIDE
            g0=$(group_counts "$BROKER_URL")
            bench_out "$T/cmp.out" "$BROKER_URL" pairs -c "$c" -d "$SECS" \
                -x "cmp$2$1-"
            eval "g_$1=$(group_mean "$g0" "$(group_counts "$BROKER_URL")")"
            f=$(row_of "$T/cmp.out" "reserve+release pairs/s, $c clients")
            mx=$(largest_of "$T/cmp.out")
            [ -n "$mx" ] && echo "$mx $1 round $2" >>"$T/cmp.largest"
            [ -z "$f" ] && grep '^#' "$T/cmp.out" | head -n 4
            ;;
        sql)
            pgbench_run "$POOL" "$T/pair.sql" vnibroker sql
            f=$(awk -v t="$tps" -v n="$GROUP_N" 'BEGIN { if (t != "") print t * n }')
            ;;
        insert)
            pgbench_run "$POOL" "$T/insert.sql" pgbench insert
            f=$tps
            ;;
    esac
    [ -n "$f" ] && echo "$f" >>"$T/cmp.$1"
    eval "r_$1=\${f:-?}"
}

# group_counts URL: "GROUPS REQUESTS" of reserves and releases together,
# from the broker's /metrics.
group_counts () {
    curl -s "$1/metrics" | awk '
        /^vnib_db_groups_total\{op="(reserve|release)"\}/ { g += $2 }
        /^vnib_db_group_requests_total\{op="(reserve|release)"\}/ { r += $2 }
        END { print g + 0, r + 0 }'
}

# group_mean "G0 R0" "G1 R1": requests per group between the two counts.
group_mean () {
    echo "$1 $2" | awk '{ g = $3 - $1; r = $4 - $2
        if (g > 0) printf "%.2f\n", r / g; else print "?" }'
}

compare_scenario () {
    # The groups the broker makes at POOL clients, in a warm-up run.
    g0=$(group_counts "$BROKER_URL")
    bench_out "$T/cmp.out" "$BROKER_URL" pairs -c "$POOL" -d 3 -x "cmpwarm-"
    gm=$(group_mean "$g0" "$(group_counts "$BROKER_URL")")
    GROUP_N=$(awk -v m="$gm" 'BEGIN { n = int(m + 0.5); print n < 1 ? 1 : n }')
    if ! sh "$TOP/tests/bench/pgbench-group.sh" "$GROUP_N" >"$T/pair.sql"; then
        compare_not_run "tests/bench/pgbench-group.sh failed"
        return
    fi
    chmod 644 "$T/pair.sql"
    row_ref "broker's requests per group, $POOL clients (warm-up)" "${gm%%\?}" \
        req "pgbench same SQL sends groups of $GROUP_N"
    empty_files "$T/cmp" largest ovh cost wratio broker sql insert wide
    rounds compare_run compare_round broker sql insert wide
    mb=$(median_range "$T/cmp.broker")
    ms=$(median_range "$T/cmp.sql")
    mi=$(median_range "$T/cmp.insert")
    mw=$(median_range "$T/cmp.wide")
    n="median of $ROUNDS"
    [ -n "$mb" ] && set -- $mb && row_ref "reserve+release pairs/s, $POOL clients (broker)" \
        "$1" "pair/s" "$n, range $2-$3"
    [ -n "$ms" ] && set -- $ms && row_ref "pgbench same SQL pairs/s, $POOL clients" \
        "$1" "pair/s" "$n, range $2-$3"
    [ -n "$mi" ] && set -- $mi && row_ref "pgbench 1-row INSERT tps, $POOL clients" \
        "$1" tps "$n, range $2-$3"
    [ -n "$mw" ] && set -- $mw && row_ref "reserve+release pairs/s, $WIDE clients (broker)" \
        "$1" "pair/s" "$n, range $2-$3"
    # ratio_row NAME TARGET MEDIAN-A MEDIAN-B DIVISOR RATIOS-FILE
    ratio_row () {
        if [ -n "$3" ] && [ -n "$4" ] && [ -s "$6" ]; then
            set -- "$1" "$2" "$(awk -v a="$3" -v b="$4" -v d="$5" 'BEGIN { print a / (b / d) }')" \
                "$(median_range "$6")"
            # shellcheck disable=SC2086
            rr=$(echo $4 | awk '{ print "per-round range " $2 "-" $3 }')
            row_cmp "$1" "$3" ratio ">=" "$2" "of the medians; $rr"
        else
            row_not_run "$1" ratio ">=" "$2" "a run failed"
        fi
    }
    ratio_row "HTTP overhead: pairs/s / pgbench same SQL pairs/s" 0.8 \
        "${mb%% *}" "${ms%% *}" 1 "$T/cmp.ovh"
    ratio_row "SQL cost: same SQL pairs/s / (INSERT tps / 2)" 0.5 \
        "${ms%% *}" "${mi%% *}" 2 "$T/cmp.cost"
    ratio_row "pairs/s, $WIDE clients / $POOL clients" 0.9 \
        "${mw%% *}" "${mb%% *}" 1 "$T/cmp.wratio"
    if [ -s "$T/cmp.largest" ]; then
        set -- $(sort -n -r "$T/cmp.largest" | head -n 1)
        row_cmp "largest single request, pairs runs" "$1" ms "<=" 50 \
            "of $(wc -l <"$T/cmp.largest") runs; in the $2 run of round $4"
    else
        row_not_run "largest single request, pairs runs" ms "<=" 50 "no pairs run"
    fi
}

echo "== API ($(nproc) cores; broker threads $THREADS, database pool $POOL; ${SECS} s runs)"
echo "# PostgreSQL: $WAL_SEGMENTS WAL segments filled and recycled before the runs, as on a server in steady state (deploy/README.md 3.2)"
printf '%-52s %12s %-6s %2s %10s  %s\n' scenario figure unit "" target result
api healthz -c 32 -d 3
api healthz -c 16 -r 2000 -d 3

compare_wanted=0
{ wanted compare || wanted pairs; } && compare_wanted=1
if [ "$compare_wanted" = 1 ] && [ "$api_ready" = 1 ]; then
    steal_mark
    compare_scenario
    steal_note "compare"
elif [ "$compare_wanted" = 1 ]; then
    compare_not_run "$why_not"
fi

if [ "$api_ready" = 1 ]; then
    steal_mark
    api openloop -r 1000 -d "$SECS"
    wanted openloop && steal_note "openloop"
    api bigjob -n 50
    api populate -n 10000
    api nodeview -n 10000 -d 5
    api rss -p "$BROKER_PID"
    api storm -c 48 -d "$SECS"
else
    row_not_run "reserve p99 latency at 1000/s (open loop)" ms "<=" 10 "$why_not"
    row_not_run "reserve 11,136 nodes: server time p50" ms "<=" 5 "$why_not"
    row_not_run "reserve 11,136 nodes: client latency p50" ms "<=" 5 "$why_not"
    row_not_run "GET /v1/nodes/{node}, 10k active: p50" ms "<=" 2 "$why_not"
    row_not_run "GET /v1/nodes/{node}, 10k active: p99" ms "<=" 2 "$why_not"
    row_not_run "memory: broker VmRSS with 10k active reservations" MiB "<=" 64 "$why_not"
    row_not_run "node fetch storm: 11,136 tokens, 48 conns" "req/s" ">=" 20000 "$why_not"
fi

# ---- frag: a node's GET of a fragmented job ---------------------------------
#
# Two jobs of 11,136 nodes each (bench_api frag-setup): fragc on
# nid[000001-011136], and fragf on 1,000 ranges of 11 or 12 nodes with one
# node left out between them, the node list of a job placed on whatever
# nodes were free.  Each run (bench_api frag-get-compact or
# frag-get-ranged) has every node of one job GET it in turn, closed loop
# on one connection for FRAG_SECS seconds: against the broker as
# configured above (node-fetch cache on, as deployed: one fetch per
# node_cache_ms reads the database), and, for reference, against a second
# broker on the same database with node_cache_ms = 0, where every fetch
# reads it.  ROUNDS rounds of the four runs, in a rotating order.  Rows:
# each job's client p50, median and range over the rounds, and the ratio
# of the medians, 1,000-range over compact: target <= 2 as deployed
# (issue 31 item 4: a member node's fetch of a fragmented job expanded its
# whole node list on every request); with the cache off a reference, as
# there each fetch also renders and carries the 14 KB node list.  The
# round lines give the broker's own time (Server-Timing) beside.
FRAG_SECS=${BENCH_FRAG_SECONDS:-3}
FRAG_ROW="node GET p50, 1,000-range / compact 11,136-node job"
FRAG_DB_ROW="node GET p50, 1,000-range / compact, cache off"

frag_not_run () {
    row_not_run "$FRAG_ROW" ratio "<=" 2 "$1"
}

# frag_run compact|ranged|compact-db|ranged-db ROUND: one run; appends its
# p50 to $T/frag.WHAT and keeps it in r_WHAT.
frag_run () {
    case "$1" in
        *-db) url=$FRAG_DB_URL ;;
        *) url=$BROKER_URL ;;
    esac
    bench_out "$T/frag.out" "$url" "frag-get-${1%-db}" -c 1 -d "$FRAG_SECS"
    f=$(row_of "$T/frag.out" "node GET p50, ")
    srv=$(sed -n 's/^#   server time p50 \([0-9.]*\) ms$/\1/p' "$T/frag.out")
    [ -z "$f" ] && grep '^#' "$T/frag.out" | head -n 4
    [ -n "$f" ] && echo "$f" >>"$T/frag.$1"
    eval "r_$(echo "$1" | tr - _)=\${f:-?}/\${srv:-?}"
}

frag_round () {
    echo "#   round $1 ($2): p50 ms, client/server: compact $r_compact," \
        "1,000 ranges $r_ranged; cache off: compact $r_compact_db," \
        "1,000 ranges $r_ranged_db"
}

# frag_rows NAME SUFFIX LABEL [ref]: the two jobs' reference rows and the
# ratio row NAME (target <= 2, or a reference) of the runs
# $T/frag.compact$SUFFIX and $T/frag.ranged$SUFFIX.
frag_rows () {
    mc=$(median_range "$T/frag.compact$2")
    mr=$(median_range "$T/frag.ranged$2")
    if [ -z "$mc" ] || [ -z "$mr" ]; then
        row_not_run "$1" ratio "<=" 2 "a run failed"
        return
    fi
    n="median of $ROUNDS"
    set -- "$1" "$2" "$3" "${4:-}" $mc
    row_ref "node GET p50, compact job$3" "$5" ms "$n, range $6-$7"
    c=$5
    set -- "$1" "$2" "$3" "$4" $mr
    row_ref "node GET p50, 1,000-range job$3" "$5" ms "$n, range $6-$7"
    ratio=$(awk -v a="$5" -v b="$c" 'BEGIN { print a / b }')
    if [ "$4" = ref ]; then
        row_ref "$1" "$ratio" ratio "of the medians, $5 / $c ms"
    else
        row_cmp "$1" "$ratio" ratio "<=" 2 "of the medians, $5 / $c ms"
    fi
}

# nocache_start NAME: a second broker as configured above but with
# node_cache_ms = 0 (every node fetch reads the database), on the same
# database and a free port, logging to $T/NAME.log; sets NOCACHE_PID and
# NOCACHE_URL, or why when it does not start.
nocache_start () {
    saved_port=$PORT
    PORT=$("$BENCH_API" freeport) || { why="no free port"; return 1; }
    bench_config "$T/$1.toml" 1
    PORT=$saved_port
    sed -i 's/^threads = .*/&\nnode_cache_ms = 0/' "$T/$1.toml"
    "$VNIBROKERD" -c "$T/$1.toml" >"$T/$1.log" 2>&1 &
    NOCACHE_PID=$!
    track "$NOCACHE_PID"
    NOCACHE_URL=http://127.0.0.1:$(sed -n 's/^port = //p' "$T/$1.toml")
    wait_for 10 curl -sf -o /dev/null "$NOCACHE_URL/healthz" || {
        why="the cache-off broker does not start"
        return 1
    }
}

frag_scenario () {
    why=""
    nocache_start frag-db || return 1
    FRAG_DB_URL=$NOCACHE_URL
    api_at "$BROKER_URL" frag-setup || { why="frag-setup failed"; return 1; }
    empty_files "$T/frag" compact ranged compact-db ranged-db
    rounds frag_run frag_round compact ranged compact-db ranged-db
    frag_rows "$FRAG_ROW" "" " of 11,136 nodes"
    frag_rows "$FRAG_DB_ROW" -db ", cache off" ref
    api_at "$BROKER_URL" frag-release
    stop_pids "$NOCACHE_PID"
    return 0
}

scenario frag steal

# ---- stepstorm: a full-machine job's steps, each one's node fetch storm -----
#
# A job on all 11,136 nodes (bench_api stepstorm-setup) runs STEPS steps
# (BENCH_STEPSTORM_STEPS, 100) one after another, each on all its nodes:
# the step is reserved, every node fetches it once (11,136 node tokens on
# 48 connections, closed loop: what each node's agent or switch plugin
# does at the step's start), and it is released.  Against the broker as
# configured above (node-fetch cache on, node_cache_ms = 1000 as
# deployed), and, for the comparison, against a second broker on the same
# database with node_cache_ms = 0, where each fetch reads the database;
# at its rate (some 2,500 fetches a second on 2 cores) 100 steps would
# take 7 minutes a run, so it runs REF_STEPS (BENCH_STEPSTORM_REF_STEPS,
# 10) of them: the figures are per step or per fetch, the same work
# either way.  ROUNDS rounds of the two runs,
# in a rotating order; step ids are fresh in every run.  Each run's
# database reads per step are the broker's
# vnib_node_cache_misses_total{kind="step"} over the run, over its steps
# (every miss is one store_step_get statement; its pool acquires, which
# also count the step's reserve and release and the background figures,
# are in the round lines).  Rows, median and range over the rounds:
#   - a step's 11,136 fetches, median over the steps: <= 1 s with the
#     cache (a step's tasks start once its nodes have their VNIs; the
#     round lines give the slowest step too);
#   - database reads per step: <= 2 with the cache (one per
#     node_cache_ms, and a second when a storm straddles an expiry; the
#     first concurrent misses of a storm share one read, see
#     server/api/cache.c), about 11,136 without;
#   - fetches/s and the fetches' p50 and p99, with the cache off beside;
#     the ratio of fetches/s, on over off.
STEPSTORM_STEPS=${BENCH_STEPSTORM_STEPS:-100}
STEPSTORM_REF_STEPS=${BENCH_STEPSTORM_REF_STEPS:-10}
SS_TIME_ROW="step storm: one step's 11,136 fetches, median"
SS_READS_ROW="step storm: DB reads per step"

stepstorm_not_run () {
    row_not_run "$SS_TIME_ROW" s "<=" 1 "$1"
    row_not_run "$SS_READS_ROW" read "<=" 2 "$1"
}

# ss_counters URL: "STEP-MISSES POOL-ACQUIRES" of URL's /metrics.
ss_counters () {
    curl -s "$1/metrics" | awk '
        $1 == "vnib_node_cache_misses_total{kind=\"step\"}" { m = $2 }
        $1 == "vnib_db_pool_acquires_total" { a = $2 }
        END { print m + 0, a + 0 }'
}

# stepstorm_run on|off ROUND: one run; appends its figures to
# $T/ss.WHICH.{time,rate,p50,p99,reads} and describes it in r_WHICH.
stepstorm_run () {
    case "$1" in
        on) url=$BROKER_URL n=$STEPSTORM_STEPS ;;
        off) url=$SS_OFF_URL n=$STEPSTORM_REF_STEPS ;;
    esac
    c0=$(ss_counters "$url")
    bench_out "$T/ss.out" "$url" stepstorm -n "$n" -c 48 -x "r$2$1-"
    c1=$(ss_counters "$url")
    t=$(row_of "$T/ss.out" "$SS_TIME_ROW")
    rate=$(row_of "$T/ss.out" "step storm: fetches/s")
    p50=$(row_of "$T/ss.out" "step storm: fetch p50")
    p99=$(row_of "$T/ss.out" "step storm: fetch p99")
    slowest=$(sed -n 's/^#   stepstorm: .* max \([0-9.]*\)$/\1/p' "$T/ss.out")
    reads=$(echo "$c0 $c1" | awk -v n="$n" '{ printf "%.3f", ($3 - $1) / n }')
    acq=$(echo "$c0 $c1" | awk -v n="$n" '{ printf "%.1f", ($4 - $2) / n }')
    if [ -z "$t" ]; then
        grep '^#' "$T/ss.out" | head -n 4
    else
        echo "$t" >>"$T/ss.$1.time"
        echo "$rate" >>"$T/ss.$1.rate"
        echo "$p50" >>"$T/ss.$1.p50"
        echo "$p99" >>"$T/ss.$1.p99"
        echo "$reads" >>"$T/ss.$1.reads"
    fi
    line="${t:-?} s (slowest ${slowest:-?}), ${rate:-?}/s, p50 ${p50:-?} p99 ${p99:-?} ms, $reads reads ($acq acquires) per step, $n steps"
    case "$1" in
        on) r_on=$line ;;
        off) r_off=$line ;;
    esac
}

stepstorm_round () {
    echo "#   round $1 ($2): cache on: $r_on; cache off: $r_off"
}

# ss_row NAME FILE UNIT [OP TARGET]: the median and range of FILE's
# figures, a row with its target, or a reference row without one.
ss_row () {
    mr=$(median_range "$2") || {
        row_not_run "$1" "$3" "${4:-<=}" "${5:-0}" "a run failed"
        return
    }
    set -- "$1" "$2" "$3" "${4:-}" "${5:-}" $mr
    if [ -n "$4" ]; then
        row_cmp "$1" "$6" "$3" "$4" "$5" "median of $ROUNDS, range $7-$8"
    else
        row_ref "$1" "$6" "$3" "median of $ROUNDS, range $7-$8"
    fi
}

stepstorm_scenario () {
    why=""
    nocache_start stepstorm-db || return 1
    SS_OFF_URL=$NOCACHE_URL
    api_at "$BROKER_URL" stepstorm-setup || {
        why="stepstorm-setup failed"
        stop_pids "$NOCACHE_PID"
        return 1
    }
    empty_files "$T/ss.on" time rate p50 p99 reads
    empty_files "$T/ss.off" time rate p50 p99 reads
    rounds stepstorm_run stepstorm_round on off
    ss_row "$SS_TIME_ROW" "$T/ss.on.time" s "<=" 1
    ss_row "$SS_READS_ROW" "$T/ss.on.reads" read "<=" 2
    ss_row "step storm: fetches/s, $STEPSTORM_STEPS steps" "$T/ss.on.rate" "req/s"
    ss_row "step storm: fetch p50" "$T/ss.on.p50" ms
    ss_row "step storm: fetch p99" "$T/ss.on.p99" ms
    ss_row "step storm: one step's fetches, cache off" "$T/ss.off.time" s
    ss_row "step storm: DB reads per step, cache off" "$T/ss.off.reads" read
    ss_row "step storm: fetches/s, cache off" "$T/ss.off.rate" "req/s"
    ss_row "step storm: fetch p50, cache off" "$T/ss.off.p50" ms
    ss_row "step storm: fetch p99, cache off" "$T/ss.off.p99" ms
    on=$(median_range "$T/ss.on.rate") && off=$(median_range "$T/ss.off.rate") &&
        row_ref "step storm: fetches/s, cache on / cache off" \
            "$(awk -v a="${on%% *}" -v b="${off%% *}" 'BEGIN { print a / b }')" ratio \
            "of the medians, ${on%% *} / ${off%% *}"
    api_at "$BROKER_URL" stepstorm-release
    stop_pids "$NOCACHE_PID"
    return 0
}

scenario stepstorm steal

# ---- fullmachine: a full-machine job's start and end, as its nodes drive them
#
# A job of 11,136 nodes (nid[000001-011136], as the other scenarios'),
# driven as the nodes' agents drive it: each node a client of its own (its
# own connection, closed after its last request, and its own node token;
# bench_api fullmachine), 256 at a time, against the broker as configured
# above and its PostgreSQL (fsync on).  Each round does four runs, in an
# order that rotates from round to round:
#   - job, batched, on that broker: the job is reserved with a lease
#     (untimed; presumed: every node holds until it reports destroyed);
#     start: every node GETs it once, the worst case of a job start with a
#     lease (what a node of a job with hardware collectives asks for; a
#     start without them makes no request at all); then the job is
#     released (its VNIs quarantined); end: every node reports destroyed,
#     the last report ending the quarantine (checked: the reservation is
#     released after);
#   - job, one per transaction: the same against a second broker on the
#     same database with database.report_group_max = 1, where each report
#     is written alone on a request worker (the path before report groups):
#     today's start (GET, creating, created per node), the release, the
#     same end;
#   - the same two for one step of a job of those nodes (step routes; the
#     step released instead of the job).
# Rows, median and range over the rounds: each batched start (target <=
# 1 s) and end (<= 2 s) beside its comparison, the ratio of the medians,
# and the transactions a batched end used (the broker's report groups,
# /metrics).  The round lines give the groups' mean size beside.
# The batched runs reserve with "lease": true: the reservation is
# presumed (every node of the node list holds until it reports destroyed,
# docs/node-path.md), so no node reports at its start, and the end waits
# on every node.
FM_NODES="nid[000001-011136]"
FM_START_ROW="fullmachine: job start, lease (a GET per node)"
FM_END_ROW="fullmachine: job end, destroyed until released"
FM_SSTART_ROW="fullmachine: step start, lease (a GET per node)"
FM_SEND_ROW="fullmachine: step end, destroyed until released"

fullmachine_not_run () {
    row_not_run "$FM_START_ROW" s "<=" 1 "$1"
    row_not_run "$FM_END_ROW" s "<=" 2 "$1"
    row_not_run "$FM_SSTART_ROW" s "<=" 1 "$1"
    row_not_run "$FM_SEND_ROW" s "<=" 2 "$1"
}

# fm_req METHOD URL PATH [BODY]: one request as the scheduler; prints the
# status, the body in $T/fm.body.
fm_req () {
    curl -s -o "$T/fm.body" -w '%{http_code}' --max-time 60 -X "$1" \
        -H @"$T/auth.header" ${4:+-H 'Content-Type: application/json' -d "$4"} \
        "$2$3"
}

# fm_nodes URL MODE JOB STEP RES: every node of JOB (or of its step STEP,
# when not "") does MODE (bench_api fullmachine); sets fm_fig, the run's
# seconds ("" when a request failed), its output in $T/fm.out.
fm_nodes () {
    bench_out "$T/fm.out" "$1" fullmachine -m "$2" -x "$3" ${4:+-s "$4"} -i "$5"
    fm_fig=$(row_of "$T/fm.out" "fullmachine:")
    [ -n "$fm_fig" ] || grep '^#' "$T/fm.out" | head -n 6
}

# fm_groups URL: "GROUPS REPORTS" of URL's report groups, from /metrics.
fm_groups () {
    curl -s "$1/metrics" | awk '
        $1 == "vnib_db_groups_total{op=\"report\"}" { g = $2 }
        $1 == "vnib_db_group_requests_total{op=\"report\"}" { r = $2 }
        END { print g + 0, r + 0 }'
}

# fm_run WHICH ROUND: one run, WHICH = job-batched, job-single,
# step-batched or step-single; appends its start and end seconds to
# $T/fm.WHICH.start and .end (nothing for a failed one), and for a batched
# end its transactions to $T/fm.WHICH.groups; describes it in r_WHICH.
fm_run () {
    case "$1" in
        *-batched) url=$BROKER_URL start=lease ;;
        *-single) url=$FMS_URL start=today ;;
    esac
    job=fm$2$1
    step=""
    fm_s=? fm_e=? fm_g=""
    lease=""
    [ "$start" = lease ] && lease=',"lease":true'
    code=$(fm_req POST "$url" /v1/reservations \
        "{\"job_id\":\"$job\",\"uid\":1000,\"user\":\"bench\",\"nodes\":\"$FM_NODES\",\"vni_count\":1$lease}")
    case "$code" in 200 | 201) ;; *)
        eval "r_$(echo "$1" | tr - _)=\"reserve answered $code\""
        return ;;
    esac
    key=$job
    case "$1" in step-*)
        step=1
        key="$job#$step"
        code=$(fm_req PUT "$url" "/v1/reservations/$job/steps/$step" \
            "{\"nodes\":\"$FM_NODES\",\"vni_count\":1$lease}")
        case "$code" in 200 | 201) ;; *)
            eval "r_$(echo "$1" | tr - _)=\"step reserve answered $code\""
            return ;;
        esac ;;
    esac
    res=$(psql_q "SELECT id FROM reservations WHERE job_id = '$key' AND state = 'active'")
    fm_nodes "$url" "$start" "$job" "$step" "$res"
    fm_s=${fm_fig:-?}
    if [ -n "$step" ]; then
        code=$(fm_req DELETE "$url" "/v1/reservations/$job/steps/$step")
    else
        code=$(fm_req DELETE "$url" "/v1/reservations/$job")
    fi
    g0=$(fm_groups "$url")
    fm_nodes "$url" end "$job" "$step" "$res"
    g1=$(fm_groups "$url")
    state=$(psql_q "SELECT state FROM reservations WHERE id = $res")
    if [ "$state" = released ]; then
        fm_e=${fm_fig:-?}
    else
        echo "#   fullmachine $1: reservation $res is $state after the end (release answered $code)"
    fi
    [ -n "$step" ] && fm_req DELETE "$url" "/v1/reservations/$job" >/dev/null
    fm_g=$(echo "$g0 $g1" | awk '{ g = $3 - $1; r = $4 - $2
        if (g > 0) printf "%d %.1f", g, r / g }')
    [ "$fm_s" != "?" ] && echo "$fm_s" >>"$T/fm.$1.start"
    [ "$fm_e" != "?" ] && echo "$fm_e" >>"$T/fm.$1.end"
    case "$1" in *-batched)
        [ "$fm_e" != "?" ] && [ -n "$fm_g" ] && echo "${fm_g%% *}" >>"$T/fm.$1.groups" ;;
    esac
    eval "r_$(echo "$1" | tr - _)=\"start $fm_s s, end $fm_e s${fm_g:+ in ${fm_g%% *} transactions of ${fm_g#* } reports}\""
}

fm_round () {
    echo "#   round $1 ($2): job batched: $r_job_batched; job one per transaction: $r_job_single;" \
        "step batched: $r_step_batched; step one per transaction: $r_step_single"
}

# fm_rows WHAT ROW-START ROW-END: the rows of job or step runs.
fm_rows () {
    n="median of $ROUNDS"
    ss_row "$2" "$T/fm.$1-batched.start" s "<=" 1
    ss_row "fullmachine: $1 start today (GET, creating, created)" \
        "$T/fm.$1-single.start" s
    ss_row "$3" "$T/fm.$1-batched.end" s "<=" 2
    ss_row "fullmachine: $1 end, one report per transaction" \
        "$T/fm.$1-single.end" s
    ss_row "fullmachine: $1 end, transactions (report groups)" \
        "$T/fm.$1-batched.groups" count
    for fm_w in start end; do
        a=$(median_range "$T/fm.$1-batched.$fm_w") &&
            b=$(median_range "$T/fm.$1-single.$fm_w") &&
            row_ref "fullmachine: $1 $fm_w, batched / comparison" \
                "$(awk -v a="${a%% *}" -v b="${b%% *}" 'BEGIN { print a / b }')" ratio \
                "of the medians, ${a%% *} / ${b%% *} s"
    done
}

fullmachine_scenario () {
    why=""
    saved_port=$PORT
    PORT=$("$BENCH_API" freeport) || { why="no free port"; return 1; }
    bench_config "$T/fms.toml" 1
    PORT=$saved_port
    sed -i 's/^pool_size = .*/&\nreport_group_max = 1/' "$T/fms.toml"
    "$VNIBROKERD" -c "$T/fms.toml" >"$T/fms.log" 2>&1 &
    FMS_PID=$!
    track "$FMS_PID"
    FMS_URL=http://127.0.0.1:$(sed -n 's/^port = //p' "$T/fms.toml")
    wait_for 10 curl -sf -o /dev/null "$FMS_URL/healthz" || {
        why="the one-report-per-transaction broker does not start: $(grep -m1 . "$T/fms.log" | cut -c1-60)"
        return 1
    }
    empty_files "$T/fm" job-batched.start job-batched.end job-batched.groups \
        job-single.start job-single.end step-batched.start step-batched.end \
        step-batched.groups step-single.start step-single.end
    rounds fm_run fm_round job-batched job-single step-batched step-single
    fm_rows job "$FM_START_ROW" "$FM_END_ROW"
    fm_rows step "$FM_SSTART_ROW" "$FM_SEND_ROW"
    echo "#   a job start without hardware collectives makes no request to the broker: with a lease, what a node needs travels with the launch (docs/node-path.md)"
    stop_pids "$FMS_PID"
    return 0
}

scenario fullmachine steal

# ---- the FM release-queue drain --------------------------------------------
#
# fmsim (no auth) and a second broker on the same database with [hwcoll]
# enabled.  10,000 jobs are reserved with hardware collectives through it;
# it is stopped and the jobs are released through the first broker, which
# has no hwcoll workers, so all 10,000 FM releases wait in fm_queue with
# no failed attempt (an FM outage instead would leave the workers in a
# back-off pause of up to 30 s and the probed operations leased for
# seconds, which the drain would then measure).  fmsim gets 5 ms of added
# latency and the hwcoll broker is started again: the clock runs from its
# launch until fm_queue is empty (polled every 100 ms, at most 120 s),
# while an open-loop reserve load with "hwcoll":"off" (no FM work) runs
# against the same broker until the queue is empty.

DRAIN_ROW="fm queue drain: 10,000 releases at 5 ms FM latency"
DRAIN_N=10000
DRAIN_BOUND=120

drain_row () { # FIGURE MET-OR-WHY
    printf '%-52s %12.3f %-6s %s %10.3f  %s\n' "$DRAIN_ROW" "$1" "rel/s" ">=" 1000 "$2"
}

fm_fault () {
    curl -s -o /dev/null --max-time 5 -X POST -d "$1" "$FM_ADMIN/fmsim/faults"
}

drain_broker_start () {
    "$VNIBROKERD" -c "$T/drain.toml" >>"$DRAIN_LOG" 2>&1 &
    DRAIN_PID=$!
    track "$DRAIN_PID"
    wait_for 10 curl -sf -o /dev/null "$DRAIN_URL/healthz" && return 0
    stop_pids "$DRAIN_PID"
    return 1
}

drain_broker_stop () {
    stop_pids "$DRAIN_PID"
}

# sim_start NAME: start fmsim on free ports, its output in $T/NAME.out
# and $T/NAME.log; sets SIM_PID, SIM_URL and SIM_ADMIN, or why.
sim_start () {
    "$BUILD/fmsim" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
        --log-level warning >"$T/$1.out" 2>"$T/$1.log" &
    SIM_PID=$!
    track "$SIM_PID"
    if ! wait_for 10 grep -q 'fmsim listening on' "$T/$1.out"; then
        sed 's/^/#   /' "$T/$1.log" | tail -n 5
        why="fmsim does not start"
        return 1
    fi
    SIM_URL=$(sed -n 's/^fmsim listening on \([^ ]*\) admin .*/\1/p' "$T/$1.out")
    SIM_ADMIN=$(sed -n 's/.* admin \(http[^ ]*\).*/\1/p' "$T/$1.out")
}

drain_scenario () {
    why=""
    sim_start fmsim || { FMSIM_PID=$SIM_PID; return 1; }
    FMSIM_PID=$SIM_PID
    FM_URL=$SIM_URL
    FM_ADMIN=$SIM_ADMIN
    rm -f "$T/fm.key"
    "$BENCH_API" nodekey "$T/fm.key" || { why="cannot make the token key"; return 1; }

    DRAIN_LOG=$T/drain-broker.log
    saved_port=$PORT
    started=0
    for _ in 1 2 3; do
        PORT=$("$BENCH_API" freeport) || break
        bench_config "$T/drain.toml" 1
        cat >>"$T/drain.toml" <<EOF

[cluster]
name = "bench"

[hwcoll]
enabled = true
fm_url = "$FM_URL"
auth = "none"
min_nodes = 1
addrs_per_job = 4
token_key_file = "$T/fm.key"
fm_concurrency = $FM_CONCURRENCY
EOF
        DRAIN_URL=http://127.0.0.1:$PORT
        if drain_broker_start; then
            started=1
            break
        fi
    done
    PORT=$saved_port
    if [ "$started" != 1 ]; then
        sed 's/^/#   /' "$DRAIN_LOG" | tail -n 5
        why="the hwcoll broker does not start"
        return 1
    fi

    # 10,000 jobs with FM reservations (fmsim without latency)
    api_at "$DRAIN_URL" drain-fill -n "$DRAIN_N" -c 16
    held=$(psql_q "SELECT count(*) FROM reservations WHERE job_id ~ '^d[0-9]+\$' AND state = 'active' AND hwcoll_state = 'reserved'")
    drain_broker_stop
    if [ "$held" != "$DRAIN_N" ]; then
        why="only ${held:-?} of $DRAIN_N jobs hold an FM reservation"
        return 1
    fi

    # released through the broker without hwcoll workers: all queue
    api_at "$BROKER_URL" drain-release -n "$DRAIN_N" -c 16
    queued=$(psql_q "SELECT count(*) FROM fm_queue")
    echo "#   fm_queue holds $queued operations"
    if [ "$queued" != "$DRAIN_N" ]; then
        why="$queued FM releases queued, not $DRAIN_N"
        return 1
    fi

    fm_fault '{"outage":"none","latency_ms":5}'
    rm -f "$T/drain.stop"
    t0=$(now_ms)
    if ! drain_broker_start; then
        why="the hwcoll broker does not restart"
        return 1
    fi
    t_up=$(now_ms)
    timeout -k 5 300 "$BENCH_API" -u "$DRAIN_URL" -T "$T/sched.token" \
        -S "$T/drain.stop" -r 200 -d $((DRAIN_BOUND + 5)) drain-load \
        >"$T/drain-load.out" 2>&1 &
    load_pid=$!
    track "$load_pid"
    left=$DRAIN_N
    while :; do
        left=$(psql_q "SELECT count(*) FROM fm_queue") || left=""
        t1=$(now_ms)
        [ "$left" = 0 ] && break
        [ $((t1 - t0)) -ge $((DRAIN_BOUND * 1000)) ] && break
        sleep 0.1
    done
    : >"$T/drain.stop"
    case "$left" in '' | *[!0-9]*) left=$DRAIN_N ;; esac
    ms=$((t1 - t0))
    rate=$(awk "BEGIN { print ($DRAIN_N - $left) * 1000 / ($ms > 0 ? $ms : 1) }")
    if [ "$left" = 0 ]; then
        drain_row "$rate" "$(awk "BEGIN { print ($rate >= 1000) ? \"met\" : \"NOT MET\" }")"
    else
        drain_row "$rate" "NOT MET (not drained in $DRAIN_BOUND s: $left left)"
    fi
    wait "$load_pid" || {
        echo "#   bench_api drain-load failed (exit $?)"
        HARNESS_FAILED=1
    }
    cat "$T/drain-load.out"
    released=$(psql_q "SELECT count(*) FROM reservations WHERE job_id ~ '^d[0-9]+\$' AND hwcoll_state = 'released'")
    echo "#   drained $((DRAIN_N - left)) in $ms ms from the broker's launch" \
        "($((t1 - t_up)) ms from its first answer), fm_concurrency" \
        "$FM_CONCURRENCY, database pool $POOL; $released jobs hwcoll released"
    drain_broker_stop
    DRAIN_PID=""
    if [ -s "$DRAIN_LOG" ]; then
        echo "#   hwcoll broker warnings: $(wc -l <"$DRAIN_LOG") lines; the first:"
        head -n 3 "$DRAIN_LOG" | cut -c1-200 | sed 's/^/#   /'
    fi
    return 0
}

if wanted drain; then
    DRAIN_PID=""
    FMSIM_PID=""
    if [ "$api_ready" != 1 ]; then
        row_not_run "$DRAIN_ROW" "rel/s" ">=" 1000 "$why_not"
        row_not_run "reserve p99 during the drain" ms "<=" 20 "$why_not"
    elif ! drain_scenario; then
        row_not_run "$DRAIN_ROW" "rel/s" ">=" 1000 "$why"
        row_not_run "reserve p99 during the drain" ms "<=" 20 "$why"
    fi
    [ -n "$DRAIN_PID" ] && drain_broker_stop
    if [ -n "$FMSIM_PID" ]; then
        stop_pids "$FMSIM_PID"
    fi
fi

# ---- the node agent -----------------------------------------------------
#
# What every job start and end pays on a node: `prolog`, `env` and
# `epilog` of vnib-agent (non-sanitized) for one job on a 4-NIC simulated
# node against the local broker, timed as three real process runs, over
# AGENT_JOBS jobs (each reserved and released around the timing).

AGENT_ROW="agent prolog+env+epilog, 4-NIC sim node: p50"
AGENT_JOBS=${BENCH_AGENT_JOBS:-50}

agent_scenario () {
    a=$T/agentnode
    mkdir -p "$a"
    (umask 077 && node_token bn1 >"$a/token")
    cat >"$a/agent.toml" <<EOF
[broker]
url = "$BROKER_URL"
token_file = "$a/token"

[node]
state_dir = "$a/state"
spool_dir = "$a/spool"

[nic]
backend = "sim"
sim_dir = "$a/sim"
EOF
    "$BUILD/vnib-agent" --config "$a/agent.toml" sim-init --nics 4 >/dev/null ||
        return 1
    : >"$a/times"
    i=0
    while [ "$i" -lt "$AGENT_JOBS" ]; do
        i=$((i + 1))
        curl -s -o /dev/null --max-time 10 -H @"$T/auth.header" \
            -H 'Content-Type: application/json' \
            -d "{\"job_id\":\"ag$i\",\"uid\":1000,\"user\":\"bench\",\"nodes\":\"bn[1-2]\",\"vni_count\":1}" \
            "$BROKER_URL/v1/reservations"
        t0=$(date +%s%N)
        "$BUILD/vnib-agent" --config "$a/agent.toml" prolog --job "ag$i" --ncores 64 \
            >/dev/null 2>>"$a/err" &&
            "$BUILD/vnib-agent" --config "$a/agent.toml" env --job "ag$i" \
                >/dev/null 2>>"$a/err" &&
            "$BUILD/vnib-agent" --config "$a/agent.toml" epilog --job "ag$i" \
                >/dev/null 2>>"$a/err" || return 1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000)) >>"$a/times"
        curl -s -o /dev/null --max-time 10 -X DELETE -H @"$T/auth.header" \
            "$BROKER_URL/v1/reservations/ag$i"
    done
    sort -n "$a/times" | awk -v row="$AGENT_ROW" '
        { v[NR] = $1 / 1000 }
        END {
            p50 = v[int((NR + 1) / 2)]; p95 = v[int(NR * 0.95 + 0.5)]
            printf "%-52s %12.3f %-6s %s %10.3f  %s\n", row, p50, "ms", "<=", 50, (p50 <= 50) ? "met" : "NOT MET"
            sub(/p50$/, "p95", row)
            printf "%-52s %12.3f %-6s %s %10.3f  %s\n", row, p95, "ms", "<=", 50, (p95 <= 50) ? "met" : "NOT MET"
        }'
}

if wanted agent; then
    if [ "$api_ready" != 1 ]; then
        row_not_run "$AGENT_ROW" ms "<=" 50 "$why_not"
    elif ! agent_scenario; then
        row_not_run "$AGENT_ROW" ms "<=" 50 "agent failed: $(head -c 120 "$T/agentnode/err" 2>/dev/null)"
    fi
fi

# ---- contention -------------------------------------------------------------
#
# 16 clients reserving 3 VNIs each from a pool of 64 and releasing them at
# once (no node reports, so the VNIs are free again on release), for $SECS
# seconds, through the history client (tests/stress/history.c) in bench
# mode.  Its own database on the same PostgreSQL (the other scenarios'
# reservations would hold the pool's VNIs) and its own broker with the
# same threads and database pool as the other rows.  Rows: pairs/s and
# reserve p99 (for reference), and the 503s other than
# vni_pool_exhausted and the replies naming a deadlock, target 0 each;
# the history's invariants follow as "#" lines.

CONT_ROWS="contention: 503s (not vni_pool_exhausted)|count|<=|0
contention: replies naming a deadlock|count|<=|0"

contention_not_run () {
    printf '%s\n' "$CONT_ROWS" | while IFS='|' read -r n u o t; do
        row_not_run "$n" "$u" "$o" "$t" "$1"
    done
}

# ---- node fetches while the Fabric Manager is slow -------------------------
#
# fmsim answering every call after 2 s, a broker with [hwcoll] on it (the
# default hwcoll.request_concurrency), and 32 eligible reserves sent at
# once; meanwhile one node fetches its job 200 times, one request after
# another.  Row: the fetches' p99 (curl's time_total), target 5 ms: a slow
# FM must hold no request thread that node fetches need.

FMSLOW_ROW="node fetch p99, FM at 2 s, 32 eligible reserves"

# fm_broker_start NAME MIN_NODES ADDRS [EXTRA-HWCOLL-LINE]: fmsim and a
# broker with [hwcoll] on it (auth none), on a database of its own named
# NAME (so that one scenario's leftover FM work, deferred reserves or
# queued deletes, is never claimed by the next scenario's broker), files
# $T/NAME-*; sets fm_url, fm_admin, url, and the pids in FMB_SIM and
# FMB_PID (both tracked).  Returns 1 with why set when either does not
# start.
fm_broker_start () {
    FMB_SIM=""
    FMB_PID=""
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib "$1" 2>/dev/null ||
        [ "$(as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d "$1" -XAtq \
            -c 'SELECT 1' 2>/dev/null)" = 1 ] ||
        { why="cannot create database $1"; return 1; }
    sim_start "$1-sim" || { FMB_SIM=$SIM_PID; return 1; }
    FMB_SIM=$SIM_PID
    fm_url=$SIM_URL
    fm_admin=$SIM_ADMIN
    rm -f "$T/$1.key"
    "$BENCH_API" nodekey "$T/$1.key" || { why="cannot make the token key"; return 1; }
    saved_port=$PORT
    PORT=$("$BENCH_API" freeport) || { why="no free port"; return 1; }
    bench_config "$T/$1.toml" 1
    cat >>"$T/$1.toml" <<CONF

[cluster]
name = "$1"

[hwcoll]
enabled = true
fm_url = "$fm_url"
auth = "none"
min_nodes = $2
addrs_per_job = $3
token_key_file = "$T/$1.key"
${4:-}
CONF
    sed -i -e "s/dbname=vnibroker/dbname=$1/" "$T/$1.toml"
    url=http://127.0.0.1:$PORT
    PORT=$saved_port
    "$VNIBROKERD" -c "$T/$1.toml" --migrate >>"$T/$1-broker.log" 2>&1 || {
        why="migrating database $1 failed: $(tail -n 1 "$T/$1-broker.log" | cut -c1-100)"
        return 1
    }
    "$VNIBROKERD" -c "$T/$1.toml" >>"$T/$1-broker.log" 2>&1 &
    FMB_PID=$!
    track "$FMB_PID"
    wait_for 10 curl -sf -o /dev/null "$url/healthz" || {
        why="its broker does not start: $(tail -n 1 "$T/$1-broker.log" | cut -c1-100)"
        return 1
    }
}

fmslow_scenario () {
    why=""
    fm_broker_start fmslow 1 4 || { FMSLOW_SIM=$FMB_SIM; FMSLOW_PID=$FMB_PID; return 1; }
    FMSLOW_SIM=$FMB_SIM
    FMSLOW_PID=$FMB_PID
    sched=$(cat "$T/sched.token")
    curl -s -o /dev/null -H "Authorization: Bearer $sched" \
        -H 'Content-Type: application/json' \
        -d '{"job_id":"fs-node","uid":1,"user":"u","nodes":"fsn[1-4]","hwcoll":"off"}' \
        "$url/v1/reservations"
    ntok=$(node_token fsn1)
    curl -s -o /dev/null --max-time 5 -X POST -d '{"latency_ms":2000}' \
        "$fm_admin/fmsim/faults"
    seq 1 32 | xargs -P 32 -I{} curl -s -o /dev/null --max-time 30 \
        -H "Authorization: Bearer $sched" -H 'Content-Type: application/json' \
        -d '{"job_id":"fs{}","uid":1,"user":"u","nodes":"fsn[1-4]","hwcoll":"on"}' \
        "$url/v1/reservations" &
    burst=$!
    sleep 0.2
    for _ in $(seq 1 200); do
        curl -s -o /dev/null -w '%{time_total}\n' --max-time 10 \
            -H "Authorization: Bearer $ntok" "$url/v1/reservations/fs-node"
    done >"$T/fmslow.times"
    wait "$burst"
    p99=$(sort -n "$T/fmslow.times" | awk '{ v[NR] = $1 } END {
        i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; printf "%.3f", v[i] * 1000 }')
    printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$FMSLOW_ROW" "$p99" ms "<=" 5 \
        "$(awk "BEGIN { print ($p99 <= 5) ? \"met\" : \"NOT MET\" }")"
    deferred=$(curl -s "$url/metrics" | awk '/^vnib_hwcoll_deferred_total/ { print $2 }')
    echo "#   $(wc -l <"$T/fmslow.times") fetches; reserves deferred to the workers: ${deferred:-?}"
    return 0
}

if wanted fmslow; then
    FMSLOW_PID=""
    FMSLOW_SIM=""
    if [ "$api_ready" != 1 ]; then
        row_not_run "$FMSLOW_ROW" ms "<=" 5 "$why_not"
    elif ! fmslow_scenario; then
        row_not_run "$FMSLOW_ROW" ms "<=" 5 "$why"
    fi
    # shellcheck disable=SC2086
    stop_pids $FMSLOW_PID $FMSLOW_SIM
fi

# ---- job starts with hardware collectives ----------------------------------
#
# fmsim and a broker with [hwcoll] on it, as `make run` configures it
# (min_nodes = 2, the default hwcoll.request_concurrency).  BENCH_ROUNDS
# alternated rounds of reserve+release pairs at POOL clients on n[1-4]
# with "hwcoll":"off" (the job is not eligible: no Fabric Manager call)
# and "hwcoll":"on" (eligible: a reservation in the FM per job, deleted
# through the release queue), fmsim answering at once.  Rows: both medians
# and their ratio (target >= 0.5: an eligible job start costs at most
# twice a plain one).  Then fmsim answers after 20 ms and eligible
# reserves arrive at 200/s (open loop): their p99 (target 30 ms; past
# hwcoll.request_concurrency calls at once a reserve answers "pending" at
# once and a worker completes it, which the "#" line counts).

HW_RATIO_ROW="hwcoll pairs/s / plain pairs/s, same run"
HW_P99_ROW="eligible reserve p99 at 200/s, FM at 20 ms"

hwcoll_not_run () {
    row_not_run "$HW_RATIO_ROW" ratio ">=" 0.5 "$1"
    row_not_run "$HW_P99_ROW" ms "<=" 30 "$1"
}

# psql_hw SQL: one value from the hw scenario's database.
psql_hw () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d hw -XAtq -v ON_ERROR_STOP=1 -c "$1"
}

hwcoll_scenario () {
    why=""
    rc_line=""
    [ -n "${BENCH_HW_REQUEST_CONCURRENCY:-}" ] &&
        rc_line="request_concurrency = $BENCH_HW_REQUEST_CONCURRENCY"
    fm_broker_start hw 2 8 "$rc_line" || { HW_SIM=$FMB_SIM; HW_PID=$FMB_PID; return 1; }
    HW_SIM=$FMB_SIM
    HW_PID=$FMB_PID
    empty_files "$T/hw" plain on ratio
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        r=$((r + 1))
        if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
        for mode in $order; do
            bench_out "$T/hw-pairs.out" "$url" pairs -c "$POOL" -d "$SECS" \
                -H "$mode" -x "hw$mode$r-"
            f=$(row_of "$T/hw-pairs.out" "reserve+release pairs/s")
            eval "fig_$mode=\${f:-}"
        done
        echo "#   round $r ($order): plain ${fig_off:-?} pair/s, hwcoll ${fig_on:-?} pair/s"
        [ -n "$fig_off" ] && echo "$fig_off" >>"$T/hw.plain"
        [ -n "$fig_on" ] && echo "$fig_on" >>"$T/hw.on"
        [ -n "$fig_off" ] && [ -n "$fig_on" ] &&
            awk "BEGIN { print $fig_on / $fig_off }" >>"$T/hw.ratio"
    done
    plain=$(median_range "$T/hw.plain")
    on=$(median_range "$T/hw.on")
    ratios=$(median_range "$T/hw.ratio")
    if [ -n "$plain" ] && [ -n "$on" ] && [ -n "$ratios" ]; then
        set -- $plain
        pm=$1
        row_ref "plain pairs/s, 8 clients (hwcoll broker)" "$1" pair/s \
            "median of $ROUNDS, range $2-$3"
        set -- $on
        om=$1
        row_ref "hwcoll pairs/s, 8 clients, FM at 0 ms" "$1" pair/s \
            "median of $ROUNDS, range $2-$3"
        set -- $ratios
        row_cmp "$HW_RATIO_ROW" "$(awk "BEGIN { print $om / $pm }")" ratio ">=" 0.5 \
            "of the medians; per-round range $2-$3"
    else
        row_not_run "$HW_RATIO_ROW" ratio ">=" 0.5 "a pairs run failed"
    fi
    held=$(psql_hw "SELECT count(*) FROM reservations WHERE job_id LIKE 'hwon%' AND hwcoll_state IN ('reserved', 'released')")
    echo "#   hwcoll jobs that reached the FM: ${held:-?}"

    # The pairs' FM deletes drain first (fmsim still answering at once),
    # so that the next run measures job starts, not the drain beside.
    i=0
    while [ "$i" -lt 600 ]; do
        [ "$(psql_hw "SELECT count(*) FROM fm_queue")" = 0 ] && break
        sleep 0.1
        i=$((i + 1))
    done
    echo "#   fm_queue drained in $((i / 10)) s: $(psql_hw "SELECT count(*) FROM fm_queue") left"
    curl -s -o /dev/null --max-time 5 -X POST -d '{"latency_ms":20}' \
        "$fm_admin/fmsim/faults"
    d0=$(curl -s "$url/metrics" | awk '/^vnib_hwcoll_deferred_total/ { print $2 }')
    bench_out "$T/hw-ol.out" "$url" openloop -r 200 -d "$SECS" -H on -x hwol
    d1=$(curl -s "$url/metrics" | awk '/^vnib_hwcoll_deferred_total/ { print $2 }')
    p99=$(row_of "$T/hw-ol.out" "reserve p99 latency at")
    if [ -n "$p99" ]; then
        row_cmp "$HW_P99_ROW" "$p99" ms "<=" 30
    else
        row_not_run "$HW_P99_ROW" ms "<=" 30 "the open-loop run failed"
    fi
    grep '^#   reserve ' "$T/hw-ol.out"
    echo "#   answered pending and completed by the workers (request_concurrency reached): $((${d1:-0} - ${d0:-0}))"
    return 0
}

if wanted hwcoll; then
    HW_PID=""
    HW_SIM=""
    scenario hwcoll steal
    # shellcheck disable=SC2086
    stop_pids $HW_PID $HW_SIM
fi

# ---- slow and unauthenticated clients ---------------------------------------

# A well-behaved client's reserve p99 (open loop, 200/s, from 127.0.0.1)
# alone and while SLOW_CONNS connections from one other address
# (127.0.0.9) trickle their headers, a byte every 10 s, and reconnect on
# their next round when closed or refused: the attack of the front-door
# issue (target: within 2x of the quiet figure; the runs alternate, see
# SLOW_ROUNDS).  One more run with the attacker reconnecting every second
# (a connection flood of ~4,000 connections a second, the per-address
# limit refusing nearly all) is printed for reference: refusing costs the
# broker CPU that only a firewall rate limit can spare it.  Then the
# broker's largest VmRSS while UPLOADS clients without a valid token each
# send ~1 MiB (target: 64 MiB).
SLOW_PY=$TOP/tests/bench/slowclients.py
SLOW_CONNS=${BENCH_SLOW_CONNS:-4200}
UPLOADS=${BENCH_UPLOADS:-2000}
SLOW_ROW="reserve p99 at 200/s, $SLOW_CONNS slow conns from 1 addr"
# The many-address attack (issue 31): 64 addresses, standing in for the
# nodes of one user's job, each holding MANY_PER_ADDR slow connections (a
# header byte every 2 s; one the broker closes comes back a second later,
# slowloris's next round): 1,536 by default, more than the bench broker's
# max_connections (1024), so that the budget displaces and refuses (the
# row's target: within 2x of the quiet figure; the load generator's
# address, the scheduler's, is in server.priority_addresses as the guide
# says, so that its 64 connections, opened at once, are not taken for an
# attack's).  Once more with each
# closed connection reopened at once, for reference: then the attack is
# a connection flood from 64 addresses, as fast as one Python process on
# this machine can connect, and what it costs the broker per connection
# is printed beside the 1-address flood's.
MANY_ADDRS=127.0.0.10-73
MANY_PER_ADDR=${BENCH_MANY_PER_ADDR:-24}
MANY_ROW="reserve p99 at 200/s, slow conns from 64 addrs"
RSS_ROW="memory: VmRSS, $UPLOADS unauthenticated 1 MiB POSTs"

# per_conn_us TICKS CONNS: the broker's CPU time per attack connection, in
# microseconds (the run is measured from 3 s after the attack began, so
# this overstates it a little).
per_conn_us () {
    awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { if (n > 0) printf "%.0f", t * 1e6 / hz / n; else print "?" }'
}

# cpu_ticks PID: the process's user+system CPU time so far, in clock ticks.
cpu_ticks () {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# openloop_p99: one open-loop run at 200/s; prints its p99 in ms.
openloop_p99 () {
    api_at "$BROKER_URL" openloop -r 200 -d "$SECS" >"$T/openloop.out"
    grep '^reserve p99 latency at' "$T/openloop.out" | cut -c54-65 | tr -d ' '
}

# The quiet and loud runs alternate, SLOW_ROUNDS times each; the row
# compares their medians.  The attacker runs at the lowest CPU priority:
# on a 2-core machine its own Python loop (thousands of reconnects a
# second) would otherwise take the CPU the broker and PostgreSQL need,
# and the row would measure the machine, not the broker.  The broker's
# own CPU time per run is printed beside, so that what the attack costs
# the broker stays visible.
SLOW_ROUNDS=${BENCH_SLOW_ROUNDS:-3}

# timed_p99: one open-loop run (openloop_p99); sets P99, and TICKS to the
# broker's CPU time during it.
timed_p99 () {
    tp_c0=$(cpu_ticks "$BROKER_PID")
    P99=$(openloop_p99)
    TICKS=$(($(cpu_ticks "$BROKER_PID") - tp_c0))
}

# trickle_p99 OUT NOFILE ARGS...: timed_p99 while slowclients.py trickle
# ARGS (see its usage) attacks the broker, from 3 s after it starts, when
# its connections have piled up; its output goes to OUT.  NOFILE: the
# descriptor limit it needs (it does not run without), or - for ours.
trickle_p99 () {
    tr_out=$1
    tr_nofile=$2
    shift 2
    (
        [ "$tr_nofile" = - ] || ulimit -n "$tr_nofile" || exit
        exec nice -n 19 python3 "$SLOW_PY" trickle "$PORT" "$@"
    ) >"$tr_out" 2>&1 &
    trickle_pid=$!
    track "$trickle_pid"
    sleep 3
    timed_p99
    wait "$trickle_pid"
}

# flood_ref NAME SOURCE COUNT INTERVAL REOPEN: one open-loop run while
# slowclients.py trickles from SOURCE (see its usage), printed as a
# reference row with the broker's CPU time per attack connection.
flood_ref () {
    trickle_p99 "$T/flood.out" 8192 "$2" "$3" $((SECS + 6)) "$4" "$5"
    fn=$(cat "$T/flood.out")
    printf '%-52s %12.3f %-6s %2s %10s  %s\n' "$1" "${P99:-0}" ms "" - \
        "ref ($fn connections, broker CPU $TICKS ticks, $(per_conn_us "$TICKS" "$fn") us each)"
}

slow_scenario () {
    empty_files "$T/slow" quiet loud many
    r=0
    while [ "$r" -lt "$SLOW_ROUNDS" ]; do
        r=$((r + 1))
        timed_p99
        q=$P99 qt=$TICKS
        trickle_p99 "$T/trickle.out" - 127.0.0.9 "$SLOW_CONNS" $((SECS + 6))
        l=$P99 lt=$TICKS
        trickle_p99 "$T/many.out" 8192 "$MANY_ADDRS" "$MANY_PER_ADDR" \
            $((SECS + 6)) 2 1
        m=$P99 mt=$TICKS
        [ -n "$q" ] && echo "$q" >>"$T/slow.quiet"
        [ -n "$l" ] && echo "$l" >>"$T/slow.loud"
        [ -n "$m" ] && echo "$m" >>"$T/slow.many"
        echo "#   round $r: quiet p99 ${q:-?} ms (broker CPU $qt ticks)," \
            "under attack ${l:-?} ms (broker CPU $lt ticks);" \
            "$(cat "$T/trickle.out") attack connections opened;" \
            "64 addresses ${m:-?} ms (broker CPU $mt ticks," \
            "$(cat "$T/many.out") connections opened)"
    done
    flood_ref "reserve p99 at 200/s, 1 s reconnect flood (ref)" \
        127.0.0.9 "$SLOW_CONNS" 1 1
    flood_ref "reserve p99 at 200/s, 64-addr reopen-at-once flood (ref)" \
        "$MANY_ADDRS" "$MANY_PER_ADDR" 1 0
    quiet=$(median_range "$T/slow.quiet")
    loud=$(median_range "$T/slow.loud")
    if [ -n "$quiet" ] && [ -n "$loud" ]; then
        set -- $quiet
        qm=$1
        printf '%-52s %12.3f %-6s %2s %10s  %s\n' \
            "reserve p99 at 200/s, quiet (reference)" "$qm" ms "" - \
            "ref (median of $SLOW_ROUNDS, range $2-$3)"
        set -- $loud
        target=$(awk "BEGIN { print 2 * $qm }")
        printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$SLOW_ROW" "$1" ms "<=" \
            "$target" "$(awk "BEGIN { print ($1 <= $target) ? \"met\" : \"NOT MET\" }") (median of $SLOW_ROUNDS, range $2-$3)"
    else
        row_not_run "$SLOW_ROW" ms "<=" 0 "open loop run failed"
    fi
    many=$(median_range "$T/slow.many")
    if [ -n "$quiet" ] && [ -n "$many" ]; then
        set -- $quiet
        target=$(awk "BEGIN { print 2 * $1 }")
        set -- $many
        printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$MANY_ROW" "$1" ms "<=" \
            "$target" "$(awk "BEGIN { print ($1 <= $target) ? \"met\" : \"NOT MET\" }") (median of $SLOW_ROUNDS, range $2-$3; ${MANY_PER_ADDR} each)"
    else
        row_not_run "$MANY_ROW" ms "<=" 0 "open loop run failed"
    fi
    rss=$(python3 "$SLOW_PY" upload "$PORT" 127.0.0.9 "$UPLOADS" "$BROKER_PID")
    if [ -n "$rss" ]; then
        printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$RSS_ROW" "$rss" MiB "<=" 64 \
            "$(awk "BEGIN { print ($rss <= 64) ? \"met\" : \"NOT MET\" }")"
    else
        row_not_run "$RSS_ROW" MiB "<=" 64 "upload helper failed"
    fi
}

if wanted slowclients; then
    if [ "$api_ready" = 1 ]; then
        slow_scenario
    else
        row_not_run "$SLOW_ROW" ms "<=" 0 "$why_not"
        row_not_run "$MANY_ROW" ms "<=" 0 "$why_not"
        row_not_run "$RSS_ROW" MiB "<=" 64 "$why_not"
    fi
fi

contention_scenario () {
    why=""
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib contention || {
        why="cannot create its database"
        return 1
    }
    umask 077
    "$BENCH_API" token "$T/contention.admin" || { why="no admin token"; return 1; }
    {
        cat "$T/tokens"
        echo "admin bench-admin $(sha256sum <"$T/contention.admin" | cut -d' ' -f1)"
    } >"$T/contention.tokens"
    umask 022
    saved_port=$PORT
    started=0
    for _ in 1 2 3; do
        PORT=$("$BENCH_API" freeport) || break
        bench_config "$T/contention.toml" 1
        sed -i -e 's/dbname=vnibroker/dbname=contention/' \
            -e 's/^pool = "1024-65535"/pool = "2000-2063"/' \
            -e "s|^tokens_file = .*|tokens_file = \"$T/contention.tokens\"|" \
            "$T/contention.toml"
        "$VNIBROKERD" -c "$T/contention.toml" --migrate >>"$T/migrate.log" 2>&1 || {
            why="migration failed"
            break
        }
        "$VNIBROKERD" -c "$T/contention.toml" >>"$T/contention-broker.log" 2>&1 &
        CONT_PID=$!
        track "$CONT_PID"
        CONT_URL=http://127.0.0.1:$PORT
        if wait_for 10 curl -sf -o /dev/null "$CONT_URL/healthz"; then
            started=1
            break
        fi
        stop_pids "$CONT_PID"
    done
    PORT=$saved_port
    if [ "$started" != 1 ]; then
        why=${why:-"its broker does not start"}
        return 1
    fi
    dl0=$(grep -c 'deadlock detected' "$T/pglog/pg.log")
    timeout -k 5 300 "$BUILD/tests/stress/history" --bench --url "$CONT_URL" \
        --threads 16 --vni-count 3 --seconds "$SECS" --no-reports --settle 0.5 \
        --sched-token-file "$T/sched.token" \
        --admin-token-file "$T/contention.admin" >"$T/contention.out" 2>&1 &
    hist_pid=$!
    track "$hist_pid"
    wait "$hist_pid" || {
        echo "#   history --bench failed (exit $?)"
        HARNESS_FAILED=1
    }
    cat "$T/contention.out"
    dl1=$(grep -c 'deadlock detected' "$T/pglog/pg.log")
    echo "#   PostgreSQL logged $((dl1 - dl0)) deadlocks during the run"
    stop_pids "$CONT_PID"
    return 0
}

scenario contention

# ---- history: costs that must not grow with the database -------------------
#
# Two more databases on the same PostgreSQL, each with its own broker
# (same threads, pool and configuration as the main one): "fresh", empty,
# and "history", loaded by tests/bench/history.sql with HIST_RELEASED
# released reservations (their events, ranges) and HIST_QUARANTINED
# quarantined ones holding a VNI each; both then VACUUM ANALYZE.  Neither
# broker purges while they are compared (retain_days = 0).  ROUNDS rounds
# alternate, in a rotating order, an open-loop reserve run at 1000/s and a
# pairs run at POOL clients on each.  Rows, from the medians:
#   - reserve p99 at 1000/s with the history, target 1.5x the fresh
#     broker's (its median is the reference row above it);
#   - pairs/s with the history, target 0.8x the fresh broker's;
#   - bytes of tables and indexes (pg_total_relation_size of every table
#     of the schema) added per pair, on the fresh database (reference; per
#     table as "#" lines);
#   - then purge: the history broker restarts with vni.retain_days = 30
#     (the whole loaded history is older) and vni.sweep_interval_s = 1, so
#     its sweeper purges up to 1,000 reservations a second (PURGE_BATCH in
#     server/bg/sweeper.c), while a steady stream of pairs (2 clients) runs
#     for HIST_PURGE_SECS.  Every HIST_INTERVAL seconds the database is
#     vacuumed (plain VACUUM, which autovacuum would run too, later: its
#     default thresholds are 20% of a table's rows and a minute's nap) and
#     its size taken.  Row: the size growth over the last two intervals
#     per pair made in them, as a fraction of the bytes a pair adds
#     without purge (above), target <= 0.25: the purge frees space as fast
#     as the stream takes it, so the database stays bounded.
HIST_RELEASED=${BENCH_HIST_RELEASED:-1000000}
HIST_QUARANTINED=${BENCH_HIST_QUARANTINED:-20000}
HIST_PURGE_SECS=${BENCH_HIST_PURGE_SECS:-60}
HIST_INTERVAL=${BENCH_HIST_INTERVAL:-10}
HIST_OL_ROW="reserve p99 at 1000/s, 1M reservations in history"
HIST_PAIRS_ROW="reserve+release pairs/s, 1M reservations in history"
HIST_BYTES_ROW="table+index bytes per reserve+release pair"
HIST_PURGE_ROW="db growth per pair with purge / without"

history_not_run () {
    row_not_run "$HIST_OL_ROW" ms "<=" 0 "$1"
    row_not_run "$HIST_PAIRS_ROW" "pair/s" ">=" 0 "$1"
    row_not_run "$HIST_PURGE_ROW" ratio "<=" 0.25 "$1"
}

# hq DATABASE SQL: one psql query.
hq () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d "$1" -XAtq \
        -v ON_ERROR_STOP=1 -c "$2"
}

# The tables of the schema and their total sizes (heap, indexes, TOAST).
SIZES_SQL="SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1"

# db_bytes DATABASE: the sum of SIZES_SQL.
db_bytes () {
    hq "$1" "SELECT sum(s) FROM ($SIZES_SQL) t(n, s)" 2>/dev/null || echo ""
}

# hist_broker NAME DB RETAIN SWEEP: start a broker on database DB; sets
# HB_URL and HB_PID.  HB_TOKENS, if set, is its tokens file.
hist_broker () {
    saved_port=$PORT
    ok=1
    for _ in 1 2 3; do
        ok=1
        PORT=$("$BENCH_API" freeport) || break
        bench_config "$T/$1.toml" 1
        sed -i -e "s/dbname=vnibroker/dbname=$2/" \
            -e "s|^tokens_file = .*|tokens_file = \"${HB_TOKENS:-$T/tokens}\"|" "$T/$1.toml"
        printf 'retain_days = %s\nsweep_interval_s = %s\n' "$3" "$4" >>"$T/$1.toml"
        "$VNIBROKERD" -c "$T/$1.toml" >>"$T/$1-broker.log" 2>&1 &
        HB_PID=$!
        track "$HB_PID"
        HB_URL=http://127.0.0.1:$PORT
        wait_for 30 curl -sf -o /dev/null "$HB_URL/healthz" && break
        ok=0
        stop_pids "$HB_PID"
    done
    PORT=$saved_port
    return $((1 - ok))
}

# hist_broker_as VAR NAME DB: hist_broker NAME DB without purge, with
# VAR_URL and VAR_PID set; sets why when it does not start.
hist_broker_as () {
    hist_broker "$2" "$3" 0 10 || {
        why="the $2 broker does not start"
        return 1
    }
    eval "$1_URL=\$HB_URL $1_PID=\$HB_PID"
}

# hist_round ROUND ORDER: the round's figures.
hist_round () {
    echo "#   round $1 ($2): open-loop p99 fresh $r_fresh_ol ms," \
        "history $r_hist_ol ms; pairs/s fresh $r_fresh_pairs, history $r_hist_pairs"
}

# hist_run WHAT ROUND: one run of the history comparison.
hist_run () {
    case "$1" in
        fresh-ol | hist-ol)
            url=$FRESH_URL
            [ "$1" = hist-ol ] && url=$HIST_URL
            bench_out "$T/h.out" "$url" openloop -r 1000 -d "$SECS"
            f=$(row_of "$T/h.out" "reserve p99 latency at 1000/s")
            ;;
        fresh-pairs)
            b0=$(db_bytes fresh)
            hq fresh "$SIZES_SQL" >"$T/h.sizes0"
            n0=$(hq fresh "SELECT count(*) FROM reservations")
            bench_out "$T/h.out" "$FRESH_URL" pairs -c "$POOL" -d "$SECS" -x "hp$2-"
            f=$(row_of "$T/h.out" "reserve+release pairs/s, $POOL clients")
            b1=$(db_bytes fresh)
            hq fresh "$SIZES_SQL" >"$T/h.sizes1"
            n1=$(hq fresh "SELECT count(*) FROM reservations")
            if [ -n "$b0" ] && [ -n "$b1" ] && [ "$n1" -gt "$n0" ] 2>/dev/null; then
                echo "$(((b1 - b0) / (n1 - n0)))" >>"$T/h.bytes"
                # per table: name and bytes per pair, summed over the runs
                LC_ALL=C join -t '|' "$T/h.sizes0" "$T/h.sizes1" |
                    awk -F'|' -v n=$((n1 - n0)) '{ print $1 "|" ($3 - $2) / n }' \
                        >>"$T/h.tables"
            fi
            ;;
        hist-pairs)
            bench_out "$T/h.out" "$HIST_URL" pairs -c "$POOL" -d "$SECS" -x "hh$2-"
            f=$(row_of "$T/h.out" "reserve+release pairs/s, $POOL clients")
            ;;
    esac
    [ -z "$f" ] && grep '^#' "$T/h.out" | head -n 4
    [ -n "$f" ] && echo "$f" >>"$T/h.$1"
    eval "r_$(echo "$1" | tr - _)=\${f:-?}"
}

# bench_dbs DB...: create and migrate each database; sets why on failure.
bench_dbs () {
    for db; do
        as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib "$db" || {
            why="cannot create database $db"
            return 1
        }
        bench_config "$T/$db-migrate.toml" 1
        sed -i -e "s/dbname=vnibroker/dbname=$db/" "$T/$db-migrate.toml"
        "$VNIBROKERD" -c "$T/$db-migrate.toml" --migrate >>"$T/migrate.log" 2>&1 || {
            why="migration of $db failed"
            return 1
        }
    done
}

# bench_sql DB NAME [PSQL-ARGS...]: run tests/bench/NAME.sql on DB in one
# transaction (psql -1), in the background and tracked; sets why on failure.
bench_sql () {
    bs_db=$1
    bs_name=$2
    shift 2
    cp "$TOP/tests/bench/$bs_name.sql" "$T/$bs_name.sql" && chmod 644 "$T/$bs_name.sql" || {
        why="no tests/bench/$bs_name.sql"
        return 1
    }
    bench_bg "$T/$bs_name-load.log" "tests/bench/$bs_name.sql failed" \
        as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d "$bs_db" -XAtq -1 \
        -v ON_ERROR_STOP=1 "$@" -f "$T/$bs_name.sql"
}

# bench_bg LOG WHY COMMAND...: COMMAND with its output in LOG, in the
# background and tracked (an interrupt stops it at once); when it fails,
# the end of LOG as "#" lines and why=WHY.
bench_bg () {
    bg_log=$1
    bg_why=$2
    shift 2
    "$@" >"$bg_log" 2>&1 &
    bg_pid=$!
    track "$bg_pid"
    wait "$bg_pid" && return 0
    sed 's/^/#   /' "$bg_log" | tail -n 5
    why=$bg_why
    return 1
}

history_scenario () {
    why=""
    bench_dbs fresh history || return 1
    t0=$(now_ms)
    bench_sql history history -v released="$HIST_RELEASED" \
        -v quarantined="$HIST_QUARANTINED" || return 1
    t1=$(now_ms)
    # both databases alike: the fresh one gets its statistics too (without
    # them the fresh broker's open-loop p99 was seconds, not milliseconds)
    hq fresh "VACUUM ANALYZE" >/dev/null 2>&1
    hq history "VACUUM ANALYZE" &
    vac_pid=$!
    track "$vac_pid"
    wait "$vac_pid"
    # The load left about a gigabyte of dirty pages; the checkpoint that
    # writes them would otherwise run during the measured runs and lengthen
    # every commit's fsync there, the fresh database's as much as the
    # history's: the comparison is of a database with history against one
    # without, not of the aftermath of a bulk load.
    hq history "CHECKPOINT" >/dev/null 2>&1 &
    vac_pid=$!
    track "$vac_pid"
    wait "$vac_pid"
    t2=$(now_ms)
    echo "#   history: $HIST_RELEASED released and $HIST_QUARANTINED quarantined" \
        "reservations loaded in $(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100)) s," \
        "VACUUM ANALYZE and CHECKPOINT $(((t2 - t1) / 1000)).$(((t2 - t1) % 1000 / 100)) s;" \
        "tables $(($(db_bytes history) / 1048576)) MiB"
    hist_broker_as FRESH fresh fresh || return 1
    hist_broker_as HIST history history || return 1
    echo "#   history: $(hq history "SELECT count(*) FROM reservations WHERE state = 'releasing'")" \
        "quarantined, $(hq history "SELECT count(*) FROM vni_holds") VNIs held," \
        "$(hq history "SELECT count(*) FROM vni_free") queued free"
    # warm-up, not measured: each broker's connections and plans
    bench_out "$T/h.warm" "$FRESH_URL" pairs -c "$POOL" -d 1 -x warmf-
    bench_out "$T/h.warm" "$HIST_URL" pairs -c "$POOL" -d 1 -x warmh-
    empty_files "$T/h" bytes tables fresh-ol hist-ol fresh-pairs hist-pairs
    rounds hist_run hist_round fresh-ol hist-ol fresh-pairs hist-pairs
    n="median of $ROUNDS"
    fo=$(median_range "$T/h.fresh-ol")
    ho=$(median_range "$T/h.hist-ol")
    fp=$(median_range "$T/h.fresh-pairs")
    hp=$(median_range "$T/h.hist-pairs")
    if [ -n "$fo" ] && [ -n "$ho" ]; then
        set -- $fo
        row_ref "reserve p99 at 1000/s, fresh database" "$1" ms "$n, range $2-$3"
        tgt=$(awk -v f="$1" 'BEGIN { print 1.5 * f }')
        fresh_ok=$(awk -v f="$1" 'BEGIN { print (f <= 10) ? 1 : 0 }')
        set -- $ho
        if [ "$fresh_ok" = 1 ]; then
            row_cmp "$HIST_OL_ROW" "$1" ms "<=" "$tgt" "1.5x fresh; $n, range $2-$3"
        else
            # a saturated machine: 1.5x a figure of seconds compares nothing
            printf '%-52s %12.3f %-6s %2s %10.3f  %s\n' "$HIST_OL_ROW" "$1" ms \
                "<=" "$tgt" "NOT MET (fresh p99 over its own 10 ms target: no comparison; $n, range $2-$3)"
        fi
    else
        row_not_run "$HIST_OL_ROW" ms "<=" 0 "an open-loop run failed"
    fi
    if [ -n "$fp" ] && [ -n "$hp" ]; then
        set -- $fp
        row_ref "reserve+release pairs/s, fresh database" "$1" "pair/s" "$POOL clients; $n, range $2-$3"
        tgt=$(awk -v f="$1" 'BEGIN { print 0.8 * f }')
        set -- $hp
        row_cmp "$HIST_PAIRS_ROW" "$1" "pair/s" ">=" "$tgt" "0.8x fresh; $n, range $2-$3"
    else
        row_not_run "$HIST_PAIRS_ROW" "pair/s" ">=" 0 "a pairs run failed"
    fi
    BYTES_PER_PAIR=""
    if [ -s "$T/h.bytes" ]; then
        set -- $(median_range "$T/h.bytes")
        BYTES_PER_PAIR=$1
        row_ref "$HIST_BYTES_ROW" "$1" bytes "fresh database; $n, range $2-$3"
        awk -F'|' -v r="$ROUNDS" '{ s[$1] += $2 } END {
            for (t in s) if (s[t] != 0) printf "#   %-20s %8.1f bytes/pair\n", t, s[t] / r }' \
            "$T/h.tables" | sort -k2 -n -r
    fi

    # purge under a steady stream
    stop_pids "$HIST_PID" "$FRESH_PID"
    hist_broker history-purge history 30 1 || {
        why="the history broker does not restart"
        return 1
    }
    HIST_PID=$HB_PID
    timeout -k 5 300 "$BENCH_API" -u "$HB_URL" -T "$T/sched.token" \
        -k "$T/node.key" -c 2 -d "$HIST_PURGE_SECS" -x steady- pairs \
        >"$T/h.steady" 2>&1 &
    steady_pid=$!
    track "$steady_pid"
    : >"$T/h.purge"
    ts=$(now_ms)
    i=0
    while [ "$i" -lt $((HIST_PURGE_SECS / HIST_INTERVAL)) ]; do
        i=$((i + 1))
        # the next sample at ts + i intervals, whatever VACUUM took
        left=$((ts + i * HIST_INTERVAL * 1000 - $(now_ms)))
        [ "$left" -gt 0 ] && sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
        hq history "VACUUM" >/dev/null 2>&1
        hq history "$SIZES_SQL" >"$T/h.purge.$i"
        echo "$((($(now_ms) - ts) / 1000)) $(db_bytes history)" \
            "$(hq history "SELECT last_value FROM reservations_id_seq")" \
            "$(hq history "SELECT count(*) FROM reservations WHERE state = 'released'")" \
            >>"$T/h.purge"
    done
    wait "$steady_pid" || {
        echo "#   bench_api steady pairs failed"
        HARNESS_FAILED=1
    }
    grep '^#   release' "$T/h.steady" | head -n 1
    awk '{ printf "#   purge: %3d s, tables %.1f MiB, %d reservations made, %d released kept\n",
        $1, $2 / 1048576, $3, $4 }' "$T/h.purge"
    if [ -n "$BYTES_PER_PAIR" ] && [ "$(wc -l <"$T/h.purge")" -ge 3 ]; then
        set -- $(tail -n 3 "$T/h.purge" | awk 'NR == 1 { b = $2; n = $3 }
            END { print ($2 - b), ($3 - n) }')
        if [ "$2" -gt 0 ]; then
            fig=$(awk -v g="$1" -v n="$2" -v p="$BYTES_PER_PAIR" 'BEGIN { print g / n / p }')
            row_cmp "$HIST_PURGE_ROW" "$fig" ratio "<=" 0.25 \
                "last $((2 * HIST_INTERVAL)) s: $1 bytes for $2 pairs"
            LC_ALL=C join -t '|' "$T/h.purge.$((i - 2))" "$T/h.purge.$i" |
                awk -F'|' -v n="$2" '$3 != $2 {
                    printf "#   %-20s %8.1f bytes/pair over the last %s s\n", $1, ($3 - $2) / n, "'$((2 * HIST_INTERVAL))'" }' |
                sort -k2 -n -r
        else
            row_not_run "$HIST_PURGE_ROW" ratio "<=" 0.25 "no pairs made"
        fi
    else
        row_not_run "$HIST_PURGE_ROW" ratio "<=" 0.25 "too few samples or no bytes per pair"
    fi
    stop_pids "$HIST_PID"
    if [ -s "$T/history-purge-broker.log" ]; then
        echo "#   history broker warnings: $(wc -l <"$T/history-purge-broker.log") lines; the first:"
        head -n 3 "$T/history-purge-broker.log" | cut -c1-200 | sed 's/^/#   /'
    fi
    return 0
}

scenario history steal

# ---- uiscale: the status page at the scale of issue 16 ----------------------
#
# Two more databases on the same PostgreSQL, each with its own broker
# (configured as the main one, no purge, a monitor token added): "small"
# (UI_SMALL_ACTIVE active jobs, UI_SMALL_QUARANTINED quarantined, 3
# drained nodes) and "big" (UI_ACTIVE active jobs of mixed sizes on
# nid[000001-011136], one of them on all 11,136 nodes, UI_QUARANTINED
# quarantined ones with nodes still holding CXI services, UI_DRAINED
# drained nodes, and UI_HISTORY_JOBS * 15 events of earlier jobs).  The
# live state is made through the API (tests/bench/uiscale.py seed: the
# requests slurmctld and the node agents send); only the event history
# of earlier jobs is bulk SQL (tests/bench/uiscale.sql, rows as the
# broker's functions write them), loaded first so that the API's events
# are the newest.  Both databases are then VACUUM ANALYZEd.  ROUNDS
# rounds alternate the two, in a rotating order; each run
# (uiscale.py measure) makes UI_CALLS calls of each kind after a warm-up,
# then opens /ui/ in headless Chromium (tests/integration/browser.py) and
# makes UI_REFRESHES refreshes.  Rows, big against small, median and range
# over all calls of all rounds:
#   - GET /v1/status, uncached (history_s varied, so the 1 s reply cache
#     never answers): p50 <= 100 ms; cached (the same query at once): p50
#     <= 2 ms;
#   - GET /v1/events?order=desc&limit=100 with a node filter, and with an
#     action filter (drain, quarantine_end, report, release in turn):
#     p50 <= 50 ms;
#   - GET /v1/search (the page's search box): the job on all 11,136 nodes
#     (300 of them failed), its nodes split by their last report, p50 <=
#     100 ms; a node, p50 <= 50 ms;
#   - the page: navigation to the first frame after its first complete
#     refresh (reference: no target of its own), one refresh's render (the
#     page's "rendered in" figure plus the style and layout it costs) <= 100
#     ms, and the longest main-thread task of a page session <= 200 ms
#     (PerformanceObserver 'longtask', injected by the bench only).
UI_ACTIVE=${BENCH_UI_ACTIVE:-10000}
UI_QUARANTINED=${BENCH_UI_QUARANTINED:-1100}
UI_DRAINED=${BENCH_UI_DRAINED:-300}
UI_HISTORY_JOBS=${BENCH_UI_HISTORY_JOBS:-16000}
UI_SMALL_ACTIVE=100
UI_SMALL_QUARANTINED=10
UI_CALLS=${BENCH_UI_CALLS:-30}
UI_REFRESHES=${BENCH_UI_REFRESHES:-5}
UI_PY=$TOP/tests/bench/uiscale.py
UI_ST_ROW="GET /v1/status uncached p50, at scale"
UI_STC_ROW="GET /v1/status cached p50, at scale"
UI_EVN_ROW="GET /v1/events desc, node filter p50, at scale"
UI_EVA_ROW="GET /v1/events desc, action filter p50, at scale"
UI_SJ_ROW="GET /v1/search, job a0 (whole machine) p50, at scale"
UI_SN_ROW="GET /v1/search, a node p50, at scale"
UI_FIRST_ROW="page: load to first complete render, at scale"
UI_RENDER_ROW="page: one refresh, render+layout p50, at scale"
UI_LONG_ROW="page: longest main-thread task, at scale"

uiscale_not_run () {
    row_not_run "$UI_ST_ROW" ms "<=" 100 "$1"
    row_not_run "$UI_STC_ROW" ms "<=" 2 "$1"
    row_not_run "$UI_EVN_ROW" ms "<=" 50 "$1"
    row_not_run "$UI_EVA_ROW" ms "<=" 50 "$1"
    row_not_run "$UI_SJ_ROW" ms "<=" 100 "$1"
    row_not_run "$UI_SN_ROW" ms "<=" 50 "$1"
    row_not_run "$UI_RENDER_ROW" ms "<=" 100 "$1"
    row_not_run "$UI_LONG_ROW" ms "<=" 200 "$1"
}

# uiscale_run small|big ROUND: one measuring run against that broker.
uiscale_run () {
    case "$1" in small) url=$UI_SMALL_URL ;; *) url=$UI_BIG_URL ;; esac
    timeout -k 5 300 python3 "$UI_PY" measure "$url" --token "$T/ui.monitor" \
        --label "$1" --round "$2" --out "$T/ui" --calls "$UI_CALLS" \
        --refreshes "$UI_REFRESHES" --chromium "$UI_CHROMIUM" \
        --chrome-log "$T/ui-chromium.log" &
    ui_pid=$!
    track "$ui_pid"
    wait "$ui_pid" || echo "#   uiscale.py measure $1 failed (exit $?)"
}

uiscale_note () {
    :
}

# uiscale_pair NAME UNIT OP TARGET METRIC: the big state's row with its
# target, after the small state's reference row.
uiscale_pair () {
    small=$(median_range "$T/ui.small.$5")
    big=$(median_range "$T/ui.big.$5")
    n=$(wc -l <"$T/ui.big.$5")
    if [ -z "$small" ] || [ -z "$big" ]; then
        row_not_run "$1" "$2" "$3" "$4" "a run failed"
        return
    fi
    set -- "$@" $small
    row_ref "${1%, at scale}, small state" "$6" "$2" "$n values, $ROUNDS runs, range $7-$8"
    s_med=$6
    set -- "$1" "$2" "$3" "$4" "$5" $big
    if [ "$4" = - ]; then
        row_ref "$1" "$6" "$2" "small $s_med; $n values, $ROUNDS runs, range $7-$8"
    else
        row_cmp "$1" "$6" "$2" "$3" "$4" "small $s_med; $n values, $ROUNDS runs, range $7-$8"
    fi
}

uiscale_scenario () {
    why=""
    UI_CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$UI_CHROMIUM" ] || { why="chromium is not installed (make deps)"; return 1; }
    umask 077
    "$BENCH_API" token "$T/ui.monitor" || { why="no monitor token"; umask 022; return 1; }
    {
        cat "$T/tokens"
        echo "monitor bench-monitor $(sha256sum <"$T/ui.monitor" | cut -d' ' -f1)"
    } >"$T/ui.tokens"
    umask 022
    bench_dbs uismall uibig || return 1
    t0=$(now_ms)
    bench_sql uibig uiscale -v jobs="$UI_HISTORY_JOBS" || return 1
    t1=$(now_ms)
    HB_TOKENS=$T/ui.tokens
    hist_broker_as UI_SMALL uismall uismall || return 1
    hist_broker_as UI_BIG uibig uibig || return 1
    HB_TOKENS=""
    for st in small big; do
        if [ "$st" = small ]; then
            set -- "$UI_SMALL_URL" --active "$UI_SMALL_ACTIVE" \
                --quarantined "$UI_SMALL_QUARANTINED" --drained 3
        else
            set -- "$UI_BIG_URL" --active "$UI_ACTIVE" \
                --quarantined "$UI_QUARANTINED" --drained "$UI_DRAINED" --whole
        fi
        bench_bg "$T/ui-seed.out" "seeding the $st state failed" \
            timeout -k 5 600 python3 "$UI_PY" seed "$@" --sched-token "$T/sched.token" \
            --node-key "$T/node.key" || return 1
        cat "$T/ui-seed.out"
    done
    t2=$(now_ms)
    for db in uismall uibig; do
        hq "$db" "VACUUM ANALYZE" >/dev/null 2>&1 &
        vac_pid=$!
        track "$vac_pid"
        wait "$vac_pid"
    done
    echo "#   uiscale: $((UI_HISTORY_JOBS * 15)) events of earlier jobs by SQL in" \
        "$(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100)) s, the live state by the API in" \
        "$(((t2 - t1) / 1000)).$(((t2 - t1) % 1000 / 100)) s"
    for db in uismall uibig; do
        echo "#   $db: $(hq "$db" "SELECT count(*) FROM reservations WHERE state = 'active'") active," \
            "$(hq "$db" "SELECT count(DISTINCT reservation_id) FROM vni_holds h JOIN reservations r ON r.id = h.reservation_id WHERE r.state = 'releasing'") quarantined," \
            "$(hq "$db" "SELECT count(*) FROM node_reports WHERE cxi IN ('creating', 'created', 'failed')") holding reports," \
            "$(hq "$db" "SELECT count(*) FROM nodes WHERE drained") drained," \
            "$(hq "$db" "SELECT count(*) FROM events") events"
    done
    empty_files "$T/ui.small" st_unc st_cached ev_node ev_action ev_all search_job search_node page_first \
        page_render page_total page_long
    empty_files "$T/ui.big" st_unc st_cached ev_node ev_action ev_all search_job search_node page_first \
        page_render page_total page_long
    rounds uiscale_run uiscale_note small big
    uiscale_pair "$UI_ST_ROW" ms "<=" 100 st_unc
    uiscale_pair "$UI_STC_ROW" ms "<=" 2 st_cached
    uiscale_pair "GET /v1/events desc, no filter p50, at scale" ms "" - ev_all
    uiscale_pair "$UI_EVN_ROW" ms "<=" 50 ev_node
    uiscale_pair "$UI_EVA_ROW" ms "<=" 50 ev_action
    uiscale_pair "$UI_SJ_ROW" ms "<=" 100 search_job
    uiscale_pair "$UI_SN_ROW" ms "<=" 50 search_node
    uiscale_pair "$UI_FIRST_ROW" ms "" - page_first
    uiscale_pair "page: one refresh incl. fetches p50, at scale" ms "" - page_total
    uiscale_pair "$UI_RENDER_ROW" ms "<=" 100 page_render
    uiscale_pair "$UI_LONG_ROW" ms "<=" 200 page_long
    stop_pids "$UI_SMALL_PID" "$UI_BIG_PID"
    for b in uismall uibig; do
        [ -s "$T/$b-broker.log" ] &&
            echo "#   $b broker: $(wc -l <"$T/$b-broker.log") log lines; the first: $(head -n 1 "$T/$b-broker.log" | cut -c1-160)"
    done
    return 0
}

scenario uiscale steal

# ---- failover: promote to the first successful reserve ---------------------
#
# tests/integration/0420-failover.sh, run as it is in `make check` (its own
# primary, synchronous streaming standby and two replicas with a multi-host
# conninfo, under the history client's load): the primary is killed
# (pg_ctl stop -m immediate) in one run and frozen (SIGSTOP) in another,
# the standby promoted, and the test prints the seconds from the promote
# to the first reserve acknowledged.  Target 10 s each; the test's own
# verdict (history check, database checks) follows as a "#" line.
FAILOVER_ROW="failover: promote to first reserve"

failover_scenario () {
    VNIB_BUILD=$BUILD timeout -k 5 300 bash "$TOP/tests/integration/0420-failover.sh" \
        >"$T/failover.out" 2>&1
    frc=$?
    for mode in kill freeze; do
        fig=$(sed -n "s/^# $mode: promote to first successful reserve: \([0-9.]*\) s$/\1/p" \
            "$T/failover.out" | head -n 1)
        if [ -n "$fig" ]; then
            row_cmp "$FAILOVER_ROW ($mode)" "$fig" s "<=" 10
        else
            row_not_run "$FAILOVER_ROW ($mode)" s "<=" 10 "no reserve after the promote"
        fi
    done
    echo "#   0420-failover.sh: exit $frc, $(grep -m1 '^# counts:' "$T/failover.out" | sed 's/^# //')"
    grep '^not ok' "$T/failover.out" | head -n 5 | sed 's/^/#   /'
}

if wanted failover; then
    if [ ! -x "$BUILD/tests/stress/history" ]; then
        row_not_run "$FAILOVER_ROW (kill)" s "<=" 10 "no history client"
        row_not_run "$FAILOVER_ROW (freeze)" s "<=" 10 "no history client"
    else
        failover_scenario
    fi
fi

# ---- patroni: the leader's failure to the first successful reserve --------
#
# tests/bench/patroni-failover.sh: one Patroni cluster of
# tests/integration/patroni.sh (members generated from
# deploy/patroni/patroni.example.yml with the test's timings: ttl 8,
# loop_wait 1, retry_timeout 3) and one broker listing the three members;
# BENCH_PATRONI_ROUNDS (3) rounds alternating three faults, each timed
# from the fault to the first reserve acknowledged.  Targets: 15 s for
# the two failures, the bound tests/integration/0430-failover-patroni.sh
# asserts (a frozen leader costs ttl before a replica may take over, then
# the broker's query and connect timeouts; a killed postmaster costs
# Patroni's crash recovery and restart).  8 s for a planned switchover:
# patronictl's start (about 1 s), the old leader's shutdown checkpoint,
# the promotion, and with synchronous_mode_strict the wait for a standby
# to follow the new leader (wal_retrieve_retry_interval 1s) are each a
# second or two.  The reference is 0420's hand promotion (row failover),
# timed from the promote, not from the failure: it leaves out the
# detection that Patroni adds.
PATRONI_ROW="patroni: failure to first reserve"

patroni_scenario () {
    local out=$T/patroni.out ref m fig tgt
    VNIB_BUILD=$BUILD timeout -k 5 600 bash "$TOP/tests/bench/patroni-failover.sh" >"$out" 2>&1
    for m in kill freeze switchover; do
        tgt=15
        [ "$m" = switchover ] && tgt=8
        fig=$(sed -n "s/^# $m: \([0-9.]*\) .*/\1/p" "$out")
        ref=""
        case "$m" in kill | freeze)
            ref=$(sed -n "s/^# $m: promote to first successful reserve: \([0-9.]*\) s$/\1/p" \
                "$T/failover.out" 2>/dev/null | head -n 1)
            ;;
        esac
        if [ -n "$fig" ]; then
            if [ "$m" = switchover ]; then
                ref="no planned switchover in 0420; the failover rows are the reference"
            else
                ref="ref 0420 hand promotion ${ref:+$ref s }(row failover, from the promote)"
            fi
            row_cmp "$PATRONI_ROW ($m): p50" "$fig" s "<=" "$tgt" \
                "min max $(sed -n "s/^# $m: [0-9.]* \(.*\)/\1/p" "$out"); $ref"
        else
            why=$(grep -m1 -E '^# (not run|  )' "$out" | sed 's/^# *//' | cut -c1-100)
            row_not_run "$PATRONI_ROW ($m): p50" s "<=" "$tgt" "${why:-no figures}"
        fi
    done
}

if wanted patroni; then
    steal_mark
    patroni_scenario
    steal_note "patroni"
fi

# ---- job start: isolation's cost on srun, per Slurm release -------------
#
# tests/bench/slurm-start.sh: `srun -N3 true` on a real slurmctld and three
# slurmd of each Slurm release built here (22.05, and 24.11 and 26.05 when
# deploy/tools/slurm-build.sh built them), BENCH_SLURM_RUNS (20) jobs per
# way, the four ways alternating by rounds (a cluster runs one way at a
# time): no isolation (switch/none, no hooks), a switch plugin that does
# nothing (tests/bench/switch_noop.c, loaded as switch_vnib.so is: the
# floor, Slurm's own cost of an out-of-tree switch plugin), the switch
# plugin, the four hooks as a script that does nothing (the hooks' floor,
# Slurm's own cost of running them: on 24.11 and later about a second
# when a controller and a node prolog are both set) and the prolog hooks,
# the plugin and the hooks with the broker's leases.  The targets: the
# plugin at most 10% over the no-op plugin, the hooks at most 10% over
# the empty hooks.  The plugin
# reserves the step in slurmctld (one request for the step, one more for
# the job's first) and sets the step up in slurmstepd from its lease, with
# no broker request, around the step; its releases leave slurmctld's job
# lock (the outbox's thread); the hooks fork a controller prolog
# (reserve, then scontrol to write the lease into the job) and node
# prologs per job, and their Epilog runs after srun has returned.  The
# "#" lines after the rows say what slurmctld's log says each of
# switch/vnib's requests took.
slurmstart_scenario () {
    local v=$1 out=$T/slurmstart.$1.out none noop sw em hk target way
    VNIB_BUILD=$BUILD VNIB_SLURM_VERSION=$v timeout -k 5 1200 \
        bash "$TOP/tests/bench/slurm-start.sh" >"$out" 2>&1
    none=$(sed -n 's/^# none: \([0-9.]*\) .*/\1/p' "$out")
    noop=$(sed -n 's/^# noop: \([0-9.]*\) .*/\1/p' "$out")
    sw=$(sed -n 's/^# switch: \([0-9.]*\) .*/\1/p' "$out")
    em=$(sed -n 's/^# empty: \([0-9.]*\) .*/\1/p' "$out")
    hk=$(sed -n 's/^# hook: \([0-9.]*\) .*/\1/p' "$out")
    if [ -z "$none" ] || [ -z "$noop" ] || [ -z "$sw" ] || [ -z "$em" ] || [ -z "$hk" ]; then
        why=$(grep -m1 -E '^(# (not run|skip|.*failed|.*did not)|ok [0-9]+ # skip)' \
            "$out" | sed 's/^ok [0-9]* # skip /skip: /; s/^# //' | cut -c1-100)
        row_not_run "srun -N3 true, Slurm $v, switch/vnib: p50" ms "<=" 0 "${why:-no figures}"
        return 0
    fi
    target=$(awk -v n="$noop" 'BEGIN { printf "%.3f", n * 1.10 }')
    row_ref "srun -N3 true, Slurm $v, no isolation: p50" "$none" ms \
        "$(sed -n 's/^# none: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_ref "srun -N3 true, Slurm $v, no-op switch plugin: p50" "$noop" ms \
        "$(sed -n 's/^# noop: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "srun -N3 true, Slurm $v, switch/vnib: p50" "$sw" ms "<=" "$target" \
        "+10% of the no-op plugin; min max $(sed -n 's/^# switch: [0-9.]* \(.*\)/\1/p' "$out")"
    row_ref "srun -N3 true, Slurm $v, empty hooks: p50" "$em" ms \
        "$(sed -n 's/^# empty: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "srun -N3 true, Slurm $v, prolog hooks: p50" "$hk" ms "<=" \
        "$(awk -v n="$em" 'BEGIN { printf "%.3f", n * 1.10 }')" \
        "+10% of the empty hooks; min max $(sed -n 's/^# hook: [0-9.]* \(.*\)/\1/p' "$out")"
    for way in "ctld job reserve" "ctld step reserve" "ctld release"; do
        sed -n "s/^# $way: \([0-9.]*\) \([0-9.]*\) \([0-9.]*\)$/#   switch\/vnib, $way: median \1 ms, min \2, max \3/p" "$out"
    done
}

if wanted slurmstart; then
    for v in ${VNIB_SLURM_VERSIONS:-22.05 24.11 26.05}; do
        if [ "$(id -u)" -ne 0 ]; then
            row_not_run "srun -N3 true, Slurm $v, switch/vnib: p50" ms "<=" 0 "needs root (slurmctld, slurmd)"
            continue
        fi
        steal_mark
        slurmstart_scenario "$v"
        steal_note "slurmstart $v"
    done
fi

# ---- job start: isolation's cost on flux run ------------------------------
#
# tests/bench/flux-start.sh: `flux run -N3 true` on three-broker Flux test
# instances (flux-core as `make deps-flux` built it), BENCH_FLUX_RUNS (30)
# jobs per configuration, alternated job by job: flux-core alone, a
# per-rank prolog that runs /bin/true (the floor of any node-side step),
# and vnibroker (the jobtap plugin's reserve with a lease, vnib-flux-node
# creating the services from it, the shell plugin).  The target (issue
# 43): at most 10% over the empty per-rank prolog.  The "where" notes say
# where a job's start goes: the reserve, the per-rank prolog, and the
# housekeeping after the job.
fluxstart_scenario () {
    local none pl vn target out=$T/fluxstart.out
    VNIB_BUILD=$BUILD timeout -k 5 900 bash "$TOP/tests/bench/flux-start.sh" >"$out" 2>&1
    none=$(sed -n 's/^# none: \([0-9.]*\) .*/\1/p' "$out")
    pl=$(sed -n 's/^# perilog: \([0-9.]*\) .*/\1/p' "$out")
    vn=$(sed -n 's/^# vnib: \([0-9.]*\) .*/\1/p' "$out")
    if [ -z "$none" ] || [ -z "$pl" ] || [ -z "$vn" ]; then
        why=$(grep -m1 -E '^(# (not run|.*failed|.*did not)|ok [0-9]+ # skip)' "$out" |
            sed 's/^ok [0-9]* # skip /skip: /; s/^# //' | cut -c1-100)
        row_not_run "flux run -N3 true, vnibroker: p50" ms "<=" 0 "${why:-no figures}"
        return 0
    fi
    target=$(awk -v n="$pl" 'BEGIN { printf "%.3f", n * 1.10 }')
    row_ref "flux run -N3 true, flux-core alone: p50" "$none" ms \
        "$(sed -n 's/^# none: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_ref "flux run -N3 true, an empty per-rank prolog: p50" "$pl" ms \
        "$(sed -n 's/^# perilog: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "flux run -N3 true, vnibroker: p50" "$vn" ms "<=" "$target" \
        "+10% of the empty per-rank prolog; min max $(sed -n 's/^# vnib: [0-9.]* \(.*\)/\1/p' "$out")"
    sed -n 's/^# where: /#   fluxstart: /p' "$out"
}

if wanted fluxstart; then
    if [ "$(id -u)" -ne 0 ]; then
        row_not_run "flux run -N3 true, vnibroker: p50" ms "<=" 0 "needs root (the node side)"
    else
        steal_mark
        fluxstart_scenario
        steal_note "fluxstart"
    fi
fi

if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "#   the broker died during the run:"
    tail -n 20 "$BROKER_LOG" | sed 's/^/#   /'
    HARNESS_FAILED=1
elif [ -s "$BROKER_LOG" ]; then
    echo "#   broker warnings: $(wc -l <"$BROKER_LOG") lines; the first:"
    head -n 3 "$BROKER_LOG" | cut -c1-200 | sed 's/^/#   /'
fi
exit "$HARNESS_FAILED"
