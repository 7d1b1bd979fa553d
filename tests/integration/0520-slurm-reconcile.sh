#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scheduler-side leaks (issue 11): a real slurmctld and three slurmd with
# vnib-slurm-hook as PrologSlurmctld and EpilogSlurmctld, against a real
# vnibrokerd.  Jobs that end while the broker is down have their failed
# release spooled; `vnib-slurm-hook reconcile` does nothing while the
# broker or slurmctld is down, and once both answer it releases the
# spooled jobs, the ended jobs whose release was lost, and reservations of
# jobs Slurm never knew, older than the grace period; it keeps running
# jobs and reservations within the grace period.  The node hooks are not
# configured: with no node reports, a release is final at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
# A fixed port, since the broker is restarted.
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
broker_pin_port "$T/b.toml"

slurm_hook_setup RELEASE_ATTEMPTS=1 || { not_ok "the hook"; finish; }
slurm_start prolog_ctld="$VNIB_HOOK" epilog_ctld="$VNIB_HOOK" ||
    { not_ok "slurm starts"; slurm_dump_logs; finish; }

# reconcile [ARGS]: run it as the timer does; sets RC and OUT (both streams).
reconcile () {
    OUT=$("$VNIB_HOOK" reconcile "$@" 2>&1)
    RC=$?
}
# state JOB: the state of the job's newest reservation.
state () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    jq -r '.state // .error.code // .error' <<<"$HTTP_BODY" 2>/dev/null
}
states () {
    for j in "$@"; do printf '%s ' "$(state "$j")"; done
}
vnibctl () {
    "$BUILD/vnibctl" --url "$BROKER_URL" --token-file "$T/sched.token" "$@"
}

# ---- no spool yet: reconcile does not make it (the SlurmUser's to make) -----
reconcile
expect_eq "a reconcile before anything was spooled exits 0" "$RC" 0
expect_eq "... and leaves the spool unmade (root's would lock out the SlurmUser)" \
    "$([ -e "$VNIB_SPOOL" ] && echo made || echo absent)" absent

# ---- a job that ends with the broker up spools nothing ----------------------
timeout 60 srun -N1 true
expect_eq "srun runs" "$?" 0
job=$(timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1)
wait_for 10 test "$(state "$job")" = released
expect_eq "its EpilogSlurmctld released job $job" "$(state "$job")" released
expect_eq "... and spooled nothing" "$(ls "$VNIB_SPOOL" 2>/dev/null)" ""

# ---- jobs end while the broker is down: their releases are spooled ----------
run=$(timeout 30 sbatch --parsable -N1 -o /dev/null --wrap 'sleep 300')
# These two end when $T/go appears.
end1=$(timeout 30 sbatch --parsable -N1 -o /dev/null --wrap "while [ ! -e $T/go ]; do sleep 0.2; done")
end2=$(timeout 30 sbatch --parsable -N1 -o /dev/null --wrap "while [ ! -e $T/go ]; do sleep 0.2; done")
for j in "$run" "$end1" "$end2"; do
    wait_for 20 test "$(slurm_job_state "$j")" = RUNNING
done
expect_eq "jobs $run, $end1, $end2 run with active reservations" \
    "$(states "$run" "$end1" "$end2")" "active active active "
broker_stop
touch "$T/go"
for j in "$end1" "$end2"; do
    expect_eq "job $j ends while the broker is down" "$(slurm_wait_job "$j" 30)" COMPLETED
    wait_for 20 test -f "$VNIB_SPOOL/$j"
done
expect_eq "both failed releases are spooled, one file each" \
    "$(ls "$VNIB_SPOOL" | sort -n | tr '\n' ' ')" "$end1 $end2 "
expect_eq "the spool is root's, mode 0700" "$(stat -c '%U %a' "$VNIB_SPOOL")" "root 700"
expect_match "the spool file names the job" "$(cat "$VNIB_SPOOL/$end1")" "^job $end1\$"
expect_match "... and the error" "$(cat "$VNIB_SPOOL/$end1")" "^error .+"
# slurmctld drops its hooks' output; the hook's own log file has it.
expect_match "slurmctld's EpilogSlurmctld logged RELEASE FAILED in LOG_FILE" \
    "$(grep "job $end1:" "$VNIB_HOOK_LOG" 2>&1)" \
    "err vnibroker: epilog_slurmctld job $end1: RELEASE FAILED, spooled as $VNIB_SPOOL/$end1 for 'vnib-slurm-hook reconcile'"
# The same epilog by hand, for a job Slurm never had.
out=$(SLURM_SCRIPT_CONTEXT=epilog_slurmctld SLURM_JOB_ID=900003 "$VNIB_HOOK" 2>&1)
expect_eq "EpilogSlurmctld with the broker down exits 1" "$?" 1
expect_match "... saying RELEASE FAILED and where it spooled the job" "$out" \
    "job 900003: RELEASE FAILED, spooled as $VNIB_SPOOL/900003 for 'vnib-slurm-hook reconcile'"

reconcile
expect_eq "reconcile with the broker down: exit 3" "$RC" 3
expect_match "... nothing done" "$OUT" "cannot list the broker's reservations.*nothing done"
expect_eq "... the spool is kept" "$(ls "$VNIB_SPOOL" | wc -l)" 3

broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
expect_eq "back, the broker still holds both ended jobs' reservations" \
    "$(states "$end1" "$end2")" "active active "
# end2's spool file is lost (as if the controller died mid-epilog): only
# Slurm's word that it ended is left.
rm -f "$VNIB_SPOOL/$end2"

# Reservations for jobs Slurm never knew: one made an hour ago, one now.
vnibctl reserve 900001 --uid 1000 --user alice --nodes n1 >/dev/null &&
    vnibctl reserve 900002 --uid 1000 --user alice --nodes n1 >/dev/null
expect_eq "vnibctl reserves two jobs unknown to Slurm" "$?" 0
psql_q "UPDATE reservations SET created_at = now() - interval '1 hour' WHERE job_id = '900001'"

# ---- slurmctld down: nothing is released ------------------------------------
slurm_ctld_stop
reconcile
expect_eq "reconcile with slurmctld down: exit 4" "$RC" 4
expect_match "... Slurm did not answer, nothing done" "$OUT" 'Slurm did not answer.*nothing done'
expect_eq "... every reservation is still active" \
    "$(states "$run" "$end1" "$end2" 900001 900002)" "active active active active active "
expect_eq "... the spool is kept" "$(ls "$VNIB_SPOOL" | sort -n | tr '\n' ' ')" "$end1 900003 "
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs; finish; }
expect_eq "slurmctld is back, job $run still running" "$(slurm_job_state "$run")" RUNNING

# ---- both answer: one reconcile releases the leaks, and only them ----------
reconcile --dry-run
expect_eq "reconcile --dry-run: exit 0" "$RC" 0
expect_match "... says what it would release" "$OUT" "would release job 900001: "
expect_eq "... and releases nothing" \
    "$(states "$end1" "$end2" 900001)" "active active active "

start=$(date +%s)
reconcile
expect_eq "reconcile: exit 0" "$RC" 0
echo "$OUT" | sed 's/^/# /'
expect_eq "the spooled job $end1 is released, within one run ($(($(date +%s) - start)) s)" \
    "$(state "$end1")" released
expect_match "... logged with the reason" "$OUT" \
    "released job $end1: EpilogSlurmctld could not release it; the job is COMPLETED in Slurm"
expect_match "the spooled job 900003, which the broker never knew, counts as done" "$OUT" \
    "job 900003 has no reservation to release: EpilogSlurmctld could not release it; Slurm no longer lists the job"
expect_eq "... and both spool files are gone" "$(ls "$VNIB_SPOOL")" ""
expect_eq "job $end2, ended in Slurm but never released, is released" "$(state "$end2")" released
expect_match "... because Slurm says it ended" "$OUT" "released job $end2: the job is COMPLETED in Slurm"
expect_eq "job 900001, unknown to Slurm and reserved an hour ago, is released" "$(state 900001)" released
expect_match "... because Slurm does not know it" "$OUT" \
    'released job 900001: Slurm does not know the job; reserved 3[0-9]{3} s ago'
expect_eq "job 900002, unknown to Slurm but within the grace period, is kept" "$(state 900002)" active
expect_match "... saying so" "$OUT" 'kept job 900002: .*grace 300 s'
expect_eq "the running job $run is kept" "$(state "$run")" active
expect_match "a summary line" "$OUT" '5 active reservations, 2 spooled releases: 4 released, 1 kept, 0 failed'

reconcile
expect_eq "a second reconcile releases nothing more" "$RC:$(states "$run" 900002)" "0:active active "

# The grace period is a setting: with 0, the new reservation goes too,
# but only if its token is the one named in RECONCILE_CREATED_BY.
slurm_hook_set RECONCILE_GRACE 0
slurm_hook_set RECONCILE_CREATED_BY other-cluster
reconcile
expect_eq "RECONCILE_CREATED_BY=other-cluster leaves job 900002 (made by slurmctld)" \
    "$RC:$(state 900002)" "0:active"
slurm_hook_set RECONCILE_CREATED_BY slurmctld
reconcile
expect_eq "with RECONCILE_GRACE=0, job 900002 is released" "$(state 900002)" released
expect_eq "... the running job still is not" "$(state "$run")" active

# A spool that others could write is refused: it names jobs to release.
chmod 0777 "$VNIB_SPOOL"
reconcile
chmod 0700 "$VNIB_SPOOL"
expect_eq "a spool writable by others: exit 2" "$RC" 2
expect_match "... saying why" "$OUT" "$VNIB_SPOOL is writable by others; refusing"

[ "$FAILED" -eq 0 ] || slurm_dump_logs
slurm_stop
finish
