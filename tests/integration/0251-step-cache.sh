#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node-fetch cache for job steps (a node's GET of
# /v1/reservations/{job}/steps/{step}), as 0250 is for jobs.  Broker A
# (node_cache_ms = 60 s) reads a step once from the database however many
# of its nodes fetch it (counted by PostgreSQL's pg_stat_statements and by
# A's vnib_node_cache_*_total{kind="step"}), where broker C (node_cache_ms
# = 0) reads it every time; a node outside the step, in the job or not, is
# refused by A's cache as C refuses it; A forgets a step it releases or
# reserves again, and the steps of a job it releases; schedulers always
# read the database.  Broker B (node_cache_ms = 2.5 s) answers from its
# cache after another broker's change for at most node_cache_ms, and the
# reports a node makes from such a stale answer (naming the step
# reservation it fetched) are refused.
. "$(dirname "$0")/lib.sh"

# The database's own count of the step reads, when PostgreSQL has the
# module (Debian's postgresql package does).
STMTS=0
if [ -f "$PG_BIN/../lib/pg_stat_statements.so" ]; then
    PG_OPTS="-c shared_preload_libraries=pg_stat_statements"
    STMTS=1
fi
pg_start || exit 1
if [ "$STMTS" = 1 ] && ! psql_q "CREATE EXTENSION pg_stat_statements" >/dev/null; then
    STMTS=0
fi
broker_config "$T/a.toml" 'node_cache_ms = 60000'
broker_config "$T/b.toml" 'node_cache_ms = 2500'
broker_config "$T/c.toml" 'node_cache_ms = 0'
broker_migrate "$T/a.toml" || { not_ok "migrate"; finish; }
broker_start_as A "$T/a.toml"
broker_start_as B "$T/b.toml"
broker_start_as C "$T/c.toml"

# fetch URL NODE [JOB]: NODE's GET of step 0 of JOB (s1) as "STATUS STATE
# ID", or "STATUS CODE MESSAGE" for a refusal.
fetch () {
    f_body=$(curl -s -w '\n%{http_code}' \
        -H "Authorization: Bearer $(node_token "$2")" \
        "$1/v1/reservations/${3:-s1}/steps/0")
    printf '%s %s\n' "$(printf '%s' "$f_body" | tail -n 1)" \
        "$(printf '%s' "$f_body" | sed '$d' |
            jq -r 'if .error then "\(.error.code) \(.error.message)" else "\(.state) \(.id)" end')"
}

# step_reads: the step reads (store_step_get's statement, whose NULLs
# pg_stat_statements shows as parameters) the database ran.
step_reads () {
    psql_q "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
             WHERE query LIKE '%CROSS JOIN LATERAL vnib_step_row(%'
               AND query NOT LIKE '%pg_stat_statements%'"
}

# counters URL: "STEP-HITS STEP-MISSES JOB-HITS JOB-MISSES" of URL's /metrics.
counters () {
    curl -s "$1/metrics" | awk '
        $1 == "vnib_node_cache_hits_total{kind=\"step\"}" { sh = $2 }
        $1 == "vnib_node_cache_misses_total{kind=\"step\"}" { sm = $2 }
        $1 == "vnib_node_cache_hits_total{kind=\"job\"}" { jh = $2 }
        $1 == "vnib_node_cache_misses_total{kind=\"job\"}" { jm = $2 }
        END { print sh + 0, sm + 0, jh + 0, jm + 0 }'
}

# delta "A0 B0 ..." "A1 B1 ...": the differences, space-separated.
delta () {
    printf '%s\n%s\n' "$1" "$2" | awk 'NR == 1 { split($0, a) }
        NR == 2 { for (i = 1; i <= NF; i++) printf "%s%d", (i > 1 ? " " : ""), $i - a[i]; print "" }'
}

# sched URL METHOD PATH [BODY]: a scheduler's request.
sched () {
    BROKER_URL=$1 TOKEN=$SCHED_TOKEN http "$2" "$3" ${4:+-d "$4"}
}

# report URL NODE RES-ID [JOB]: NODE's report "creating" on step 0 of JOB
# (s1) naming step reservation RES-ID: "STATUS CODE".
report () {
    r_body=$(curl -s -w '\n%{http_code}' -X PUT \
        -H "Authorization: Bearer $(node_token "$2")" \
        -H 'Content-Type: application/json' \
        -d "{\"cxi\":\"creating\",\"reservation_id\":$3}" \
        "$1/v1/reservations/${4:-s1}/steps/0/nodes/$2")
    printf '%s %s\n' "$(printf '%s' "$r_body" | tail -n 1)" \
        "$(printf '%s' "$r_body" | sed '$d' | jq -r '.error.code // "ok"')"
}

# storm URL: each of the step's four nodes fetches it five times; prints
# how many answers were "200 active $SID".
storm () {
    s_good=0
    for _ in 1 2 3 4 5; do
        for n in n1 n2 n3 n4; do
            [ "$(fetch "$1" "$n")" = "200 active $SID" ] && s_good=$((s_good + 1))
        done
    done
    echo "$s_good"
}

sched "$URL_A" POST /v1/reservations '{"job_id":"s1","uid":1,"user":"u","nodes":"n[1-8]"}'
expect_status "job s1 on n[1-8] is reserved" 201
sched "$URL_A" PUT /v1/reservations/s1/steps/0 '{"nodes":"n[1-4]","vni_count":1}'
expect_status "its step 0 on n[1-4] is reserved" 201
SID=$(jq .id "$T/http.body")
# A node's fetch of the job itself, which A keeps beside the step's.
JID=$(curl -s -H "Authorization: Bearer $(node_token n5)" "$URL_A/v1/reservations/s1" | jq .id)
expect_match "n5 reads job s1 through A ($JID)" "$JID" '^[0-9]+$'

# ---- a step's fetch storm: one database read, the rest from memory ------
r0=$([ "$STMTS" = 1 ] && step_reads)
c0=$(counters "$URL_A")
expect_eq "A: 20 fetches by the step's 4 nodes all get the active step" "$(storm "$URL_A")" 20
c1=$(counters "$URL_A")
if [ "$STMTS" = 1 ]; then
    expect_eq "A: the database read the step once for those 20 (pg_stat_statements)" \
        "$(($(step_reads) - r0))" 1
else
    skip "pg_stat_statements is not installed: the database's count of step reads"
fi
expect_eq "A counts 19 step hits, 1 step miss, and no job fetch" "$(delta "$c0" "$c1")" "19 1 0 0"
# The same with the cache off: the count sees every read.
r0=$([ "$STMTS" = 1 ] && step_reads)
c0=$(counters "$URL_C")
expect_eq "C (cache off): the same 20 fetches get the active step" "$(storm "$URL_C")" 20
if [ "$STMTS" = 1 ]; then
    expect_eq "C: the database read the step 20 times" "$(($(step_reads) - r0))" 20
else
    skip "pg_stat_statements is not installed: the database's count of step reads"
fi
expect_eq "C counts 20 step misses, no hit" "$(delta "$c0" "$(counters "$URL_C")")" "0 20 0 0"

# ---- refusals: the step's own node list, as the database judges ---------
r0=$([ "$STMTS" = 1 ] && step_reads)
for n in n5 n9; do
    where="in the job"
    [ "$n" = n9 ] && where="nor in the job"
    got=$(fetch "$URL_A" "$n")
    expect_match "A refuses $n, not in the step ($where), from its cache" \
        "$got" "^403 forbidden node $n is not in step 0 of job s1's node list\$"
    expect_eq "... exactly as C does from the database" "$got" "$(fetch "$URL_C" "$n")"
done
if [ "$STMTS" = 1 ]; then
    expect_eq "A's refusals read nothing (C's two did)" "$(($(step_reads) - r0))" 2
else
    skip "pg_stat_statements is not installed: the database's count of step reads"
fi
r0=$([ "$STMTS" = 1 ] && step_reads)
sched "$URL_A" GET /v1/reservations/s1/steps/0
expect_json "a scheduler's read on A" .state active
if [ "$STMTS" = 1 ]; then
    expect_eq "... reads the database" "$(($(step_reads) - r0))" 1
else
    skip "pg_stat_statements is not installed: the database's count of step reads"
fi

# ---- A's own changes: forgotten at once -----------------------------------
sched "$URL_A" DELETE /v1/reservations/s1/steps/0
expect_status "step 0 released through A" 202
expect_eq "A's next answer is the release, not its cache" "$(fetch "$URL_A" n1)" "200 released $SID"
sched "$URL_A" PUT /v1/reservations/s1/steps/0 '{"nodes":"n[1-4]","vni_count":1}'
SID2=$(jq .id "$T/http.body")
expect_eq "step 0 reserved again: A answers the new reservation" "$(fetch "$URL_A" n1)" "200 active $SID2"
# Released through B: A, which did not see it, keeps answering from its
# cache (and a scheduler reading on A sees the release) ...
sched "$URL_B" DELETE /v1/reservations/s1/steps/0
expect_eq "released through B: A still answers from its cache" "$(fetch "$URL_A" n1)" "200 active $SID2"
sched "$URL_A" GET /v1/reservations/s1/steps/0
expect_json "... while a scheduler's read on A is the database's" .state released
# ... until A reserves the step itself.
sched "$URL_A" PUT /v1/reservations/s1/steps/0 '{"nodes":"n[1-4]","vni_count":1}'
SID3=$(jq .id "$T/http.body")
expect_eq "reserved again through A: A forgets what it had" "$(fetch "$URL_A" n1)" "200 active $SID3"
# The job's release through A takes its steps out of A's cache too.
sched "$URL_A" DELETE /v1/reservations/s1
expect_status "job s1 released through A" 200
expect_eq "A's next answer on the step is its release with the job" \
    "$(fetch "$URL_A" n1)" "200 released $SID3"

# ---- another broker's change: seen within node_cache_ms -------------------
sched "$URL_A" POST /v1/reservations '{"job_id":"s2","uid":1,"user":"u","nodes":"n[1-8]"}'
sched "$URL_A" PUT /v1/reservations/s2/steps/0 '{"nodes":"n[1-4]","vni_count":1}'
expect_status "job s2 and its step 0 are reserved" 201
S2=$(jq .id "$T/http.body")
t0=$(($(date +%s%N) / 1000000))
expect_eq "B reads step 0 of s2 (and keeps it)" "$(fetch "$URL_B" n1 s2)" "200 active $S2"
sched "$URL_A" DELETE /v1/reservations/s2/steps/0
expect_eq "released through A: B may answer from its cache for a moment" \
    "$(fetch "$URL_B" n1 s2)" "200 active $S2"
expect_eq "but the report naming that step reservation is refused (job_not_active)" \
    "$(report "$URL_B" n1 "$S2" s2)" "409 job_not_active"
sched "$URL_A" PUT /v1/reservations/s2/steps/0 '{"nodes":"n[1-4]","vni_count":1}'
S2B=$(jq .id "$T/http.body")
expect_eq "reserved again through A: B may still answer the old one" \
    "$(fetch "$URL_B" n1 s2)" "200 active $S2"
expect_eq "... and a report naming it is refused (stale_reservation)" \
    "$(report "$URL_B" n1 "$S2" s2)" "409 stale_reservation"
b_sees_new () {
    [ "$(fetch "$URL_B" n1 s2)" = "200 active $S2B" ]
}
wait_for 10 b_sees_new
t1=$(($(date +%s%N) / 1000000))
expect_eq "B answers the new step reservation" "$(fetch "$URL_B" n1 s2)" "200 active $S2B"
expect_match "... within node_cache_ms (2.5 s, and 1 s for the requests) of its read ($((t1 - t0)) ms)" \
    "$((t1 - t0 <= 3500))" '^1$'
expect_eq "a report naming the new one is taken" "$(report "$URL_B" n1 "$S2B" s2)" "200 ok"
finish
