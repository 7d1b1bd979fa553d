#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# switch/vnib holds the queue briefly, not forever, while the broker is
# unreachable (issue 45, part 2; Slurm 25.11 and later, where slurmctld
# asks switch_p_job_start(job, test_only) before it starts a job).
# vnib_broker_hold_s=20, the free count polled every 200 ms, a pool of
# two VNIs, vnib_outage=fail (the default).
#  1. The broker killed (-9) for a few seconds: a job that needs no VNI
#     starts at once; a one-VNI job stays PENDING (reason Resources) and
#     slurmctld's log names the broker it waits for; the broker started
#     again, the job starts at once (the plugin asks for a scheduling
#     pass), gets a VNI and completes, and the hold never ran out.
#  2. The broker killed for longer than the hold: a one-VNI job stays
#     PENDING within the hold, is admitted once the hold has run out (20
#     s after the broker's last answer, not before) and gets the outage
#     policy: its step is refused (Error configuring interconnect), the
#     job FAILED; slurmctld's log says the hold ran out.
#  3. A fresh slurmctld whose first poll fails (the broker still down):
#     held for the hold counted from that first poll, then admitted, not
#     held forever.  With the broker back the queue moves again.
# The figures (how long each job waited) are printed, not asserted; the
# only bounds on time are the hold's own ("not before") and generous
# waits.  On older releases slurmctld never asks, so the script is
# skipped there (a job starts and its first step meets the outage).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

slurm_require_admission

HOLD=20
pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3001)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"

slurm_vnib_up vnib_free_poll_ms=200,vnib_broker_hold_s=$HOLD "vnib_broker_hold_s=$HOLD"

cat >"$T/out/job.sh" <<'EOS'
#!/bin/sh
srun -N1 -n1 sh -c 'echo "VNIS=$SLINGSHOT_VNIS"; sleep 2'
EOS
# A job without steps: nothing in it asks the broker.
cat >"$T/out/nostep.sh" <<'EOS'
#!/bin/sh
echo RAN
EOS
chmod 755 "$T/out/job.sh" "$T/out/nostep.sh"
# submit NAME SCRIPT [SBATCH ARGS...]: its id
submit () {
    local name=$1 script=$2
    shift 2
    runuser -u nobody -- timeout 10 sbatch --parsable -N1 -n1 \
        -o "$T/out/$name.out" "$@" "$T/out/$script"
}
reason () { timeout 5 squeue -h -j "$1" -o '%r' 2>/dev/null; }
# started JOBID: its start time, in seconds since the epoch
started () { date -d "$(timeout 5 squeue -h -t all -j "$1" -o '%S')" +%s; }
_left_pending () {
    case "$(slurm_job_state "$1")" in PENDING | "") return 1 ;; esac
}
_pool_free () {
    [ "$(curl -s "$BROKER_URL/v1/pool" -H "Authorization: Bearer $(cat "$T/sched.token")" |
        jq -r '.free')" = 2 ]
}
broker_kill () {
    kill -KILL "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID" 2>/dev/null
}
log=$VNIB_SLURM_LOGS/slurmctld.log

# 1. A short outage: the job waits, and starts when the broker is back.
wait_for 30 _pool_free || echo "# the pool did not show 2 free; going on"
broker_kill
t_kill=$(date +%s)
sleep 1
z=$(submit zero nostep.sh --network=no_vni)
j1=$(submit one job.sh --network=vnis=1)
[ -n "$z" ] && [ -n "$j1" ] && ok "broker killed; jobs submitted ($z no VNI, $j1 one VNI)" ||
    not_ok "broker killed; jobs submitted ($z no VNI, $j1 one VNI)"
expect_eq "the job that needs no VNI is not held: it runs and completes" \
    "$(slurm_wait_job "$z" 15)" COMPLETED
sleep 3
expect_eq "the one-VNI job waits for the broker: PENDING" "$(slurm_job_state "$j1")" PENDING
expect_eq "... with the reason Resources" "$(reason "$j1")" Resources
expect_match "... and slurmctld's log names the broker and why" \
    "$(grep "JobId=$j1 waits for the broker" "$log" | tail -n 1)" \
    "JobId=$j1 waits for the broker at $BROKER_URL: .*\(up to $HOLD s after its last answer, vnib_broker_hold_s\)"
expect_match "... and says once that jobs wait for it" \
    "$(grep -c "jobs that need VNIs wait for the broker at $BROKER_URL up to $HOLD s" "$log")" '^[1-9]'
expect_eq "the job that needs no VNI never waited for the broker" \
    "$(grep -c "JobId=$z waits for" "$log")" 0
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
t_back=$(date +%s)
wait_for 30 _left_pending "$j1"
t_seen=$(date +%s)
st=$(slurm_job_state "$j1")
case "$st" in RUNNING | COMPLETED) ok "with the broker back, job $j1 starts ($st)" ;;
    *) not_ok "with the broker back, job $j1 starts ($st)"; slurm_dump_logs 30 ;; esac
echo "# job $j1: broker down $((t_back - t_kill)) s; seen started $((t_seen - t_back)) s after the broker restarted (started at +$(($(started "$j1") - t_kill)) s)"
expect_eq "job $j1 completes" "$(slurm_wait_job "$j1" 40)" COMPLETED
expect_match "... and its task had a VNI of the pool" "$(cat "$T/out/one.out")" '^VNIS=300[01]$'
expect_eq "the hold never ran out in a short outage" \
    "$(grep -c 'has not answered for' "$log")" 0

# 2. A long outage: the job waits for the hold, then the outage policy.
wait_for 30 _pool_free || echo "# the pool did not show 2 free; going on"
broker_kill
t_kill=$(date +%s)
sleep 1
j2=$(submit two job.sh --network=vnis=1)
[ -n "$j2" ] && ok "broker killed for longer than the hold; job $j2 submitted" ||
    not_ok "broker killed for longer than the hold; job $j2 submitted"
sleep 6
expect_eq "within the hold, job $j2 is PENDING" "$(slurm_job_state "$j2")" PENDING
expect_eq "... with the reason Resources" "$(reason "$j2")" Resources
expect_eq "job $j2 is admitted after the hold and fails: vnib_outage=fail" \
    "$(slurm_wait_job "$j2" $((HOLD + 40)))" FAILED
t_start=$(started "$j2")
echo "# job $j2: admitted $((t_start - t_kill)) s after the broker was killed (hold $HOLD s)"
# The last answer began at most one poll (0.2 s) before the kill; Slurm's
# start time is in whole seconds.
[ "$t_start" -ge $((t_kill + HOLD - 1)) ] &&
    ok "... not before the hold ran out (admitted at +$((t_start - t_kill)) s)" ||
    not_ok "... not before the hold ran out (admitted at +$((t_start - t_kill)) s)"
expect_match "... its step was refused: Error configuring interconnect" \
    "$(cat "$T/out/two.out")" 'Error configuring interconnect'
expect_match "slurmctld's log says the hold ran out, and which policy applies" \
    "$(grep 'has not answered for' "$log" | tail -n 1)" \
    "the broker at $BROKER_URL has not answered for $HOLD s \(vnib_broker_hold_s; .*\): jobs start without waiting for it, and vnib_outage=fail applies at their steps"

# 3. A fresh slurmctld whose first poll fails: held, not forever.
slurm_ctld_stop
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 30; finish; }
t_sub=$(date +%s)
j3=$(submit three job.sh --network=vnis=1)
[ -n "$j3" ] && ok "slurmctld restarted with the broker still down; job $j3 submitted" ||
    not_ok "slurmctld restarted with the broker still down; job $j3 submitted"
sleep 6
expect_eq "a fresh slurmctld without the broker's answer holds job $j3: PENDING" \
    "$(slurm_job_state "$j3")" PENDING
expect_match "... and its log names the broker and the poll's error" \
    "$(grep "JobId=$j3 waits for the broker" "$log" | tail -n 1)" \
    "JobId=$j3 waits for the broker at $BROKER_URL: .*[a-z].* \(up to $HOLD s"
expect_eq "job $j3 is admitted after the hold and fails: vnib_outage=fail" \
    "$(slurm_wait_job "$j3" $((HOLD + 40)))" FAILED
t_start=$(started "$j3")
echo "# job $j3: admitted $((t_start - t_sub)) s after its submission to a fresh slurmctld (hold $HOLD s)"
[ "$t_start" -ge $((t_sub + HOLD - 1)) ] &&
    ok "... not before the hold, counted from the first poll, ran out (+$((t_start - t_sub)) s)" ||
    not_ok "... not before the hold, counted from the first poll, ran out (+$((t_start - t_sub)) s)"

# With the broker back, the queue moves again.
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
j4=$(submit four job.sh --network=vnis=1)
expect_eq "with the broker back, a new job ($j4) completes" "$(slurm_wait_job "$j4" 40)" COMPLETED
expect_match "... with a VNI of the pool" "$(cat "$T/out/four.out")" '^VNIS=300[01]$'
finish
