#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Slurm switch plugin end to end: a real slurmctld and three slurmd
# (n1-n3, four simulated NICs each) with SwitchType=switch/vnib and no
# vnibroker Prolog, Epilog or SPANK plugin drive a real vnibrokerd that
# issues leases.  Every srun step gets a step reservation (its own VNIs
# first, then the job's) and CXI services on its nodes, made from the
# lease the step carried (the nodes report only destroyed, at its end);
# tasks see SLINGSHOT_VNIS in that order;
# sbatch steps each get theirs; concurrent jobs get different VNIs; all is
# released, destroyed and out of quarantine once the jobs end; a
# slurmctld killed with -9 in the middle of a job loses nothing; with the
# broker down at a job's end the release waits in slurmctld's outbox, also
# across a kill -9 of slurmctld, until the broker is back; one the broker
# refuses is spooled and the reconcile (vnib-slurm-hook) delivers it; with
# the broker down at a step's start the step is refused
# (vnib_outage=fail), or runs without isolation, logged
# (vnib_outage=open); a node that cannot reach the broker starts a
# step from its lease, or, when it refuses the lease, fails it.  The
# steps started with the broker down are those of jobs that start then:
# vnib_broker_hold_s=0, so that 25.11+ admits them at once (the hold,
# which keeps them PENDING first, is 0567's).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"

slurm_switch_setup vnib_broker_hold_s=0 || { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chown nobody "$T/out"
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
ok "slurmctld and slurmd n1-n3 are up with SwitchType=switch/vnib"

TASK_ENV='echo "$SLURMD_NODENAME $(env | grep -E "^(SLINGSHOT_|FI_CXI_)" | LC_ALL=C sort | tr "\n" " ")"'
field () {
    printf '%s\n' "$1" | grep "^$2 " | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
# vnis_of PATH: the "vnis" of a reservation (or step) as "a,b".
vnis_of () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r '.vnis // [] | join(",")' <<<"$HTTP_BODY"
}
state_of () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r '.state // "none"' <<<"$HTTP_BODY"
}
last_job () { timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1; }
services () { echo "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)"; }

# ---- srun -N3 with a step VNI: step VNI first, then the job's -------------
out=$(SLINGSHOT_VNIS=999 FI_CXI_COLL_MCAST_TOKEN=leaked \
    timeout 60 srun -N3 --network=step_vnis=1 sh -c "$TASK_ENV" 2>"$T/srun.err")
expect_eq "srun -N3 runs" "$?" 0
[ -n "$out" ] || { slurm_dump_logs 20; sed 's/^/#   /' "$T/srun.err"; }
job1=$(last_job)
J1=$(vnis_of "/v1/reservations/$job1")
S1=$(vnis_of "/v1/reservations/$job1/steps/0")
expect_match "the broker reserved job $job1 a VNI" "$J1" '^30[0-9][0-9]$'
expect_match "... and its step 0 a VNI of its own" "$S1" '^30[0-9][0-9]$'
[ "$S1" != "$J1" ] && ok "... a different one ($S1, $J1)" || not_ok "... a different one ($S1, $J1)"
for n in n1 n2 n3; do
    expect_eq "$n: SLINGSHOT_VNIS is the step's, then the job's" "$(field "$out" $n SLINGSHOT_VNIS)" "$S1,$J1"
    expect_eq "$n: SLINGSHOT_DEVICES lists its four NICs" "$(field "$out" $n SLINGSHOT_DEVICES)" cxi0,cxi1,cxi2,cxi3
    expect_match "$n: SLINGSHOT_SVC_IDS has a service per NIC" "$(field "$out" $n SLINGSHOT_SVC_IDS)" '^[0-9]+,[0-9]+,[0-9]+,[0-9]+$'
    expect_eq "$n: SLINGSHOT_TCS" "$(field "$out" $n SLINGSHOT_TCS)" 0xa
done
expect_no_match "no task kept the shell's SLINGSHOT_VNIS or FI_CXI_*" "$out" '999|leaked'
# The step carried its lease: no node asked the broker at its start.
expect_match "slurmctld reserved the step with its lease" \
    "$(grep "switch/vnib: JobId=$job1 StepId=0 " "$VNIB_SLURM_LOGS/slurmctld.log")" \
    'step reservation [0-9]+ \([0-9.]+ ms\), with its lease'
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job1/steps/0"
expect_json "... a presumed reservation: every node holds until it reports" .presumed true
# reports JOB: the step reports' "node:cxi", sorted.
reports () {
    TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$1&action=report&limit=1000"
    jq -r '.events[] | select(.step_id != null) | "\(.node):\(.detail.cxi)"' <<<"$HTTP_BODY" |
        sort | tr '\n' ' '
}
_destroyed3 () { [ "$(reports "$job1")" = "n1:destroyed n2:destroyed n3:destroyed " ]; }
wait_for 20 _destroyed3
expect_eq "the nodes reported only destroyed, at the step's end: no creating, no created" \
    "$(reports "$job1")" "n1:destroyed n2:destroyed n3:destroyed "

# ---- services exist while a step runs, and are gone after it --------------
timeout 60 srun -N3 sleep 4 >"$T/sleep.out" 2>&1 &
sleeper=$!
_all_hold () { [ "$(services)" = 111 ]; }
wait_for 30 _all_hold
expect_eq "a running srun -N3 step holds one service per NIC on n1, n2, n3" "$(services)" 111
job2=$(last_job)
expect_eq "... and its step reservation is active" "$(state_of "/v1/reservations/$job2/steps/0")" active
wait "$sleeper"
expect_eq "the step completes" "$?" 0
expect_eq "its services are destroyed on every node" "$(services)" 000

# ---- sbatch -N2 with inner steps: each step its own reservation ------------
cat >"$T/out/job.sh" <<EOF
#!/bin/sh
srun sh -c '$TASK_ENV' | sed 's/^/step0 /'
srun sh -c '$TASK_ENV' | sed 's/^/step1 /'
EOF
job3=$(cd "$T/out" && runuser -u nobody -- timeout 30 sbatch --parsable -N2 \
    --network=vnis=2,step_vnis=1 -o "$T/out/%j.out" job.sh)
expect_eq "sbatch -N2 job with two steps completes" "$(slurm_wait_job "$job3" 60)" COMPLETED
out=$(cat "$T/out/$job3.out")
J3=$(vnis_of "/v1/reservations/$job3")
S30=$(vnis_of "/v1/reservations/$job3/steps/0")
S31=$(vnis_of "/v1/reservations/$job3/steps/1")
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job3"
expect_json "the reservation is the job user's" .uid "$(id -u nobody)"
expect_match "--network=vnis=2 gave the job two VNIs" "$J3" '^30[0-9][0-9],30[0-9][0-9]$'
expect_match "step 0 had a VNI of its own" "$S30" '^30[0-9][0-9]$'
expect_match "step 1 had a VNI of its own" "$S31" '^30[0-9][0-9]$'
expect_eq "both tasks of step 0 saw step 0's VNI, then the job's" \
    "$(printf '%s\n' "$out" | grep -c "^step0 n[12] .*SLINGSHOT_VNIS=$S30,$J3 ")" 2
expect_eq "both tasks of step 1 saw step 1's VNI, then the job's" \
    "$(printf '%s\n' "$out" | grep -c "^step1 n[12] .*SLINGSHOT_VNIS=$S31,$J3 ")" 2

# ---- two concurrent jobs with step VNIs: four different VNIs ---------------
# Each task prints "STEP_VNI,JOB_VNI" and runs until $T/stopc exists, so
# the two jobs hold their reservations at the same time.
cpids=""
for n in n1 n2; do
    timeout 60 srun -N1 -w $n --network=step_vnis=1 \
        sh -c "echo \$SLINGSHOT_VNIS; while [ ! -e $T/stopc ]; do sleep 0.2; done" \
        >"$T/c.$n.out" 2>&1 &
    cpids="$cpids $!"
done
_both_print () { [ -s "$T/c.n1.out" ] && [ -s "$T/c.n2.out" ]; }
wait_for 30 _both_print
touch "$T/stopc"
# shellcheck disable=SC2086 # one pid each
wait $cpids
v1=$(head -n 1 "$T/c.n1.out")
v2=$(head -n 1 "$T/c.n2.out")
expect_match "concurrent job A has a step VNI and a job VNI" "$v1" '^30[0-9][0-9],30[0-9][0-9]$'
expect_match "concurrent job B has a step VNI and a job VNI" "$v2" '^30[0-9][0-9],30[0-9][0-9]$'
expect_eq "... all four differ ($v1; $v2)" "$(echo "$v1,$v2" | tr ',' '\n' | sort -u | wc -l)" 4

# ---- --network=no_vni: a step without VNIs has no Slingshot environment -----
out=$(SLINGSHOT_VNIS=999 timeout 60 srun -N2 --network=no_vni sh -c "$TASK_ENV")
expect_eq "--network=no_vni runs" "$?" 0
expect_eq "... and its two tasks have no SLINGSHOT_* or FI_CXI_* at all" \
    "$(printf '%s\n' "$out" | grep -c '^n[1-3] $')" 2

# ---- after the jobs: released, destroyed, out of quarantine -----------------
# held STATE: how many reservations (jobs and steps) are in STATE.
held () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=$1"
    jq '.reservations | length' <<<"$HTTP_BODY"
}
_settled () { [ "$(held active)$(held releasing)" = 00 ]; }
wait_for 20 _settled
expect_eq "no reservation (job or step) is left active" "$(held active)" 0
expect_eq "none is left quarantined" "$(held releasing)" 0
expect_eq "job $job1 is released" "$(state_of "/v1/reservations/$job1")" released
expect_eq "... and its step" "$(state_of "/v1/reservations/$job1/steps/0")" released
for n in n1 n2 n3; do
    TOKEN=$(node_token $n) http GET "/v1/nodes/$n"
    expect_json "$n has nothing left to clean up" .cleanup_needed 0
    expect_eq "$n's NICs hold no service" "$(sim_count $n cxi0)$(sim_count $n cxi3)" 00
done

# ---- slurmctld killed (-9) in the middle of a job loses nothing -------------
# The step runs until $T/stop4 appears.  Slurm itself keeps a job across a
# crash once its state file has it (written within 5 s of the step's
# start): wait for that, then kill.  A job Slurm forgot is the reconcile's
# (plugins/slurm/README.md), not the plugin's.
timeout 90 srun -N2 -w n1,n3 --network=step_vnis=1 \
    sh -c "while [ ! -e $T/stop4 ]; do sleep 0.2; done" >"$T/restart.out" 2>&1 &
restart_srun=$!
_two_hold () { [ "$(sim_count n1 cxi0)$(sim_count n3 cxi0)" = 11 ]; }
wait_for 30 _two_hold
job4=$(last_job)
expect_eq "job $job4's step runs on n1 and n3" "$(sim_count n1 cxi0)$(sim_count n3 cxi0)" 11
touch "$T/marker4"
_saved () { [ -n "$(find "$VNIB_SLURM_DIR/state/job_state" -newer "$T/marker4" 2>/dev/null)" ]; }
wait_for 15 _saved
slurm_ctld_kill
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 20; finish; }
ok "slurmctld was killed with -9 and restarted"
expect_eq "the step's reservation is still active" "$(state_of "/v1/reservations/$job4/steps/0")" active
touch "$T/stop4"
wait "$restart_srun"
expect_eq "the job's srun completes across the restart" "$?" 0
_released4 () {
    [ "$(state_of "/v1/reservations/$job4")" = released ] &&
        [ "$(state_of "/v1/reservations/$job4/steps/0")" = released ]
}
wait_for 30 _released4
expect_eq "job $job4 is released after it ends" "$(state_of "/v1/reservations/$job4")" released
expect_eq "... and its step" "$(state_of "/v1/reservations/$job4/steps/0")" released
expect_eq "... its services are gone" "$(sim_count n1 cxi0)$(sim_count n3 cxi0)" 00

# ---- broker down at job end: nothing lost, not even across a restart -------
# slurmctld leaves the job's release in its outbox (vnib_release_spool/
# outbox/), whose thread sends it again until the broker takes it, also
# after slurmctld is killed and started again; the nodes spool their
# reports; once the broker is back both are delivered.
timeout 90 srun -N1 -w n3 sh -c "while [ ! -e $T/stop6 ]; do sleep 0.2; done" \
    >"$T/end.out" 2>&1 &
end_srun=$!
_n3_holds () { [ "$(sim_count n3 cxi0)" = 1 ]; }
wait_for 30 _n3_holds
job6=$(last_job)
resv6=$(TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job6" && jq -r .id <<<"$HTTP_BODY")
broker_stop
touch "$T/stop6"
wait "$end_srun"
expect_eq "a job that ends while the broker is down completes" "$?" 0
_queued6 () { [ -f "$VNIB_SPOOL/outbox/job.$job6.$resv6" ]; }
wait_for 20 _queued6
expect_eq "its release, naming its reservation, waits in slurmctld's outbox" \
    "$(ls "$VNIB_SPOOL/outbox" 2>/dev/null | grep "^job\.$job6\.")" "job.$job6.$resv6"
_said6 () { grep -q "JobId=$job6: release not taken yet" "$VNIB_SLURM_LOGS/slurmctld.log"; }
wait_for 10 _said6
expect_match "... slurmctld's log says it is sent again until the broker takes it" \
    "$(grep "switch/vnib: JobId=$job6: release" "$VNIB_SLURM_LOGS/slurmctld.log" | head -n 1)" \
    'release not taken yet \(.*\); sent again until the broker takes it'
expect_eq "n3 destroyed its services anyway" "$(sim_count n3 cxi0)" 0
slurm_ctld_kill
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 20; finish; }
expect_eq "slurmctld killed with -9 and started again: the release still waits" \
    "$(ls "$VNIB_SPOOL/outbox" 2>/dev/null | grep -c "^job\.$job6\.")" 1
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
_sent6 () { [ ! -e "$VNIB_SPOOL/outbox/job.$job6.$resv6" ]; }
wait_for 20 _sent6
[ ! -e "$VNIB_SPOOL/outbox/job.$job6.$resv6" ] &&
    ok "once the broker is back, the new slurmctld sends it" ||
    not_ok "once the broker is back, the new slurmctld sends it"
"$BUILD/vnib-agent" --config "$T/n3/agent.toml" flush >"$T/flush.out" 2>&1
_released6 () { [ "$(state_of "/v1/reservations/$job6")" = released ]; }
wait_for 20 _released6
expect_eq "with n3's spooled report flushed, job $job6 is released" \
    "$(state_of "/v1/reservations/$job6")" released
expect_eq "... and its step" "$(state_of "/v1/reservations/$job6/steps/0")" released

# ---- a release the broker refuses: spooled for the reconcile -----------------
# (slurmctld's token replaced at the job's end: 401.)  The release goes
# where vnib-slurm-hook reconcile (the timer) looks (vnib_release_spool =
# its RELEASE_SPOOL), in its format; the reconcile makes it.
slurm_hook_setup || { not_ok "the hook (for its reconcile)"; finish; }
timeout 90 srun -N1 -w n3 sh -c "while [ ! -e $T/stop7 ]; do sleep 0.2; done" \
    >"$T/end7.out" 2>&1 &
end_srun=$!
wait_for 30 _n3_holds
job7=$(last_job)
cp "$T/sched.token" "$T/sched.token.good"
(umask 077 && echo "vnibs.not-a-token" >"$T/sched.token")
touch "$T/stop7"
wait "$end_srun"
_spooled7 () { [ -f "$VNIB_SPOOL/$job7" ]; }
wait_for 20 _spooled7
expect_match "a refused release is spooled for the reconcile, in the hook's format" \
    "$(cat "$VNIB_SPOOL/$job7" 2>/dev/null | tr '\n' ' ')" "^job $job7 failed_at [0-9TZ:-]+ error "
cp "$T/sched.token.good" "$T/sched.token"
expect_eq "the reservation is still active" "$(state_of "/v1/reservations/$job7")" active
out=$("$VNIB_HOOK" reconcile 2>&1)
expect_eq "vnib-slurm-hook reconcile exits 0" "$?" 0
[ ! -e "$VNIB_SPOOL/$job7" ] && ok "... and takes the spooled release" ||
    not_ok "... and takes the spooled release"
_released7 () { [ "$(state_of "/v1/reservations/$job7")" = released ]; }
wait_for 20 _released7
expect_eq "job $job7 is released" "$(state_of "/v1/reservations/$job7")" released

# ---- broker down at job start: the step is refused (vnib_outage=fail) --------
broker_stop
out=$(timeout 60 srun -N1 -w n2 true 2>&1)
rc=$?
expect_eq "with the broker down, srun fails" "$rc" 1
expect_match "... Slurm says the interconnect failed" "$out" 'Error configuring interconnect'
job5=$(last_job)
_queued5 () { ls "$VNIB_SPOOL/outbox" 2>/dev/null | grep -q "^job\.$job5\."; }
wait_for 20 _queued5
expect_match "the job's release waits in the outbox" \
    "$(ls "$VNIB_SPOOL/outbox" 2>/dev/null)" "job\.$job5\."
expect_eq "no service was made on n2" "$(sim_count n2 cxi0)" 0
expect_eq "... and no node was drained" "$(timeout 5 sinfo -h -N -o '%t' | grep -c drain)" 0
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
expect_match "with the broker back, new steps run isolated" "$out" '^30[0-9][0-9]$'
_empty () { [ -z "$(ls "$VNIB_SPOOL/outbox" 2>/dev/null)" ]; }
wait_for 20 _empty
expect_eq "... and the outbox is empty" "$(ls "$VNIB_SPOOL/outbox")" ""

# ---- the broker unreachable from a node at step start ------------------------
# With its lease, a step needs no broker on its nodes at its start: it
# runs, and n2 spools its end report until the broker is reachable.
cp "$T/n2/agent.toml" "$T/n2/agent.toml.good"
sed -i "s|^url = .*|url = \"http://127.0.0.1:9\"|" "$T/n2/agent.toml"
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo "TASK-RAN $SLINGSHOT_VNIS"' 2>&1)
expect_match "with n2 cut off from the broker, a step with its lease runs on n2" \
    "$out" 'TASK-RAN 30[0-9][0-9]'
cut=$(last_job)
expect_eq "... its services are gone at its end" "$(sim_count n2 cxi0)" 0
_spooled_n2 () { [ -n "$(ls "$T/n2/spool" 2>/dev/null)" ]; }
wait_for 20 _spooled_n2
expect_match "... and n2 spooled its report" "$(ls "$T/n2/spool" 2>/dev/null)" .
_said_n2 () { grep -F "[$cut.0]" "$VNIB_SLURM_LOGS/slurmd.n2.log" | grep -q 'report destroyed'; }
wait_for 20 _said_n2
expect_match "... slurmd's log says so" \
    "$(grep -F "[$cut.0]" "$VNIB_SLURM_LOGS/slurmd.n2.log" | grep 'switch/vnib')" \
    "report destroyed not taken \(.*\); spooled for 'vnib-agent flush'"
# A lease n2 cannot verify (signed by a key it does not list): n2 asks
# the broker instead, cannot reach it, and the step fails
# (vnib_outage=fail); since nothing was made, its end destroys nothing and
# the node is not drained (Slurm 24.05+ drains a node whose job_postfini
# fails).
(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/other.key" 2>/dev/null)
openssl pkey -in "$T/other.key" -pubout -out "$T/other.pub"
sed -i "s|$T/lease.pub|$T/other.pub|" "$T/n2/agent.toml"
# (22.05's srun reports the failed launch but exits 0: the task is what
# must not run.)
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo TASK-RAN' 2>&1)
expect_no_match "with a lease n2 refuses and the broker out of reach, the task does not run on n2" \
    "$out" TASK-RAN
expect_match "... Slurm says the interconnect failed" "$out" 'Error configuring interconnect'
expect_eq "... no service was made on n2" "$(sim_count n2 cxi0)" 0
# slurmstepd opens the SPANK stack after making the step's process
# container and before job_init, where switch/vnib refuses a step: a step
# refused in preinit would have no container, and a later signal to it
# would go to "container 0" (plugins/slurm/README.md, ProctrackType).
refused=$(last_job)
expect_match "... slurmd's log says the lease was refused and the broker asked" \
    "$(grep -F "[$refused.0]" "$VNIB_SLURM_LOGS/slurmd.n2.log" | grep 'switch/vnib')" \
    "lease refused, asking the broker: .*signed by key [0-9a-f]+, which this node does not have"
expect_eq "... refused once its process container existed (in job_init, after the SPANK stack opened)" \
    "$(grep -F "[$refused.0]" "$VNIB_SLURM_LOGS/slurmd.n2.log" | awk '
        /spank: opening plugin stack/ { opened = 1 }
        /switch\/vnib: JobId=.*broker unreachable/ { print (opened ? "after" : "before"); exit }')" after
sleep 1
expect_eq "... and n2 is not drained" "$(slurm_node_state n2)" idle
cp "$T/n2/agent.toml.good" "$T/n2/agent.toml"
"$BUILD/vnib-agent" --config "$T/n2/agent.toml" flush >"$T/flush2.out" 2>&1
_released_cut () {
    [ "$(state_of "/v1/reservations/$cut/steps/0")" = released ] &&
        [ "$(state_of "/v1/reservations/$refused/steps/0")" = released ]
}
wait_for 20 _released_cut
expect_eq "with n2's spooled reports flushed, both steps are released" \
    "$(state_of "/v1/reservations/$cut/steps/0") $(state_of "/v1/reservations/$refused/steps/0")" \
    "released released"

# ---- vnib_outage=open: with the broker down a step runs, unisolated, logged --
slurm_stop
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS,vnib_outage=open" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm restarts"; slurm_dump_logs 30; finish; }
broker_stop
out=$(SLINGSHOT_VNIS=999 timeout 60 srun -N1 -w n2 sh -c "$TASK_ENV" 2>"$T/open.err")
expect_eq "vnib_outage=open: with the broker down, srun runs" "$?" 0
expect_eq "... its task has no SLINGSHOT_* or FI_CXI_* at all" "$out" "n2 "
expect_eq "... and no service was made on n2" "$(sim_count n2 cxi0)" 0
expect_match "... slurmctld's log says it runs without isolation" \
    "$(grep 'switch/vnib' "$VNIB_SLURM_LOGS/slurmctld.log" | tail -n 3)" \
    'broker unreachable .*the step runs WITHOUT VNI isolation \(vnib_outage=open\)'
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }

slurm_stop
finish
