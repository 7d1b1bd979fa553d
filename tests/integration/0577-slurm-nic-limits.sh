#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A NIC that runs out (issue 45, part 5), under Slurm with switch/vnib
# (real slurmctld and slurmd n1-n3, 16 CPUs a node, simulated NICs that
# like Cassini hold 3 services reserving TLEs each).
#  1. A batch job on n1 runs four steps at once, each with a VNI of its
#     own (step_vnis=1), so each needs a service of its own on every NIC:
#     three start, the fourth fails alone, and slurmd's log names the
#     NIC and the pool ("the NIC cxi0 has no free TLE pool (3 in use by
#     other services)").  The job completes (its script tolerates the
#     failure), no node is drained (the broker's /v1/nodes, sinfo), no
#     service is left on n1's NICs, and every VNI is free at the end
#     (/v1/pool): the failed step's reservation quarantine ended.  Once
#     with the steps' leases (the step's end reports its node), once
#     without (3. below: the failed start reports it, "destroyed").
#  2. HPE's limits: a job whose --network sets def_ptes and res_les that
#     fit runs three steps at once, each service sized by them; a step
#     asking res_acs=2000 (more than the NIC has) fails alone, naming it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

POOL=12
pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3011)$(slurm_lease_toml)"

slurm_switch_setup || { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chmod 777 "$T/out"
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" cpus=16 \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
ok "slurmctld and slurmd n1-n3 are up with switch/vnib, 16 CPUs a node"

get () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r "$2" <<<"$HTTP_BODY"
}
free_vnis () { get /v1/pool .free; }
drained_nodes () {
    local n c=0
    for n in n1 n2 n3; do
        TOKEN=$(node_token $n) http GET "/v1/nodes/$n"
        [ "$(jq -r .drained <<<"$HTTP_BODY")" = true ] && c=$((c + 1))
    done
    echo $c
}
user_svcs () {
    local d c=0
    for d in cxi0 cxi1 cxi2 cxi3; do c=$((c + $(sim_count n1 $d))); done
    echo $c
}
slurmd_log=$VNIB_SLURM_LOGS/slurmd.n1.log

# ---- 1. four steps at once, three TLE pools --------------------------------
# four_steps TAG WHAT: the job of four concurrent steps, its files in
# $T/out/TAG.  Each step writes its exit status to rc.I when it ends, its
# srun's errors to err.I; the three that start wait for TAG/stop.  A step
# failed when srun says so: its exit status, or (Slurm 22.05's srun exits
# 0 after "task 0 launch failed") its message.
# outcome DIR I: "0" when step I ran, "F" when it failed.
outcome () {
    if [ "$(cat "$1/rc.$2")" != 0 ] ||
        grep -q 'Error configuring interconnect' "$1/err.$2"; then
        echo F
    else
        echo 0
    fi
}
outcomes () {
    local d=$1 i
    shift
    for i in "$@"; do outcome "$d" "$i"; done | sort | tr '\n' ' '
}
_clean () { [ "$(user_svcs)" = 0 ]; }
_all_free () { [ "$(free_vnis)" = "$POOL" ]; }
four_steps () {
    local d=$T/out/$1 what=$2 job before
    mkdir -p "$d" && chmod 777 "$d"
    cat >"$d/job.sh" <<EOF
#!/bin/sh
for i in 0 1 2 3; do
    ( srun -N1 -n1 --overlap sh -c 'echo "VNIS=\$SLINGSHOT_VNIS"; while [ ! -e $d/stop ]; do sleep 0.2; done' 2>$d/err.\$i
      echo \$? >$d/rc.\$i ) &
done
wait
exit 0
EOF
    before=$(grep -c 'the NIC cxi0 has no free TLE pool (3 in use by other services)' "$slurmd_log")
    job=$(cd "$d" && timeout 30 sbatch --parsable -N1 -n4 -w n1 \
        --network=vnis=1,step_vnis=1 -o "$d/job.out" job.sh)
    expect_match "$what: a job of four concurrent steps is submitted" "$job" '^[0-9]+$'
    _one_failed () {
        [ "$(cat "$d"/rc.* 2>/dev/null | wc -l)" -ge 1 ] && [ "$(user_svcs)" -ge 12 ]
    }
    wait_for 60 _one_failed
    expect_eq "$what: three steps run, each with a service on each of n1's 4 NICs" "$(user_svcs)" 12
    expect_eq "$what: one step ended" "$(cat "$d"/rc.* 2>/dev/null | wc -l)" 1
    expect_eq "$what: ... and it failed" "$(outcome "$d" "$(ls "$d"/rc.* | sed 's/.*\.//')")" F
    expect_eq "$what: slurmd's log names the NIC and the pool" \
        "$(grep -c 'the NIC cxi0 has no free TLE pool (3 in use by other services)' "$slurmd_log")" \
        $((before + 1))
    expect_eq "$what: n1 is not drained while the job runs (broker)" "$(drained_nodes)" 0
    touch "$d/stop"
    expect_eq "$what: the job completes" "$(slurm_wait_job "$job" 60)" COMPLETED
    expect_eq "$what: three steps succeeded, one failed" "$(outcomes "$d" 0 1 2 3)" "0 0 0 F "
    echo "# srun's output for the failed step: $(cat "$d"/err.* | head -3 | tr '\n' '|')"
    expect_eq "$what: no node is drained in the broker" "$(drained_nodes)" 0
    expect_eq "$what: no node is drained in Slurm" "$(timeout 5 sinfo -h -N -o '%t' | grep -c drain)" 0
    wait_for 30 _clean
    expect_eq "$what: no service is left on n1's NICs" "$(user_svcs)" 0
    wait_for 60 _all_free
    expect_eq "$what: every VNI is free again (the failed step's quarantine ended)" \
        "$(free_vnis)" "$POOL"
}
four_steps lease "steps from their leases"

# ---- 2. HPE's limits, carried with the step -----------------------------
cat >"$T/out/job2.sh" <<EOF
#!/bin/sh
for i in 0 1 2; do
    ( srun -N1 -n1 --overlap sh -c 'while [ ! -e $T/out/stop2 ]; do sleep 0.2; done'
      echo \$? >$T/out/lim.\$i ) &
done
wait
srun -N1 -n1 --overlap --network=res_acs=2000 true 2>$T/out/err.big
echo \$? >$T/out/rc.big
exit 0
EOF
job=$(cd "$T/out" && timeout 30 sbatch --parsable -N1 -n4 -w n1 \
    --network=vnis=1,step_vnis=1,def_ptes=2,res_les=64 -o "$T/out/job2.out" job2.sh)
expect_match "a job with def_ptes=2,res_les=64 is submitted" "$job" '^[0-9]+$'
_three_run () { [ "$(user_svcs)" -ge 12 ]; }
wait_for 60 _three_run
expect_eq "its three steps run at once" "$(user_svcs)" 12
sizes=$(jq -r '[.services[] | select(.system != true and .svc_id != 1)
                | "\(.res.pte)/\(.res.le)"] | unique | join(" ")' "$T/n1/sim/cxi0.json")
expect_eq "each step's service reserves 2 PTEs a CPU and 64 LEs" "$sizes" "2/64"
touch "$T/out/stop2"
expect_eq "the job completes" "$(slurm_wait_job "$job" 60)" COMPLETED
expect_eq "its three steps succeeded" "$(cat "$T"/out/lim.* | tr '\n' ' ')" "0 0 0 "
expect_eq "the step asking res_acs=2000 failed" "$(outcome big)" F
expect_match "slurmd's log names the limit the NIC cannot give" \
    "$(grep -c 'res_acs=2000: it has' "$slurmd_log")" '^[1-9]'
expect_eq "no node is drained in the broker" "$(drained_nodes)" 0
expect_eq "no node is drained in Slurm" "$(timeout 5 sinfo -h -N -o '%t' | grep -c drain)" 0
wait_for 60 _all_free
expect_eq "every VNI is free at the end" "$(free_vnis)" "$POOL"

# ---- 3. the same from the broker (vnib_lease=off): the report path ------
# A step without a lease reports its node to the broker itself: the
# failed one "destroyed" with why, never "failed" (which would drain n1
# and keep its VNIs quarantined).
slurm_stop
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS,vnib_lease=off" cpus=16 \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm restarts"; slurm_dump_logs 30; finish; }
four_steps broker "steps from the broker"

slurm_stop
finish
