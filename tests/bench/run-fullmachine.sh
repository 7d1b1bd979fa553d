# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# the scenarios of a full-machine job, 11,136 nodes: frag (a node's GET of
# a fragmented job against a compact one), stepstorm (each step's node
# fetch storm) and fullmachine (the job's and a step's start and end, as
# every node's agent drives them).
# It uses run.sh's settings, helpers and broker.

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
