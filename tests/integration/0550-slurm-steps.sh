#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Per-step VNIs under Slurm: a batch job (switch/vnib, real slurmctld and
# three slurmd) runs two steps at once, each with a VNI of its own.  The
# two step VNIs differ from each other and from the job's; each step's
# tasks see their step's VNI, then the job's; the shorter step's
# reservation is released (and its services destroyed) when it ends while
# the other step and the job keep theirs; the job's end releases the rest.
# The broker signs no leases (no lease.key_file): slurmctld falls back to
# steps without one, and says so once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"

slurm_switch_setup || { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chmod 777 "$T/out"
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }

get () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r "$2" <<<"$HTTP_BODY"
}

# The step on n1 ends when $T/out/stop0 appears, the one on n2 when stop1
# does (which of them is step 0 is Slurm's choice).  Each prints its VNIs
# first.
cat >"$T/out/job.sh" <<EOF
#!/bin/sh
srun -N1 -n1 -w n1 sh -c 'echo "s0 \$SLINGSHOT_VNIS"; while [ ! -e $T/out/stop0 ]; do sleep 0.2; done' &
srun -N1 -n1 -w n2 sh -c 'echo "s1 \$SLINGSHOT_VNIS"; while [ ! -e $T/out/stop1 ]; do sleep 0.2; done' &
wait
EOF
job=$(cd "$T/out" && timeout 30 sbatch --parsable -N2 -n2 \
    --network=vnis=1,step_vnis=1 -o "$T/out/%j.out" job.sh)
expect_match "the batch job is submitted" "$job" '^[0-9]+$'

_both_steps () {
    [ "$(get "/v1/reservations/$job/steps/0" .state)" = active ] &&
        [ "$(get "/v1/reservations/$job/steps/1" .state)" = active ] &&
        [ "$(sim_count n1 cxi0)$(sim_count n2 cxi0)" = 11 ]
}
wait_for 40 _both_steps
expect_eq "both steps hold an active reservation and their services" \
    "$(sim_count n1 cxi0)$(sim_count n2 cxi0)" 11
# A is the step on n1, B the one on n2.
if [ "$(get "/v1/reservations/$job/steps/0" .nodes)" = n1 ]; then A=0 B=1; else A=1 B=0; fi
expect_eq "step $A runs on n1, step $B on n2" \
    "$(get "/v1/reservations/$job/steps/$A" .nodes) $(get "/v1/reservations/$job/steps/$B" .nodes)" "n1 n2"
J=$(get "/v1/reservations/$job" '.vnis | join(",")')
SA=$(get "/v1/reservations/$job/steps/$A" '.vnis | join(",")')
SB=$(get "/v1/reservations/$job/steps/$B" '.vnis | join(",")')
expect_match "the job has one VNI" "$J" '^30[0-9][0-9]$'
expect_match "step $A has one of its own" "$SA" '^30[0-9][0-9]$'
expect_match "step $B has one of its own" "$SB" '^30[0-9][0-9]$'
distinct=$(printf '%s\n' "$J" "$SA" "$SB" | sort -u | wc -l)
expect_eq "the three VNIs are distinct ($J, $SA, $SB)" "$distinct" 3
expect_eq "step $A's service on n1 holds its VNI, then the job's" \
    "$(sim_svc n1 cxi0 "$SA,$J" | jq -r '.vnis | map(tostring) | join(",")')" "$SA,$J"
expect_eq "step $B's service on n2 holds its VNI, then the job's" \
    "$(sim_svc n2 cxi0 "$SB,$J" | jq -r '.vnis | map(tostring) | join(",")')" "$SB,$J"

# ---- step A ends: its reservation goes, the job's and step B's stay --------
touch "$T/out/stop0"
_stepA_released () { [ "$(get "/v1/reservations/$job/steps/$A" .state)" = released ]; }
wait_for 30 _stepA_released
expect_eq "step $A's reservation is released when it ends (n1 confirmed)" \
    "$(get "/v1/reservations/$job/steps/$A" .state)" released
expect_eq "... its services on n1 are destroyed" "$(sim_count n1 cxi0)" 0
expect_eq "step $B's reservation stays active" "$(get "/v1/reservations/$job/steps/$B" .state)" active
expect_eq "... with its services on n2" "$(sim_count n2 cxi0)" 1
expect_eq "the job's reservation stays active" "$(get "/v1/reservations/$job" .state)" active
expect_eq "... with its VNI" "$(get "/v1/reservations/$job" '.vnis | join(",")')" "$J"

# ---- step B ends, then the job ----------------------------------------------
touch "$T/out/stop1"
expect_eq "the job completes" "$(slurm_wait_job "$job" 60)" COMPLETED
_all_released () {
    [ "$(get "/v1/reservations/$job" .state)" = released ] &&
        [ "$(get "/v1/reservations/$job/steps/$B" .state)" = released ]
}
wait_for 30 _all_released
expect_eq "step $B's reservation is released" "$(get "/v1/reservations/$job/steps/$B" .state)" released
expect_eq "the job's reservation is released" "$(get "/v1/reservations/$job" .state)" released
expect_eq "no service is left on n1 or n2" "$(sim_count n1 cxi0)$(sim_count n2 cxi0)" 00
# The broker here has no lease key: the steps started the way they did
# before leases, the nodes asking the broker, and slurmctld said so once.
expect_eq "the broker issues no leases: slurmctld's log says so once" \
    "$(grep -c 'switch/vnib: the broker issues no leases (400 lease_disabled)' \
        "$VNIB_SLURM_LOGS/slurmctld.log")" 1
out=$(cat "$T/out/$job.out")
expect_match "step $A's task (n1) saw its VNI, then the job's" "$out" "s0 $SA,$J"
expect_match "step $B's task (n2) saw its VNI, then the job's" "$out" "s1 $SB,$J"

slurm_stop
finish
