# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# the API's throughput and latency rows: the broker's reserve and release
# pairs against pgbench at equal concurrency (compare, pairs), then
# healthz, openloop, bigjob, populate, nodeview, rss and storm.
# It uses run.sh's settings, helpers and broker.

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
