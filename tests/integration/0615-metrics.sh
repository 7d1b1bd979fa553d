#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# /metrics tells the truth: the VNI pool by state and the Fabric Manager
# queue agree with GET /v1/pool and /v1/fabric-manager for a seeded state;
# the pool's idle connections never exceed its size, and the hwcoll
# sessions (LISTEN, leader lock) are counted apart; vnib_fm_up is absent,
# not 0, on a follower that has not called the FM; vnib_build_info names
# the git revision; a schema migrated past this binary while it runs is
# warned about once; and the exposition passes `promtool check metrics`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux '
[vni]
pool = "3000-3009"
sweep_interval_s = 1'
# min_nodes = 0: only jobs that ask get hardware collectives.
set_key "$T/b.toml" min_nodes 0
broker_migrate_start "$T/b.toml"
expect_match "the start-up line says who is eligible with min_nodes = 0" \
    "$(cat "$BROKER_LOG")" 'only jobs that ask for hardware collectives'
expect_no_match "... not 'jobs of 0+ nodes'" "$(cat "$BROKER_LOG")" 'jobs of 0\+ nodes'

# ---- seed: four reservations, one of them released into quarantine -----------
http_reserve m1 'n[1-2]'
http_reserve m2 'n[1-2]'
http_reserve m3 'n[1-2]' on
expect_json "m3 asked for hardware collectives" .hwcoll.state reserved
http_reserve m4 'n[1-2]'
TOKEN=$(node_token n1) http PUT /v1/reservations/m4/nodes/n1 -d '{"cxi":"creating"}'
TOKEN=$(node_token n1) http PUT /v1/reservations/m4/nodes/n1 \
    -d '{"cxi":"created","services":[{"device":"cxi0","svc_id":7}]}'
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/m4
expect_json "m4 is released into quarantine" .quarantined true

TOKEN=$MONITOR_TOKEN http GET /v1/pool
POOL=$HTTP_BODY
expect_json "the pool has 3 active VNIs" .active 3
expect_json "... and 1 quarantined" .quarantined 1

# The figures are read every 5 s: wait for a reading that has the seed.
wait_for 15 bash -c "curl -sS '$BROKER_URL/metrics' | grep -q '^vnib_vni_pool_vnis{state=\"quarantined\"} 1\$'"
http GET /metrics
expect_status "GET /metrics" 200
for state in free active quarantined outside_pool; do
    expect_eq "vnib_vni_pool_vnis{state=\"$state\"} is what /v1/pool says" \
        "$(reply_metric "vnib_vni_pool_vnis{state=\"$state\"}")" \
        "$(printf '%s' "$POOL" | jq -r ".$state")"
done
expect_eq "vnib_vni_pool_size is /v1/pool's total" \
    "$(reply_metric vnib_vni_pool_size)" "$(printf '%s' "$POOL" | jq -r .total)"
age=$(reply_metric 'vnib_db_figures_age_seconds{figures="vni_pool"}')
expect_match "the figures' age is exported ($age s)" "$age" '^[0-9]+(\.[0-9]+)?$'

TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
FMQ=$(jq -r .queue.depth "$T/http.body")
http GET /metrics
expect_eq "vnib_fm_queue_depth is /v1/fabric-manager's queue depth" \
    "$(reply_metric vnib_fm_queue_depth)" "$FMQ"
expect_match "vnib_fm_queue_oldest_seconds is exported" \
    "$(reply_metric vnib_fm_queue_oldest_seconds)" '^[0-9]+(\.[0-9]+)?$'
expect_eq "vnib_fm_up is 1 on the replica that called the FM" "$(reply_metric vnib_fm_up)" 1

# ---- the database connections ----------------------------------------------------
size=$(reply_metric vnib_db_pool_size)
idle=$(reply_metric 'vnib_db_pool_connections{state="idle"}')
busy=$(reply_metric 'vnib_db_pool_connections{state="busy"}')
expect_match "idle ($idle) + busy ($busy) never exceed the pool size ($size)" \
    "$((idle + busy <= size))" '^1$'
expect_eq "the LISTEN session is counted apart" \
    "$(reply_metric 'vnib_db_sessions{kind="listen"}')" 1
expect_eq "... and so is the leader's lock session" \
    "$(reply_metric 'vnib_db_sessions{kind="leader"}')" 1
backends=$(psql_q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'vnibrokerd'")
expect_eq "pool + sessions is what PostgreSQL sees" "$backends" "$((idle + busy + 2))"

# ---- build info ------------------------------------------------------------------
expect_match "vnib_build_info names version, revision and schema" "$HTTP_BODY" \
    '^vnib_build_info\{version="[^"]+",revision="[^"]+",schema="[0-9]+"\} 1$'
# The binary may predate the last commit, so the revision is not compared
# with git's now: only that a build from a checkout names one.
if git -C "$(dirname "$0")" rev-parse --git-dir >/dev/null 2>&1; then
    expect_match "... a build from a git checkout names its revision" "$HTTP_BODY" \
        'revision="[0-9a-zA-Z._-]*[0-9a-f]{7}[0-9a-zA-Z._-]*"'
else
    expect_match "... a build outside git says unknown" "$HTTP_BODY" 'revision="unknown"'
fi

# ---- the exposition format -------------------------------------------------------
printf '%s\n' "$HTTP_BODY" >"$T/metrics.txt"
if command -v promtool >/dev/null; then
    if promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1; then
        ok "promtool check metrics passes"
    else
        not_ok "promtool check metrics passes"
        sed 's/^/#   /' "$T/promtool.out"
    fi
else
    ok "promtool check metrics # SKIP promtool is not installed"
fi
# Without promtool, the rules it checks first: every sample's family has
# one HELP and one TYPE, names are snake_case, counters end in _total.
lint=$(awk '
    /^# HELP / { if (help[$3]++) print "two HELP for " $3; next }
    /^# TYPE / { if (type[$3]++) print "two TYPE for " $3; t[$3] = $4
                 if ($4 == "counter" && $3 !~ /_total$/) print "counter " $3 " lacks _total"
                 next }
    /^#/ || /^$/ { next }
    { n = $1; sub(/\{.*/, "", n)
      if (n !~ /^[a-z_][a-z0-9_]*$/) print "bad name " n
      f = n; sub(/_(bucket|sum|count)$/, "", f)
      if (!(n in type) && !(f in type)) print "no TYPE for " n
      if (!(n in help) && !(f in help)) print "no HELP for " n }
' "$T/metrics.txt")
expect_eq "the exposition is well formed" "$lint" ""

# ---- a follower that has not called the FM -----------------------------------
FIRST_URL=$BROKER_URL
FIRST_LOG=$BROKER_LOG
FIRST_PID=$BROKER_PID
broker_start "$T/b.toml" || { not_ok "a second replica starts"; finish; }
SECOND_PID=$BROKER_PID
http GET /metrics
expect_eq "the follower does not lead" "$(reply_metric vnib_fm_leader)" 0
expect_no_match "vnib_fm_up is not 0 on a healthy follower before its first FM call" \
    "$HTTP_BODY" '^vnib_fm_up 0$'
expect_no_match "... it is absent (unknown)" "$HTTP_BODY" '^vnib_fm_up '

# ---- a schema newer than this binary, while running ----------------------------
BROKER_URL=$FIRST_URL
BROKER_LOG=$FIRST_LOG
psql_q "INSERT INTO schema_version (version, name) VALUES (999, '0999-future.sql')"
wait_for 15 grep -q 'database schema 999 is newer than this vnibrokerd' "$BROKER_LOG"
expect_eq "a schema migrated past this binary is warned about while running" \
    "$(grep -c 'database schema 999 is newer' "$BROKER_LOG")" 1
# The gauges thread reads the schema version, then the pool figures, at
# every reading: each time the figures' age falls back, it has read the
# version again.  Two falls: the second reading started after the warning.
pool_age_ms () {
    curl -s --max-time 5 "$BROKER_URL/metrics" |
        sed -n 's/^vnib_db_figures_age_seconds{figures="vni_pool"} //p' |
        awk '{ printf "%d\n", $1 * 1000 }'
}
last_age=$(pool_age_ms)
readings=0
read_twice_more () {
    age=$(pool_age_ms)
    [ -n "$age" ] || return 1
    [ -n "$last_age" ] && [ "$age" -lt "$last_age" ] && readings=$((readings + 1))
    last_age=$age
    [ "$readings" -ge 2 ]
}
wait_for 30 read_twice_more
expect_eq "the broker read the schema version twice more since" "$?" 0
expect_eq "... once per change, not at every reading" \
    "$(grep -c 'database schema 999 is newer' "$BROKER_LOG")" 1
http GET /readyz
expect_status "a newer schema keeps the replica ready" 200

# The metrics thread stops with the broker (and leaks nothing under ASan).
for BROKER_PID in $SECOND_PID $FIRST_PID; do
    broker_stop
    expect_eq "replica $BROKER_PID stops cleanly" "$?" 0
done

finish
