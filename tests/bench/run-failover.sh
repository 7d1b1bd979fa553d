# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# the time from a database failover to the first successful reserve: a
# promoted standby (failover) and Patroni (patroni); job starts across a
# Patroni switchover, per scheduler (ridethrough).
# It uses run.sh's settings, helpers and broker.

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

# ---- ridethrough: job starts across a Patroni switchover -------------------
#
# tests/integration/0580-slurm-ridethrough.sh (Slurm 26.05, switch/vnib)
# and 0770-flux-ridethrough.sh (flux-core 0.88), each with only the
# switchover (RIDE_MODES=switchover), BENCH_RIDE_ROUNDS (3) times, the
# two schedulers alternated: a stream of short jobs while `patronictl
# switchover` moves the leader.  The figure is the longest extra wait of a
# job started during the switchover (its start delay beyond the median of
# the jobs started outside any fault), as the test prints it; the target
# is the switchover's own window (from patronictl's start until the
# broker serves again, as the test measured it in that round) plus 2 s:
# what a scheduler adds on top of the database's own outage.  The median
# and range over the rounds are shown; the reference is the window itself.
RIDE_ROUNDS=${BENCH_RIDE_ROUNDS:-3}

# ride_median: the median of sorted numbers, one a line.
ride_median () {
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ridethrough_scenario () {
    local r s f out
    for r in $(seq 1 "$RIDE_ROUNDS"); do
        for s in slurm flux; do
            case $s in
            slurm) f=0580-slurm-ridethrough.sh ;;
            flux) f=0770-flux-ridethrough.sh ;;
            esac
            out=$T/ride.$s.$r.out
            VNIB_BUILD=$BUILD VNIB_SLURM_VERSION=26.05 RIDE_MODES=switchover \
                timeout -k 5 900 bash "$TOP/tests/integration/$f" >"$out" 2>&1
            sed -n 's/^# ridethrough: .*fault=switchover window_ms=\([0-9]*\) longest_extra_ms=\([0-9]*\).*/\1 \2/p' \
                "$out" | head -n 1 >>"$T/ride.$s.figs"
            grep -q '^# counts: [0-9]* 0 ' "$out" ||
                echo "#   ridethrough: $s round $r: the test failed ($(sed -n 's/^# counts: //p' "$out")); $out"
        done
    done
    for s in slurm flux; do
        if [ ! -s "$T/ride.$s.figs" ]; then
            why=$(grep -m1 -E '^(ok [0-9]+ # skip|not ok)' "$T/ride.$s.1.out" 2>/dev/null | cut -c1-100)
            row_not_run "ridethrough ($s): longest extra start wait" s "<=" 0 "${why:-no figures}"
            continue
        fi
        # Figures in seconds: the extra waits, and the targets.
        awk '{ printf "%.3f %.3f\n", $2 / 1000, $1 / 1000 + 2 }' "$T/ride.$s.figs" >"$T/ride.$s.s"
        fig=$(cut -d' ' -f1 "$T/ride.$s.s" | sort -n | ride_median)
        tgt=$(cut -d' ' -f2 "$T/ride.$s.s" | sort -n | ride_median)
        row_cmp "ridethrough ($s): longest extra start wait p50" "$fig" s "<=" "$tgt" \
            "min max $(cut -d' ' -f1 "$T/ride.$s.s" | sort -n | sed -n '1p;$p' | tr '\n' ' ')over $(wc -l <"$T/ride.$s.s") rounds; ref the switchover's window $(awk '{ print $1 / 1000 }' "$T/ride.$s.figs" | tr '\n' ' ')s"
    done
}

if wanted ridethrough; then
    steal_mark
    ridethrough_scenario
    steal_note "ridethrough"
fi
