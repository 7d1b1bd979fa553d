#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# switch/vnib with enable_stepmgr (Slurm 24.05 and later): a job run with
# --stepmgr has its steps created and ended by a root slurmstepd on its
# batch host (the stepmgr), not by slurmctld.  slurmctld reserves the job
# at its start and hands the stepmgr the job token the broker issued,
# good only for that job's steps: the broker's audit trail shows each
# step reserved by "job:JOB", never by slurmctld's token.  A job without
# --stepmgr beside it still has its steps made by slurmctld.  slurmctld
# killed with -9 while a stepmgr job runs loses nothing: a step started
# meanwhile still gets its VNIs, and the job's end releases everything.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

[ "$VNIB_SLURM_RELEASE" -ge 2405 ] ||
    skip_all "Slurm $VNIB_SLURM_VERSION has no enable_stepmgr (24.05 and later do)"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"

slurm_switch_setup || { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chmod 777 "$T/out"
# Contain (which enable_stepmgr needs) starts an extern step on every node.
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
    plugin_dir="$VNIB_PLUGIN_DIR" prolog_flags=Contain ||
    { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
ok "slurmctld and slurmd n1-n3 are up with switch/vnib and PrologFlags=Contain"

get () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r "$2" <<<"$HTTP_BODY"
}
# actors JOB ACTION: the actors of the job's events of that action, with
# the step they name, as "step:actor" lines ("-" for the job itself).
actors () {
    TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$1&action=$2"
    jq -r '.events[] | "\(.step_id // "-"):\(.actor)"' <<<"$HTTP_BODY" | sort -u | tr '\n' ' '
}

cat >"$T/out/job.sh" <<'EOS'
#!/bin/sh
srun -N2 sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"'
srun -N1 true
EOS
chmod 755 "$T/out/job.sh"

# ---- a stepmgr job and an ordinary one, side by side ---------------------
a=$(cd "$T/out" && timeout 30 sbatch --parsable --stepmgr -N2 -o "$T/out/a.out" job.sh)
b=$(cd "$T/out" && timeout 30 sbatch --parsable -N1 -w n3 -o "$T/out/b.out" \
    --wrap 'srun sh -c "echo \$SLINGSHOT_VNIS"')
expect_match "a --stepmgr job and an ordinary one are submitted" "$a $b" '^[0-9]+ [0-9]+$'
expect_eq "the stepmgr job completes" "$(slurm_wait_job "$a" 60)" COMPLETED
expect_eq "the ordinary job completes" "$(slurm_wait_job "$b" 60)" COMPLETED
J=$(get "/v1/reservations/$a" '.vnis | join(",")')
expect_match "the stepmgr job had a VNI" "$J" '^30[0-9][0-9]$'
# The tasks' lines ("nN VNI"); srun may add its own (a step that found
# the interconnect busy waits and is retried: "step creation temporarily
# disabled, retrying", then "Step created"), which are shown, and nothing
# else may be there.
grep -E '^n[0-9]+ ' "$T/out/a.out" >"$T/out/a.tasks"
grep -vE '^n[0-9]+ ' "$T/out/a.out" | sed 's/^/# a.out: /'
expect_eq "its tasks on both nodes saw it" \
    "$(awk '{print $2}' "$T/out/a.tasks" | sort -u | tr '\n' ' ')" "$J "
expect_eq "its two steps' nodes ran tasks" "$(awk '{print $1}' "$T/out/a.tasks" | sort -u | wc -l)" 2
expect_eq "its output holds nothing but the tasks' lines and srun's retries of a busy step" \
    "$(grep -vE '^n[0-9]+ |^srun: (Job [0-9]+ step creation (temporarily|still) disabled, retrying|Step created for StepId=)' \
        "$T/out/a.out" | head -n 3)" ""
expect_eq "slurmctld reserved the job at its start; the stepmgr, with the job's token, reserved its steps" \
    "$(actors "$a" reserve)" "-:slurmctld 0:job:$a 1:job:$a "
expect_eq "... and released them with it" "$(actors "$a" release | tr ' ' '\n' | grep -v '^-:' | tr '\n' ' ')" "0:job:$a 1:job:$a "
expect_eq "the ordinary job's steps were reserved by slurmctld" \
    "$(actors "$b" reserve)" "-:slurmctld 0:slurmctld "
expect_match "the ordinary job's task had a VNI" "$(cat "$T/out/b.out")" '^30[0-9][0-9]$'
expect_eq "the stepmgr got each step's lease with the job's token" \
    "$(cat "$VNIB_SLURM_LOGS"/slurmd.n*.log |
        grep -c "switch/vnib: JobId=$a StepId=[01] nodes=.*, with its lease")" 2
grep -q "switch/vnib: JobId=$a StepId=0 nodes=" "$VNIB_SLURM_LOGS/slurmctld.log" &&
    not_ok "slurmctld did not create the stepmgr job's steps" ||
    ok "slurmctld did not create the stepmgr job's steps"
_released () { [ "$(get "/v1/reservations/$1" .state)" = released ]; }
wait_for 20 _released "$a"
expect_eq "the stepmgr job is released at its end" "$(get "/v1/reservations/$a" .state)" released
expect_eq "... and its steps" "$(get "/v1/reservations/$a/steps/0" .state) $(get "/v1/reservations/$a/steps/1" .state)" \
    "released released"
expect_eq "no service is left on any node" "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)" 000

# ---- the job token is the stepmgr's only: it cannot touch another job -------
# (the broker's side of this is 0247-job-token.sh; here: the stepmgr never
# held slurmctld's token, so nothing on the batch host could have used it)
expect_eq "no step of the stepmgr job was made with slurmctld's token" \
    "$(actors "$a" reserve | tr ' ' '\n' | grep -c '^[0-9]*:slurmctld$')" 0

# ---- slurmctld killed with -9 while a stepmgr job runs ---------------------
cat >"$T/out/long.sh" <<EOS
#!/bin/sh
srun -N2 true
while [ ! -e $T/out/go ]; do sleep 0.2; done
srun -N2 sh -c 'echo "\$SLINGSHOT_VNIS"'
EOS
chmod 755 "$T/out/long.sh"
c=$(cd "$T/out" && timeout 30 sbatch --parsable --stepmgr -N2 -o "$T/out/c.out" long.sh)
_step0 () { [ "$(get "/v1/reservations/$c/steps/0" .state)" = released ]; }
wait_for 40 _step0
expect_eq "job $c's first step ran and was released" "$(get "/v1/reservations/$c/steps/0" .state)" released
# Killed once slurmctld has saved the running job (a kill before that
# loses the job in Slurm itself, broker or not).
touch "$T/marker"
_saved () { [ -n "$(find "$VNIB_SLURM_DIR/state/job_state" -newer "$T/marker" 2>/dev/null)" ]; }
wait_for 15 _saved
slurm_ctld_kill
ok "slurmctld killed with -9"
touch "$T/out/go"
_step1 () { [ "$(get "/v1/reservations/$c/steps/1" .state)" != none ] &&
    [ "$(get "/v1/reservations/$c/steps/1" .state)" != null ]; }
wait_for 30 _step1
# (releasing: the step already ended, its nodes' reports, sent after
# slurmstepd told srun, not all in yet)
expect_match "with slurmctld down, the stepmgr still reserved the next step" \
    "$(get "/v1/reservations/$c/steps/1" .state)" '^(active|releasing|released)$'
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 20; finish; }
ok "slurmctld restarted"
expect_eq "job $c completes" "$(slurm_wait_job "$c" 60)" COMPLETED
expect_match "its last step's tasks had the job's VNI" "$(tail -n 1 "$T/out/c.out")" '^30[0-9][0-9]$'
wait_for 20 _released "$c"
expect_eq "job $c is released at its end" "$(get "/v1/reservations/$c" .state)" released
expect_eq "... its steps too" "$(get "/v1/reservations/$c/steps/0" .state) $(get "/v1/reservations/$c/steps/1" .state)" \
    "released released"
expect_eq "no service is left on any node" "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)" 000
expect_db_consistent
slurm_stop
finish
