#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two replicas on one database, 16 clients reserving 1-4 VNIs each from a
# pool with little slack, while one replica or the other is killed with
# SIGKILL every few seconds and restarted on the same port.  The history
# client (tests/stress/history.c) records every request, retries failed
# ones on the other replica as a scheduler would, and checks the whole
# history: no VNI in two live reservations, no job with two live
# reservations (an orphaned reserve of a killed replica committing after
# the retry was answered), every acknowledged reservation kept, the pool's
# totals, and no 503 but vni_pool_exhausted (a "deadlock detected" is a
# failure).  Then the database itself: holds match the live reservations,
# one live reservation per job, no VNI held twice, and no deadlock in the
# PostgreSQL log.
#
# Then the same with jobs of many nodes whose reports go all at once and
# are written in groups, with jobs reserved with a lease, whose every
# node holds until it reports, and with jobs whose steps are reserved and
# ended with their job tokens, as Slurm's stepmgr does, and with reserves
# whose short deadlines expire inside group commits (see below).
#
# Knobs: HISTORY_SECONDS (default 36), HISTORY_THREADS (16),
# HISTORY_POOL ("2000-2023"), HISTORY_KILL_EVERY (7 s),
# HISTORY_GROUP_THREADS (6) and HISTORY_JOB_NODES (16) for the second run,
# HISTORY_LEASE_THREADS (4) for the third, HISTORY_STEPS_THREADS (6) and
# HISTORY_STEPS_SECONDS (24) for the fourth, HISTORY_DEADLINE_THREADS (16),
# HISTORY_DEADLINE_SECONDS (20) and HISTORY_DEADLINE_MS ("1-20") for the
# fifth.
. "$(dirname "$0")/lib.sh"

HISTORY=$BUILD/tests/stress/history
SECONDS_RUN=${HISTORY_SECONDS:-36}
THREADS=${HISTORY_THREADS:-16}
# 24 VNIs for 16 clients holding 1-4 each: the pool is exhausted now and
# then (a legitimate 503 vni_pool_exhausted) yet has slack, and the
# allocators contend for the same free VNIs.  A 64-VNI pool drains too
# fast at this rate to make them meet.
POOL=${HISTORY_POOL:-2000-2023}
KILL_EVERY=${HISTORY_KILL_EVERY:-7}

[ -x "$HISTORY" ] || { not_ok "the history client is built ($HISTORY)"; finish; }
pg_start || exit 1
auth_setup
umask 077
printf '%s' "$SCHED_TOKEN" >"$T/sched.token"
printf '%s' "$ADMIN_TOKEN" >"$T/admin.token"
umask 022

# This test's pool and a longer wait for a pooled connection.  Each client
# thread runs hundreds of jobs a second on the same two nodes.
replicas_ab_config "pool = \"$POOL\"" \
    -e 's/^acquire_timeout_ms = .*/acquire_timeout_ms = 2000/'
# Leases for the third run: short-lived, so that the VNIs of its presumed
# reservations cool down 10 s, not 150 (the other runs ask for none).
(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/lease.key" 2>/dev/null)
for r in A B; do
    printf '\n[lease]\nkey_file = "%s"\nttl_s = 10\nmax_skew_s = 0\n' \
        "$T/lease.key" >>"$T/$r.toml"
done
replicas_ab_start
ok "two replicas on fixed ports: $URL_A $URL_B"

# SIGKILL one replica, then the other, every KILL_EVERY seconds while the
# clients run; each comes back on its port half a second later.
history_with_kills --nodes-prefix hn
expect_match "... and said so" "$(tail -n 1 "$T/history.out")" '^history: PASS'

# ---- many nodes of the same jobs, their reports written in groups --------
# The same kills, with GROUP_THREADS clients whose jobs have JOB_NODES
# nodes each, reporting as their agents do: all at once, each node on a
# connection of its own (creating, created, then destroyed after the
# release), so that each replica writes them in groups (node report
# groups, database.report_group_max).  The checker also compares what each
# node was told with the node reports the brokers keep, and that no
# quarantine ended before every node that reported had reported destroyed.
HISTORY_THREADS_SAVED=$THREADS
THREADS=${HISTORY_GROUP_THREADS:-6}
JOB_NODES=${HISTORY_JOB_NODES:-16}
history_with_kills --nodes-prefix hg --job-prefix hg --job-nodes "$JOB_NODES"
THREADS=$HISTORY_THREADS_SAVED
expect_match "... and said so (jobs of $JOB_NODES nodes)" \
    "$(tail -n 1 "$T/history.out")" '^history: PASS'
expect_match "... having compared the nodes' reports" \
    "$(grep 'every report answered 200 is in' "$T/history.out")" '^PASS .* [1-9][0-9]* nodes, 0 differ'
largest=0
for u in "$URL_A" "$URL_B"; do
    g=$(curl -s "$u/metrics" | awk '$1 == "vnib_db_group_largest{op=\"report\"}" { print $2 }')
    [ "${g:-0}" -gt "$largest" ] && largest=$g
done
expect_match "... written in groups (the largest since the last restarts: $largest)" \
    "$largest" '^([2-9]|[1-9][0-9]+)$'

# ---- jobs started from leases: every node holds until it reports --------
# The same kills, with jobs reserved with a lease: presumed, so their
# nodes report nothing at the start and the quarantine must wait for every
# node of the reservation, reported or not (docs/node-path.md); the
# checker replays the events with every node of a presumed reservation
# holding from its reserve on.  One VNI a job: the VNIs of these jobs cool
# down for their leases' life before they are handed out again.
THREADS=${HISTORY_LEASE_THREADS:-4}
history_with_kills --nodes-prefix hl --job-prefix hl --job-nodes "$JOB_NODES" \
    --lease --vni-count 1
THREADS=$HISTORY_THREADS_SAVED
expect_match "... and said so (jobs from leases, $JOB_NODES nodes)" \
    "$(tail -n 1 "$T/history.out")" '^history: PASS'
expect_match "... every quarantine end held to every node of its presumed reservation" \
    "$(grep 'a quarantine ends only once' "$T/history.out")" \
    '^PASS .* [1-9][0-9]* presumed, 0 while a node held'

# ---- job steps reserved with the job tokens (stepmgr) --------------------
# The same kills, with STEPS_THREADS clients whose jobs each act as their
# own step manager (Slurm's stepmgr): with the job token of the job's
# reserve reply, never the scheduler's token, each job reserves 1-2 steps
# with VNIs of their own (PUT .../steps/{step}), reads them back and ends
# them (DELETE) before the job is released, a step request that got no
# reply or a 5xx going to the other replica as every request does.  The
# checker counts a step's VNIs as held from its acknowledged reserve until
# its end, beside the jobs' (no VNI in two live holders), and checks that
# every acknowledged step is recorded with its VNIs, that a retried step
# reserve got the same step back (one reservation per step, the one it was
# answered with), that no step is left live, and that every step event's
# actor is the job token ("job:JOB").  A shorter run: its time adds to
# the three above.
THREADS=${HISTORY_STEPS_THREADS:-6}
SECONDS_RUN_SAVED=$SECONDS_RUN
SECONDS_RUN=${HISTORY_STEPS_SECONDS:-24}
history_with_kills --nodes-prefix hs --job-prefix hs --steps
THREADS=$HISTORY_THREADS_SAVED
SECONDS_RUN=$SECONDS_RUN_SAVED
expect_match "... and said so (job steps with job tokens)" \
    "$(tail -n 1 "$T/history.out")" '^history: PASS'
expect_match "... having done step work" \
    "$(grep 'the run did step work' "$T/history.out")" \
    '^PASS .* [1-9][0-9]* acknowledged'
expect_match "... every step event by its job token" \
    "$(grep 'every step event is the job' "$T/history.out")" \
    '^PASS .* [1-9][0-9]* reserves and [1-9][0-9]* ends checked'
steps_db=$(psql_q "SELECT count(*) FROM reservations
                    WHERE step_id IS NOT NULL AND job_id LIKE 'hs%'")
expect_match "the database holds the run's step reservations ($steps_db)" \
    "$steps_db" '^[1-9]'
# (the checker above holds the ends too: a step the client did not end
# itself is ended by its job's release, in the scheduler's name)
expect_eq "... every one reserved by its job's token" \
    "$(psql_q "SELECT count(*) FROM events
                WHERE job_id LIKE 'hs%#%' AND action = 'reserve'
                  AND actor <> 'job:' || split_part(job_id, '#', 1)")" 0

# ---- short deadlines that expire inside group commits --------------------
# The same kills, with DEADLINE_THREADS clients, half of whose jobs send
# each reserve attempt with a Vnib-Deadline-Ms of DEADLINE_MS (a few ms
# to tens), so that under load some expire while queued for a group
# commit (or for a request worker): 503 deadline_exceeded, which the
# broker promises wrote nothing.  Half of those jobs are given up at their
# first such reply, the others retried (with a fresh deadline).  The
# checker holds every such reply to its promise: a job given up has no
# reservation (no reserve event, GET 404, nothing live at the end), a job
# acknowledged after an expired attempt was created by the acknowledging
# one (201, one reserve event).  Each replica's expired-in-a-group counter
# (vnib_db_group_expired_total{op="reserve"}) is read every half second,
# since a kill resets it: the sum of each process's last reading must not
# be 0, so that the run cannot pass without a deadline expiring inside a
# group commit.
THREADS=${HISTORY_DEADLINE_THREADS:-16}
SECONDS_RUN=${HISTORY_DEADLINE_SECONDS:-20}
DEADLINE_MS=${HISTORY_DEADLINE_MS:-1-20}
# scrape_expired TIMEOUT: each replica's "NAME START COUNT" (its process
# start time and reserves expired in a group) appended to expired.scrape.
scrape_expired () {
    for r in A B; do
        eval "u=\$URL_$r"
        curl -s --max-time "$1" "$u/metrics" 2>/dev/null | awk -v r="$r" '
            $1 == "vnib_process_start_time_seconds" { start = $2 }
            $1 == "vnib_db_group_expired_total{op=\"reserve\"}" { n = $2 }
            END { if (start != "" && n != "") print r, start, n }'
    done >>"$T/expired.scrape"
}
: >"$T/expired.scrape"
(
    while [ ! -e "$T/deadline.done" ]; do
        scrape_expired 1
        sleep 0.5
    done
) &
SCRAPER=$!
track "$SCRAPER"
history_with_kills --nodes-prefix hd --job-prefix hd --deadline-ms "$DEADLINE_MS"
scrape_expired 2
touch "$T/deadline.done"
wait "$SCRAPER"
THREADS=$HISTORY_THREADS_SAVED
SECONDS_RUN=$SECONDS_RUN_SAVED
expect_match "... and said so (short deadlines $DEADLINE_MS ms)" \
    "$(tail -n 1 "$T/history.out")" '^history: PASS'
expect_match "... every deadline_exceeded reserve held to 'nothing was written'" \
    "$(grep 'a reserve answered 503 deadline_exceeded wrote nothing' "$T/history.out")" \
    '^PASS .* [1-9][0-9]* jobs got one'
# The counter only grows in a process: its largest reading per process
# (replica, start time), summed over the processes.
in_group=$(awk '{ k = $1 " " $2; if ($3 > m[k]) m[k] = $3 }
                END { s = 0; for (k in m) s += m[k]; print s }' "$T/expired.scrape")
told_group=$(jq -r 'select(.type == "request" and .expired == "group") | .job' \
    "$T/history.jsonl" | wc -l)
expired_replies=$(jq -r 'select(.type == "request" and .expired != null) | .job' \
    "$T/history.jsonl" | wc -l)
expect_match "reserves expired inside group commits: $in_group by the replicas' counters ($told_group replies said so, of $expired_replies deadline_exceeded)" \
    "$in_group" '^[1-9][0-9]*$'
# What the database holds of the jobs given up after a deadline_exceeded
# with no attempt that may have committed unseen: nothing.
jq -r 'select(.type == "job" and .deadline_expired > 0 and (.acked | not)
               and (.ambiguous | not)) | .job' "$T/history.jsonl" >"$T/gaveup.txt"
gaveup=$(wc -l <"$T/gaveup.txt")
expect_match "jobs given up after deadline_exceeded replies ($gaveup)" "$gaveup" '^[1-9]'
expect_eq "... none has a reservation in the database" \
    "$(psql_q "SELECT count(*) FROM reservations
                WHERE job_id = ANY(string_to_array('$(paste -sd, "$T/gaveup.txt")', ','))")" 0
expect_eq "... nor an event" \
    "$(psql_q "SELECT count(*) FROM events
                WHERE job_id = ANY(string_to_array('$(paste -sd, "$T/gaveup.txt")', ','))")" 0

# ---- the database --------------------------------------------------------
expect_eq "at most one active reservation per job" \
    "$(psql_q "SELECT count(*) FROM (SELECT job_id FROM reservations
                WHERE state = 'active' GROUP BY job_id HAVING count(*) > 1) d")" 0
expect_db_consistent
reused=$(psql_q "SELECT count(*) FROM (SELECT x FROM reservations, unnest(vnis) x
                  GROUP BY x HAVING count(*) > 1) d")
expect_match "VNIs were reused many times, so the checks had teeth ($reused VNIs)" \
    "$reused" '^[1-9]'
deadlocks=$(grep -c 'deadlock detected' "$T/pglog/pg.log")
expect_eq "PostgreSQL detected no deadlock" "$deadlocks" 0
if [ "$deadlocks" != 0 ]; then
    grep -m 3 -A 3 'deadlock detected' "$T/pglog/pg.log" | sed 's/^/#   /'
fi
finish
