#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A step never fails for want of VNIs while its job holds VNIs (issue 45,
# part 0).  The broker's pool holds two VNIs; a reservation made at the
# broker outside Slurm (a scheduler's, on n3) holds one of them.
#  1. Job A (vnis=1) takes the other at its first step; its steps ask a
#     VNI of their own (srun --network=step_vnis=1) on the exhausted
#     pool: each runs on the job's VNI alone (vnib_step_fallback=job, the
#     default), with VNIB_STEP_FALLBACK=job in its tasks' environment,
#     one line on srun's output, and slurmctld's log naming the job, the
#     step and why (the broker's refusal; on 25.11 and later the plugin's
#     free count may answer first).  A step asking step_fallback=fail
#     fails (srun exits non-zero).
#  2. Job C (vnis=0: no VNI of its own) whose step asks one on the
#     exhausted pool: before 25.11 the step waits (srun retries it) and
#     runs once the reservation outside Slurm is released; on 25.11 and
#     later, which retry no step a switch plugin refuses, it fails and
#     slurmctld's log names the pool.  A's last step, asking
#     step_fallback=wait, waits as well before 25.11 (and gets its own
#     VNI), and runs on the job's at once on 25.11 and later.
#  3. (24.05 and later) A --stepmgr job submitted while the pool is
#     exhausted completes once VNIs come back: on 25.11 and later it
#     waits PENDING (admission); before, it starts, its reservation at
#     its start is refused, and it runs without a stepmgr (slurmctld's
#     log says so), its step retried by srun until VNIs are free.  A
#     stepmgr job that takes the pool's last VNI: its step's own VNI is
#     refused at the stepmgr, and the step runs on the job's there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3001)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"

slurm_switch_setup vnib_free_poll_ms=200,vnib_broker_hold_s=0 ||
    { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chmod 777 "$T/out"
flags=Alloc
[ "$VNIB_SLURM_RELEASE" -ge 2405 ] && flags=Contain
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
    plugin_dir="$VNIB_PLUGIN_DIR" prolog_flags=$flags ||
    { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
ok "slurmctld and slurmd n1-n3 are up with switch/vnib, a pool of two VNIs"
log=$VNIB_SLURM_LOGS/slurmctld.log

# hold JOB N: a reservation of N VNIs outside Slurm (on n3); release JOB.
hold () {
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":65534,\"user\":\"nobody\",\"nodes\":\"n3\",\"vni_count\":$2}"
    case "$HTTP_STATUS" in 200 | 201) ok "VNIs held outside Slurm ($1: $2)" ;;
        *) not_ok "VNIs held outside Slurm ($1: $2): $HTTP_STATUS $HTTP_BODY" ;; esac
}
unhold () {
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$1"
    expect_match "the reservation outside Slurm is released ($1)" "$HTTP_STATUS" '^20[02]$'
}
pool_free () {
    TOKEN=$SCHED_TOKEN http GET /v1/pool
    jq -r .free <<<"$HTTP_BODY"
}
_free_is () { [ "$(pool_free)" = "$1" ]; }
submit () {
    local name=$1
    shift
    runuser -u nobody -- timeout 10 sbatch --parsable -N1 -n1 -o "$T/out/$name.out" "$@"
}
running () { [ "$(slurm_job_state "$1")" = RUNNING ]; }

hold 900001 1

# ---- 1. steps on the job's VNI alone; step_fallback=fail fails -------------
cat >"$T/out/a.sh" <<EOS
#!/bin/sh
srun -N1 -n1 --network=step_vnis=1 sh -c 'echo "S0 VNIS=\$SLINGSHOT_VNIS FB=\$VNIB_STEP_FALLBACK"'
srun -N1 -n1 --network=step_vnis=1 sh -c 'echo "S1 VNIS=\$SLINGSHOT_VNIS FB=\$VNIB_STEP_FALLBACK"'
srun -N1 -n1 --network=step_vnis=1,step_fallback=fail true
echo "S2 rc=\$?"
while [ ! -e $T/out/go_a ]; do sleep 0.2; done
srun -N1 -n1 --network=step_vnis=1,step_fallback=wait sh -c 'echo "S3 VNIS=\$SLINGSHOT_VNIS FB=\$VNIB_STEP_FALLBACK"'
EOS
chmod 755 "$T/out/a.sh"
a=$(submit a -w n1 --network=vnis=1 "$T/out/a.sh")
_a_waits () { grep -q '^S2 rc=' "$T/out/a.out" 2>/dev/null; }
wait_for 60 _a_waits ||
    { not_ok "job $a ran its first three steps"; cat "$T/out/a.out" | sed 's/^/# /'; slurm_dump_logs 30; }
J=$(TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$a" && jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
expect_match "job $a holds one VNI of the pool" "$J" '^300[01]$'
expect_eq "the pool has no VNI free" "$(pool_free)" 0
expect_eq "step 0 ran on the job's VNI alone, told in its environment" \
    "$(grep '^S0 ' "$T/out/a.out")" "S0 VNIS=$J FB=job"
expect_eq "step 1 too" "$(grep '^S1 ' "$T/out/a.out")" "S1 VNIS=$J FB=job"
expect_eq "srun's output says so, once per step" \
    "$(grep -c "^switch/vnib: step $a\.[01]: the VNI pool had none free for the step's own VNIs; it runs on its job's VNIs alone" "$T/out/a.out")" 2
for s in 0 1; do
    # Why: the broker's refusal, or (25.11 and later, where slurmctld
    # keeps the broker's free count) the count's own answer, given
    # before asking the broker.
    grep -Eq "switch/vnib: JobId=$a StepId=$s: its own 1 VNI\(s\) cannot be had \((step $a\.$s: the broker refused the reservation \(503 vni_pool_exhausted: VNI pool exhausted|[0-9]+ VNI\(s\) free and not promised to jobs starting\)).*the step runs on its job's VNIs alone \(vnib_step_fallback=job\)" "$log" &&
        ok "slurmctld's log names job $a, step $s and why (the broker's refusal, or its free count)" ||
        { not_ok "slurmctld's log names job $a, step $s and why"; grep "JobId=$a " "$log" | tail -n 5 | sed 's/^/# /'; }
done
expect_eq "step 0's reservation holds no VNI of its own" \
    "$(TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$a/steps/0" && jq -r '.vnis | length' <<<"$HTTP_BODY")" 0
expect_match "the step with step_fallback=fail failed" "$(grep '^S2 ' "$T/out/a.out")" '^S2 rc=[1-9][0-9]*$'
grep -q "switch/vnib: JobId=$a StepId=2: .*vni_pool_exhausted.*; the step fails (vnib_step_fallback=fail)" "$log" &&
    ok "... and slurmctld's log says why" || not_ok "... and slurmctld's log says why"

# ---- 2. a job without VNIs whose step needs one; step_fallback=wait --------
cat >"$T/out/c.sh" <<'EOS'
#!/bin/sh
srun -N1 -n1 --network=step_vnis=1 sh -c 'echo "C VNIS=$SLINGSHOT_VNIS"'
EOS
chmod 755 "$T/out/c.sh"
c=$(submit c -w n2 --network=vnis=0 "$T/out/c.sh")
touch "$T/out/go_a"
if [ "$VNIB_SLURM_RELEASE" -ge 2511 ]; then
    expect_eq "job $c (no VNI of its own) fails: nothing retries its step" \
        "$(slurm_wait_job "$c" 30)" FAILED
    grep -q "switch/vnib: JobId=$c StepId=0: .*(503 vni_pool_exhausted: VNI pool exhausted.*its job holds no VNIs to run on; the step fails: Slurm 25.11 and later retry no step" "$log" &&
        ok "... and slurmctld's log names the pool" ||
        { not_ok "... and slurmctld's log names the pool"; grep "JobId=$c " "$log" | tail -n 3 | sed 's/^/# /'; }
    expect_eq "job $a's step_fallback=wait step ran at once on the job's VNI (wait is job here)" \
        "$(slurm_wait_job "$a" 30) $(grep '^S3 ' "$T/out/a.out")" "COMPLETED S3 VNIS=$J FB=job"
    unhold 900001
else
    sleep 3
    expect_eq "job $c runs, its step waiting for a VNI" "$(slurm_job_state "$c")" RUNNING
    expect_eq "... which it has not got" "$(grep -c '^C ' "$T/out/c.out")" 0
    expect_eq "job $a's step_fallback=wait step waits too" "$(grep -c '^S3 ' "$T/out/a.out")" 0
    unhold 900001
    # (srun retries a busy step every 60-70 s, or when a step of the job ends)
    expect_eq "job $c completes once VNIs are free" "$(slurm_wait_job "$c" 200)" COMPLETED
    expect_match "... its step with a VNI of its own" "$(grep '^C ' "$T/out/c.out")" '^C VNIS=300[01]$'
    expect_eq "job $a completes" "$(slurm_wait_job "$a" 200)" COMPLETED
    expect_match "... its step_fallback=wait step with its own VNI and the job's" \
        "$(grep '^S3 ' "$T/out/a.out")" "^S3 VNIS=300[01],$J FB=\$"
    grep -q "srun: Job $c step creation temporarily disabled, retrying" "$T/out/c.out" &&
        ok "srun said it retries the step" || not_ok "srun said it retries the step"
fi
_all_free () { _free_is 2; }
wait_for 40 _all_free
expect_eq "every VNI is free again" "$(pool_free)" 2

# ---- 3. a stepmgr job on an exhausted pool ----------------------------------
if [ "$VNIB_SLURM_RELEASE" -ge 2405 ]; then
    hold 900002 2
    cat >"$T/out/s.sh" <<'EOS'
#!/bin/sh
srun -N1 -n1 sh -c 'echo "S VNIS=$SLINGSHOT_VNIS"'
EOS
    chmod 755 "$T/out/s.sh"
    s=$(submit s --stepmgr --network=vnis=1 "$T/out/s.sh")
    sleep 4
    if [ "$VNIB_SLURM_RELEASE" -ge 2511 ]; then
        expect_eq "the stepmgr job waits PENDING while the pool is exhausted" \
            "$(slurm_job_state "$s")" PENDING
    else
        expect_eq "the stepmgr job starts" "$(slurm_job_state "$s")" RUNNING
        grep -q "switch/vnib: JobId=$s: the job's reservation at its start was refused (.*vni_pool_exhausted.*); it runs without a stepmgr" "$log" &&
            ok "... its reservation refused at its start, it runs without a stepmgr (slurmctld's log)" ||
            { not_ok "... its reservation refused at its start, it runs without a stepmgr (slurmctld's log)"; grep "JobId=$s" "$log" | tail -n 3 | sed 's/^/# /'; }
        expect_eq "... its step waits for VNIs" "$(grep -c '^S ' "$T/out/s.out")" 0
    fi
    unhold 900002
    expect_eq "the stepmgr job completes once VNIs come back" "$(slurm_wait_job "$s" 150)" COMPLETED
    expect_match "... its step with the job's VNI" "$(grep '^S ' "$T/out/s.out")" '^S VNIS=300[01]$'

    # A stepmgr job that holds the pool's last VNI: its step's own VNI,
    # refused at the stepmgr, falls back there on the job's.
    wait_for 40 _all_free
    hold 900003 1
    cat >"$T/out/m.sh" <<'EOS'
#!/bin/sh
srun -N1 -n1 --network=step_vnis=1 sh -c 'echo "M VNIS=$SLINGSHOT_VNIS FB=$VNIB_STEP_FALLBACK"'
EOS
    chmod 755 "$T/out/m.sh"
    m=$(submit m --stepmgr --network=vnis=1 "$T/out/m.sh")
    expect_eq "a stepmgr job whose step finds no VNI of its own completes" \
        "$(slurm_wait_job "$m" 60)" COMPLETED
    M=$(TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$m" && jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
    expect_eq "... its step on the job's VNI alone" "$(grep '^M ' "$T/out/m.out")" "M VNIS=$M FB=job"
    expect_eq "... reserved by the stepmgr with the job's token" \
        "$(TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$m&action=reserve" &&
            jq -r '.events[] | select(.step_id != null) | .actor' <<<"$HTTP_BODY" | sort -u | tr '\n' ' ')" "job:$m "
    grep -q "switch/vnib: JobId=$m StepId=0: its own 1 VNI(s) cannot be had (.*vni_pool_exhausted.*the step runs on its job's VNIs alone" \
        "$VNIB_SLURM_LOGS"/slurmd.n*.log &&
        ok "... the stepmgr's log (slurmd's) says so" ||
        { not_ok "... the stepmgr's log (slurmd's) says so"; grep -h "JobId=$m " "$VNIB_SLURM_LOGS"/slurmd.n*.log | tail -n 3 | sed 's/^/# /'; }
    unhold 900003
fi
expect_db_consistent
slurm_stop
finish
