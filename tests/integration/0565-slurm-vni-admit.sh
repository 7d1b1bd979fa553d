#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# switch/vnib's admission on a short pool (issue 45, part 0; Slurm 25.11
# and later, where slurmctld asks switch_p_job_start(job, test_only)).
# The broker's pool holds three VNIs.
#  1. Cold start: five one-VNI jobs, held, are released at once on a
#     freshly restarted slurmctld.  Its first admission reads the
#     broker's count first, so three start and two wait; none fails (it
#     used to admit all five until its first poll answered, and a step
#     failed with 503 vni_pool_exhausted).
#  2. While three one-VNI jobs run (their reservations made, their
#     claims younger than claim_ms), jobs that need no VNI (vnis=0,
#     no_vni) start at once: slurmctld's log never says they wait for
#     VNIs (it used to count the running jobs' claims on top of their
#     reservations: "needs 0, -3 free").
#  3. Per-step VNIs: a job asking vnis=1,step_vnis=1 needs two VNIs;
#     released with two one-VNI jobs on the pool of three, it is
#     admitted only with what its first step will take, and no step
#     fails for want of VNIs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

slurm_require_admission

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3002)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"

slurm_vnib_up vnib_free_poll_ms=200 "a pool of three VNIs"

cat >"$T/out/job.sh" <<'EOS'
#!/bin/sh
srun -N1 -n1 sh -c 'echo "VNIS=$SLINGSHOT_VNIS"; sleep 5'
EOS
chmod 755 "$T/out/job.sh"
# submit NAME [SBATCH ARGS...]: its id
submit () {
    local name=$1
    shift
    runuser -u nobody -- timeout 10 sbatch --parsable -N1 -n1 \
        -o "$T/out/$name.out" "$@" "$T/out/job.sh"
}
all_ended () {
    local j
    for j in "$@"; do _slurm_job_ended "$j" || return 1; done
}
log=$VNIB_SLURM_LOGS/slurmctld.log

# 1. Five one-VNI jobs held, slurmctld restarted, then released together.
ones=""
for i in 1 2 3 4 5; do
    ones="$ones $(submit one$i --hold --network=vnis=1)"
done
set -- $ones
[ $# -eq 5 ] && ok "five one-VNI jobs submitted, held ($ones )" ||
    not_ok "five one-VNI jobs submitted, held ($ones )"
slurm_ctld_stop
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 30; finish; }
ok "slurmctld restarted: a fresh free count"
timeout 10 scontrol release "$(echo $ones | tr ' ' ',')"

_three_run () {
    [ "$(timeout 5 squeue -h -t RUNNING -j "$(echo $ones | tr ' ' ',')" | wc -l)" -ge 3 ]
}
wait_for 20 _three_run
sleep 1
running=$(timeout 5 squeue -h -t RUNNING -j "$(echo $ones | tr ' ' ',')" | wc -l)
expect_eq "three of the five start at once, two wait (fresh slurmctld)" "$running" 3

wait_for 90 all_ended $ones
for j in $ones; do
    expect_eq "job $j completes" "$(slurm_job_state "$j")" COMPLETED
done
vs=$(cat "$T"/out/one*.out | grep -c '^VNIS=300[012]$')
expect_eq "each one-VNI job's task had a VNI of the pool" "$vs" 5

# 2. Three one-VNI jobs take the pool; once their steps run (reserved,
# their claims younger than claim_ms), jobs that need no VNI start at
# once.  (None waits ahead of them: sched/builtin starts no job behind
# one that waits.)
_pool_free () {
    [ "$(curl -s "$BROKER_URL/v1/pool" -H "Authorization: Bearer $(cat "$T/sched.token")" |
        jq -r '.free')" = 3 ]
}
wait_for 30 _pool_free || echo "# the pool did not show 3 free; going on"
fills="$(submit fill1 --network=vnis=1) $(submit fill2 --network=vnis=1)"
fills="$fills $(submit fill3 --network=vnis=1)"
_fills_reserved () {
    [ "$(cat "$T"/out/fill*.out 2>/dev/null | grep -c '^VNIS=300[012]$')" -eq 3 ]
}
wait_for 20 _fills_reserved &&
    ok "three one-VNI jobs hold the pool, their steps running ($fills )" ||
    not_ok "three one-VNI jobs hold the pool, their steps running ($fills )"
zeros="$(submit zero1 --network=vnis=0) $(submit zero2 --network=no_vni)"
zeros="$zeros $(submit zero3 --network=vnis=0)"
_zeros_run () {
    local j
    for j in $zeros; do
        case "$(slurm_job_state "$j")" in RUNNING | COMPLETED) ;; *) return 1 ;; esac
    done
}
wait_for 4 _zeros_run &&
    ok "the three jobs that need no VNI start while the pool is held ($zeros )" ||
    { not_ok "the three jobs that need no VNI start while the pool is held ($zeros )"
        timeout 5 squeue -h -t all -o '%i %T %r' | sed 's/^/# /'; }
for j in $zeros; do
    n=$(grep -c "JobId=$j waits for VNIs" "$log")
    expect_eq "job $j (no VNI) never waited for VNIs" "$n" 0
done
wait_for 90 all_ended $fills $zeros
for j in $fills $zeros; do
    expect_eq "job $j completes" "$(slurm_job_state "$j")" COMPLETED
done

# 3. Per-step VNIs: two VNIs for the first, one each for the others.
wait_for 30 _pool_free || echo "# the pool did not show 3 free; going on"
s=$(submit step1 --hold --network=vnis=1,step_vnis=1)
t="$(submit two1 --hold --network=vnis=1) $(submit two2 --hold --network=vnis=1)"
timeout 10 scontrol release "$s,$(echo $t | tr ' ' ',')"
wait_for 90 all_ended $s $t
for j in $s $t; do
    expect_eq "job $j completes" "$(slurm_job_state "$j")" COMPLETED
done
expect_eq "no step was refused for want of VNIs" "$(grep -c 'vni_pool_exhausted' "$log")" 0
grep -q "JobId=[0-9]* waits for VNIs: it needs 1 and 1 for its first step\|JobId=[0-9]* waits for VNIs: it needs 1 and 0 for its first step" "$log" &&
    ok "slurmctld's log says why a job waits" || not_ok "slurmctld's log says why a job waits"
[ "$(cat "$T"/out/*.out | grep -c 'vni_pool_exhausted\|Error configuring interconnect')" -eq 0 ] &&
    ok "no job's output has an interconnect error" ||
    { not_ok "no job's output has an interconnect error"; grep -h 'vni_pool\|interconnect' "$T"/out/*.out | head -5 | sed 's/^/# /'; }
finish
