# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# the Fabric Manager's release-queue drain under a reserve load (drain),
# and what the node agent costs a job's start and end (agent).
# It uses run.sh's settings, helpers and broker.

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
