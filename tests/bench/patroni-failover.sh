#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Failover time under Patroni, for `make bench` (tests/bench/run.sh,
# scenario "patroni"): the seconds from the leader's failure to the first
# reserve a broker acknowledges once the leader stopped taking writes
# (the first after a failed one, or after another member leads), on the
# Patroni cluster of tests/integration/patroni.sh (three members
# generated from deploy/patroni/patroni.example.yml, one etcd, the test's
# timings) and one broker whose conninfo lists the three members.  Three faults, as in
# tests/integration/0430-failover-patroni.sh: kill (kill -9 of the
# leader's postmaster), freeze (SIGSTOP of the leader's PostgreSQL, the
# watchdog's reset emulated at ttl - safety_margin) and switchover
# (`patronictl switchover --force` to the synchronous standby, timed from
# the command's start).  One cluster serves every round: after each fault
# the cluster is brought back to health (the frozen member's Patroni
# started again) before the next.  The modes alternate within each of
# BENCH_PATRONI_ROUNDS rounds (default 3), the order turning every round.
# Prints, as "#" lines, "kill: MEDIAN MIN MAX" (seconds), "freeze: ..."
# and "switchover: ...", and "# not run: WHY" when the cluster cannot run.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/patroni.sh"

ROUNDS=${BENCH_PATRONI_ROUNDS:-3}

patroni_tools || { echo "# not run: $PATRONI_MISSING is not installed"; exit 1; }
auth_setup
patroni_cluster_start bench || { echo "# not run: the Patroni cluster did not start"; exit 1; }
broker_config "$T/b.toml" "$(vni_pool 2000-9999)"
sed -i -e "s|^conninfo = .*|conninfo = \"$(patroni_conninfo)\"|" \
    -e 's/^level = .*/level = "notice"/' "$T/b.toml"
broker_start "$T/b.toml" || { echo "# not run: the broker did not start"; exit 1; }

SAFETY=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["watchdog"]["safety_margin"])' \
    "$PATRONI_EXAMPLE")
RESET_AFTER=$((PATRONI_TTL - SAFETY))
[ "$RESET_AFTER" -gt "$PATRONI_LOOP_WAIT" ] || RESET_AFTER=$((PATRONI_LOOP_WAIT + 1))

N=0
probe () {
    N=$((N + 1))
    probe_reserve "$BROKER_URL" "bench-$N"
}

# one MODE: the fault, then reserves every 0.05 s until one is
# acknowledged (60 s at most); appends the seconds to $T/MODE.times.
one () {
    leader=$(patroni_leader)
    sync=$(patroni_cluster_json | jq -r '.members[] | select(.role == "sync_standby") | .name')
    dir=$T/patroni/$leader/data
    t0=$(now_ms)
    bg=""
    case "$1" in
    kill) kill -KILL "$(head -n 1 "$dir/postmaster.pid")" ;;
    freeze)
        frozen=$(pg_pids "$dir")
        pg_freeze "$dir"
        eval "wd=\$PATRONI_PID_$leader"
        (sleep "$RESET_AFTER"; kill -KILL "$wd" $frozen 2>/dev/null) &
        bg=$!
        ;;
    switchover)
        patronictl -c "$PATRONI_CFG" switchover --leader "$leader" --candidate "$sync" \
            --force >/dev/null 2>&1 &
        bg=$!
        ;;
    esac
    # Reserves still succeed until the old leader stops taking writes (a
    # switchover's first second is patronictl starting): the figure is
    # the first success after a failure, or after another member leads.
    down=0
    while [ $(($(now_ms) - t0)) -lt 60000 ]; do
        if probe; then
            [ "$down" = 1 ] && break
            [ "$(patroni_leader "$sync")" = "$leader" ] || break
        else
            down=1
        fi
        sleep 0.05
    done
    took=$(($(now_ms) - t0))
    if [ "$HTTP_STATUS" = 201 ]; then
        awk "BEGIN { printf \"%.3f\\n\", $took / 1000 }" >>"$T/$1.times"
    else
        echo "#   $1: no reserve within 60 s (last: $HTTP_STATUS)"
    fi
    [ -z "$bg" ] || wait "$bg"
    # Back to health: the reset member's host comes back.
    [ "$1" = freeze ] && patroni_member_start "$leader"
    wait_for 90 patroni_healthy || { echo "#   $1: the cluster did not return to health"; return 1; }
}

modes="kill freeze switchover"
for r in $(seq 1 "$ROUNDS"); do
    for m in $modes; do
        one "$m" || break 2
    done
    # The next round starts with the next mode.
    set -- $modes
    modes="$2 $3 $1"
done
for m in kill freeze switchover; do
    [ -s "$T/$m.times" ] || continue
    sort -n "$T/$m.times" | awk -v p="$m" '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "# %s: %.3f %.3f %.3f\n", p, m, v[1], v[NR] }'
done
patroni_cluster_stop
