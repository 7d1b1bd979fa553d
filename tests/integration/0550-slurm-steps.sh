#!/bin/bash
# Per-step VNIs under Slurm: a batch job (switch/vnib, real slurmctld and
# three slurmd) runs two steps at once, each with a VNI of its own.  The
# two step VNIs differ from each other and from the job's; each step's
# tasks see their step's VNI, then the job's; the shorter step's
# reservation is released (and its services destroyed) when it ends while
# the other step and the job keep theirs; the job's end releases the rest.
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

# Step 0 on n1 ends when $T/out/stop0 appears; step 1 on n2 when stop1
# does.  Each prints its VNIs first.
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
J=$(get "/v1/reservations/$job" '.vnis | join(",")')
S0=$(get "/v1/reservations/$job/steps/0" '.vnis | join(",")')
S1=$(get "/v1/reservations/$job/steps/1" '.vnis | join(",")')
expect_match "the job has one VNI" "$J" '^30[0-9][0-9]$'
expect_match "step 0 has one of its own" "$S0" '^30[0-9][0-9]$'
expect_match "step 1 has one of its own" "$S1" '^30[0-9][0-9]$'
distinct=$(printf '%s\n' "$J" "$S0" "$S1" | sort -u | wc -l)
expect_eq "the three VNIs are distinct ($J, $S0, $S1)" "$distinct" 3
expect_eq "step 0's services hold its VNI, then the job's" \
    "$(sim_svc n1 cxi0 "$S0,$J" | jq -r '.vnis | map(tostring) | join(",")')" "$S0,$J"

# ---- step 0 ends: its reservation goes, the job's and step 1's stay --------
touch "$T/out/stop0"
_step0_released () { [ "$(get "/v1/reservations/$job/steps/0" .state)" = released ]; }
wait_for 30 _step0_released
expect_eq "step 0's reservation is released when it ends (n1 confirmed)" \
    "$(get "/v1/reservations/$job/steps/0" .state)" released
expect_eq "... its services on n1 are destroyed" "$(sim_count n1 cxi0)" 0
expect_eq "step 1's reservation stays active" "$(get "/v1/reservations/$job/steps/1" .state)" active
expect_eq "... with its services on n2" "$(sim_count n2 cxi0)" 1
expect_eq "the job's reservation stays active" "$(get "/v1/reservations/$job" .state)" active
expect_eq "... with its VNI" "$(get "/v1/reservations/$job" '.vnis | join(",")')" "$J"

# ---- step 1 ends, then the job ----------------------------------------------
touch "$T/out/stop1"
expect_eq "the job completes" "$(slurm_wait_job "$job" 60)" COMPLETED
_all_released () {
    [ "$(get "/v1/reservations/$job" .state)" = released ] &&
        [ "$(get "/v1/reservations/$job/steps/1" .state)" = released ]
}
wait_for 30 _all_released
expect_eq "step 1's reservation is released" "$(get "/v1/reservations/$job/steps/1" .state)" released
expect_eq "the job's reservation is released" "$(get "/v1/reservations/$job" .state)" released
expect_eq "no service is left on n1 or n2" "$(sim_count n1 cxi0)$(sim_count n2 cxi0)" 00
out=$(cat "$T/out/$job.out")
expect_match "step 0's task saw its VNI, then the job's" "$out" "s0 $S0,$J"
expect_match "step 1's task saw its VNI, then the job's" "$out" "s1 $S1,$J"

slurm_stop
finish
