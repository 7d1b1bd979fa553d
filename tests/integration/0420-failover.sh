#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Database failover with a real streaming standby (deploy/README.md 3.1 and
# 3.2).  A private primary streams synchronously (synchronous_standby_names
# names the standby, synchronous_commit = on) to a standby made with
# pg_basebackup -R; two broker replicas reach them through one multi-host
# conninfo with target_session_attrs=read-write.  While the history client
# (tests/stress/history.c) reserves, reports and releases through both
# replicas, the primary fails and the standby is promoted, twice on fresh
# clusters: once killed (pg_ctl stop -m immediate), once frozen (SIGSTOP on
# the postmaster and every backend: a host that accepts connections and
# never answers, which only per-host connect timeouts get past).  The
# brokers must find the new primary by themselves.
#
# Checked: a reserve succeeds on each replica after the promote (the time
# from the promote to the first one is printed, not asserted); the history
# check passes, 503 unavailable during the failover allowed, so every
# reservation a client was told about is on the new primary and no VNI was
# held twice; and on the new primary, holds match the live reservations,
# one live reservation per job, no VNI in two, no deadlock logged.
#
# Knobs: FAILOVER_RUNS ("kill freeze"), FAILOVER_SECONDS (14, load per
# run), FAILOVER_AT (5, seconds of load before the primary fails),
# FAILOVER_THREADS (8).
. "$(dirname "$0")/lib.sh"

HISTORY=$BUILD/tests/stress/history
RUNS=${FAILOVER_RUNS:-kill freeze}
SECONDS_RUN=${FAILOVER_SECONDS:-14}
FAIL_AT=${FAILOVER_AT:-5}
THREADS=${FAILOVER_THREADS:-8}
POOL=2000-2063

[ -x "$HISTORY" ] || { not_ok "the history client is built ($HISTORY)"; finish; }
auth_setup
umask 077
printf '%s' "$SCHED_TOKEN" >"$T/sched.token"
printf '%s' "$ADMIN_TOKEN" >"$T/admin.token"
umask 022

# replica_config NAME HOSTS: lib.sh's config with a multi-host conninfo.
replica_config () {
    broker_config "$T/$1.toml" 'report_rate = 0'
    sed -i -e "s|^conninfo = .*|conninfo = \"host=$2 dbname=vnibroker user=vnib target_session_attrs=read-write\"|" \
        -e 's/^level = .*/level = "notice"/' "$T/$1.toml"
    printf '\n[vni]\npool = "%s"\n' "$POOL" >>"$T/$1.toml"
}

# one_run kill|freeze
one_run () {
    mode=$1
    rep_a=${mode}A
    rep_b=${mode}B
    pg_primary_start "$mode-pg1" || { not_ok "$mode: primary starts"; return; }
    old_dir=$PGDIR
    pg_standby_start "$mode-pg2" || { not_ok "$mode: standby streams"; return; }
    pg_sync_standby "$mode-pg2" || { not_ok "$mode: standby synchronous"; return; }
    ok "$mode: the primary streams to the standby, synchronously"

    replica_config "$rep_a" "$T/$mode-pg1.sock,$T/$mode-pg2.sock"
    replica_config "$rep_b" "$T/$mode-pg1.sock,$T/$mode-pg2.sock"
    broker_migrate "$T/$rep_a.toml" || { not_ok "$mode: migrate"; return; }
    replica_first "$rep_a" || { not_ok "$mode: replica $rep_a starts"; return; }
    replica_first "$rep_b" || { not_ok "$mode: replica $rep_b starts"; return; }
    eval "url_a=\$URL_$rep_a url_b=\$URL_$rep_b pid_a=\$PID_$rep_a pid_b=\$PID_$rep_b"

    "$HISTORY" --url "$url_a" --url "$url_b" --threads "$THREADS" \
        --seconds "$SECONDS_RUN" --nodes-prefix "h$mode" --outage \
        --attempts 60 --sched-token-file "$T/sched.token" \
        --admin-token-file "$T/admin.token" --node-key-file "$T/node.key" \
        --settle 3 --log "$T/history-$mode.jsonl" >"$T/history-$mode.out" 2>&1 &
    hpid=$!
    track "$hpid"
    sleep "$FAIL_AT"
    acked_before=$(psql_q "SELECT count(*) FROM reservations")

    case "$mode" in
    kill) as_pg_user "$PG_BIN/pg_ctl" -D "$old_dir" -m immediate -w stop >/dev/null ;;
    freeze) pg_freeze "$old_dir" ;;
    esac
    t0=$(now_ms)
    pg_promote "$mode-pg2" || { not_ok "$mode: the standby is promoted"; return; }
    # The first acknowledged reserve after the promote, through either
    # replica, for at most 30 s.
    n=0
    first=""
    while [ "$(($(now_ms) - t0))" -lt 30000 ]; do
        n=$((n + 1))
        if [ $((n % 2)) = 1 ]; then u=$url_a; else u=$url_b; fi
        if probe_reserve "$u" "$mode-$n"; then
            first=$(($(now_ms) - t0))
            break
        fi
        sleep 0.1
    done
    if [ -n "$first" ]; then
        echo "# $mode: promote to first successful reserve: $(awk "BEGIN { printf \"%.3f\", $first / 1000 }") s"
        ok "$mode: a reserve succeeded after the promote ($n tries)"
    else
        not_ok "$mode: a reserve succeeded after the promote (none in 30 s; last: $HTTP_STATUS $(head -c 200 "$T/http.body"))"
    fi
    # Each replica, not just the first to answer, found the new primary.
    n2=$((n + 1))
    if wait_for 15 probe_reserve "$url_a" "$mode-a$n2" && wait_for 15 probe_reserve "$url_b" "$mode-b$n2"; then
        ok "$mode: both replicas reserve on the new primary"
    else
        not_ok "$mode: both replicas reserve on the new primary"
    fi

    if [ "$mode" = freeze ]; then
        # The frozen primary was given up after its own connect timeout
        # and the next host tried (store.c logs a host passed over).
        expect_match "$mode: the brokers passed over the hung primary after its own timeout" \
            "$(cat "$T"/broker-"$rep_a".*.log "$T"/broker-"$rep_b".*.log)" \
            "connected to host [^ ]*/$mode-pg2\\.sock after host [^ ]*/$mode-pg1\\.sock: connection attempt timed out after 1000 ms"
    fi

    wait "$hpid"
    hrc=$?
    sed 's/^/# /' "$T/history-$mode.out"
    expect_match "$mode: the load ran across the failover ($acked_before reservations before it)" \
        "$acked_before" '^[1-9]'
    expect_eq "$mode: the history checker found every invariant held (exit status)" "$hrc" 0
    expect_match "$mode: ... and said so" "$(tail -n 1 "$T/history-$mode.out")" '^history: PASS'

    # ---- the new primary --------------------------------------------------
    expect_eq "$mode: the promoted standby is the primary" \
        "$(psql_q "SELECT pg_is_in_recovery()")" f
    expect_db_consistent "$mode"
    expect_eq "$mode: PostgreSQL detected no deadlock" \
        "$(cat "$T"/pglog/"$mode"-pg*.log | grep -c 'deadlock detected')" 0

    # Fresh clusters and replicas for the next run.
    kill -TERM "$pid_a" "$pid_b" 2>/dev/null
    { wait "$pid_a" "$pid_b"; } 2>/dev/null
    pg_resume "$old_dir"
    for d in "$old_dir" "$PGDIR"; do
        as_pg_user "$PG_BIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
    done
}

for mode in $RUNS; do
    one_run "$mode"
done
finish
