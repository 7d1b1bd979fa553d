# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# the time from a database failover to the first successful reserve: a
# promoted standby (failover) and Patroni (patroni).
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
