#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Slurm end to end: a real slurmctld and three slurmd (n1-n3, four
# simulated NICs each) drive a real vnibrokerd (PostgreSQL, fmsim) through
# plugins/slurm/hook/vnib-slurm-hook and the SPANK plugin.  Tasks of srun and
# sbatch jobs see their VNIs, NICs, service ids and traffic classes;
# concurrent jobs get different VNIs; --network-vnis=0 clears everything;
# hardware collectives follow min_nodes; everything is released and
# destroyed after the jobs, also after scancel; a stopped broker refuses
# new jobs (fail closed) until it returns; a job that ends while the
# broker is down drains no node (the agents spool their reports); a stuck
# CXI service keeps its VNI quarantined and drains its node until an admin
# cleans it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/fm.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1

# ---- fmsim and the broker, on a fixed port (it is restarted below) ----------
fm_start || { not_ok "fmsim starts"; finish; }
fm_jobs () { curl -s "$FM_ADMIN/fmsim/state" | jq -r '[.jobs[].jobID] | sort | join(",")'; }

(umask 077 && openssl rand 32 >"$T/fm.key")
BROKER_TOML_EXTRA="
[cluster]
name = \"vnibtest\"

[vni]
pool = \"3000-3099\"

$(hwcoll_table 3)
token_key_file = \"$T/fm.key\""
broker_up "$T/b.toml" "$BROKER_TOML_EXTRA"
broker_pin_port "$T/b.toml"

# ---- the nodes' agents, the hook and the plugin -----------------------------
for n in n1 n2 n3; do agent_setup "$n" 4; done
# What Slurm and the job's user run or load are copies in $T (the
# checkout may be private): the hook, the programs it runs, the plugin.
# The reserve's retries through an outage are 0525's; here a job that
# starts in one is refused after 2 s of them.
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" EPILOG_RETRY_BUSY=2s \
    RELEASE_ATTEMPTS=2 RESERVE_RETRY_S=2 || { not_ok "the hook"; finish; }
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$T/%n/state" >"$T/plugstack.conf"
mkdir -p "$T/out"
chown nobody "$T/out"

H=$VNIB_HOOK
slurm_start prolog="$H" epilog="$H" prolog_ctld="$H" epilog_ctld="$H" \
    plugstack="$T/plugstack.conf" || { not_ok "slurm starts"; slurm_dump_logs; finish; }
ok "slurmctld and slurmd n1-n3 are up"

TASK_ENV='echo "$SLURMD_NODENAME $(env | grep -E "^(SLINGSHOT_|FI_CXI_)" | LC_ALL=C sort | tr "\n" " ")"'
# field OUT NODE NAME: the value NAME had in NODE's task.
field () {
    printf '%s\n' "$1" | grep "^$2 " | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
nobody_uid=$(id -u nobody)

# ---- srun -N3: every task sees the job's environment; hwcoll (3 nodes) ------
out=$(SLINGSHOT_VNIS=999 FI_CXI_COLL_MCAST_TOKEN=leaked \
    timeout 60 srun -N3 sh -c "$TASK_ENV" 2>"$T/srun.err")
expect_eq "srun -N3 runs" "$?" 0
[ -n "$out" ] || { slurm_dump_logs 20; cat "$T/srun.err"; }
job1=$(timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1)
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job1"
VNIS1=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
expect_match "the broker reserved a VNI for job $job1" "$VNIS1" '^30[0-9][0-9]$'
for n in n1 n2 n3; do
    expect_eq "$n: SLINGSHOT_VNIS is the reservation's" "$(field "$out" $n SLINGSHOT_VNIS)" "$VNIS1"
    expect_eq "$n: SLINGSHOT_DEVICES lists its four NICs" "$(field "$out" $n SLINGSHOT_DEVICES)" cxi0,cxi1,cxi2,cxi3
    expect_match "$n: SLINGSHOT_SVC_IDS has a service per NIC" "$(field "$out" $n SLINGSHOT_SVC_IDS)" '^[0-9]+,[0-9]+,[0-9]+,[0-9]+$'
    expect_eq "$n: SLINGSHOT_TCS" "$(field "$out" $n SLINGSHOT_TCS)" 0xa
    expect_match "$n: FI_CXI_COLL_JOB_ID is <cluster>-<job>-r<reservation id> (3 nodes >= min_nodes 3)" "$(field "$out" $n FI_CXI_COLL_JOB_ID)" "^vnibtest-$job1-r[0-9]+\$"
    expect_match "$n: FI_CXI_COLL_MCAST_TOKEN is fmsim's, not the shell's" "$(field "$out" $n FI_CXI_COLL_MCAST_TOKEN)" '^.{8,}$'
    expect_eq "$n: FI_CXI_COLL_FABRIC_MGR_URL" "$(field "$out" $n FI_CXI_COLL_FABRIC_MGR_URL)" "$FM_URL/fabric/collectives/multicasts"
    expect_eq "$n: FI_CXI_COLL_JOB_STEP_ID is the step" "$(field "$out" $n FI_CXI_COLL_JOB_STEP_ID)" 0
done
expect_no_match "no task kept the shell's token" "$out" leaked

# ---- sbatch -N2 as a user with an inner srun; no hwcoll (2 nodes) -----------
cat >"$T/out/job.sh" <<EOF
#!/bin/sh
sh -c '$TASK_ENV' | sed 's/^/batch /'
srun sh -c '$TASK_ENV' | sed 's/^/step /'
EOF
job2=$(cd "$T/out" && SLINGSHOT_TCS=0xff runuser -u nobody -- \
    timeout 30 sbatch --parsable -N2 --network-vnis=2 -o "$T/out/%j.out" job.sh)
expect_eq "sbatch -N2 job completes" "$(slurm_wait_job "$job2" 60)" COMPLETED
out=$(cat "$T/out/$job2.out")
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job2"
VNIS2=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
expect_json "the reservation is the job user's" .uid "$nobody_uid"
expect_match "--network-vnis=2 gave two VNIs" "$VNIS2" '^30[0-9][0-9],30[0-9][0-9]$'
expect_eq "the batch script sees them" "$(printf '%s\n' "$out" | grep -c "^batch n[0-9] .*SLINGSHOT_VNIS=$VNIS2 ")" 1
expect_eq "both tasks of the inner srun see them" "$(printf '%s\n' "$out" | grep -c "^step n[0-9] .*SLINGSHOT_DEVICES=cxi0,cxi1,cxi2,cxi3 .*SLINGSHOT_TCS=0xa SLINGSHOT_VNIS=$VNIS2 ")" 2
expect_no_match "no FI_CXI_COLL_* for a 2-node job" "$out" 'FI_CXI_COLL_JOB_ID'
expect_no_match "the shell's SLINGSHOT_TCS did not leak" "$out" 'SLINGSHOT_TCS=0xff'

# ---- two concurrent jobs get different VNIs ------------------------------------
timeout 60 srun -N1 -w n1 sh -c 'echo $SLINGSHOT_VNIS; sleep 3' >"$T/c1.out" 2>&1 &
c1=$!
timeout 60 srun -N1 -w n2 sh -c 'echo $SLINGSHOT_VNIS; sleep 3' >"$T/c2.out" 2>&1 &
c2=$!
wait "$c1" "$c2"
v1=$(head -n 1 "$T/c1.out")
v2=$(head -n 1 "$T/c2.out")
expect_match "concurrent job A has a VNI" "$v1" '^30[0-9][0-9]$'
expect_match "concurrent job B has a VNI" "$v2" '^30[0-9][0-9]$'
[ "$v1" != "$v2" ] && ok "... and they differ ($v1, $v2)" || not_ok "... and they differ ($v1, $v2)"

# ---- --network-vnis=0: no VNIs, nothing stale -----------------------------------
out=$(SLINGSHOT_VNIS=999 SLINGSHOT_SVC_IDS=7 timeout 60 srun -N2 --network-vnis=0 sh -c "$TASK_ENV")
expect_eq "--network-vnis=0 runs" "$?" 0
expect_eq "... and its two tasks have no SLINGSHOT_* or FI_CXI_* at all" \
    "$(printf '%s\n' "$out" | grep -c '^n[1-3] $')" 2

# ---- after the jobs: released, destroyed everywhere, nothing in the FM -----------
all_settled () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=active"
    [ "$(jq '.reservations | length' <<<"$HTTP_BODY")" = 0 ] || return 1
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=releasing"
    [ "$(jq '.reservations | length' <<<"$HTTP_BODY")" = 0 ] || return 1
    [ -z "$(fm_jobs)" ]
}
wait_for 20 all_settled
TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=active"
expect_json "no reservation is left active" '.reservations | length' 0
TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=releasing"
expect_json "none is left quarantined" '.reservations | length' 0
for n in n1 n2 n3; do
    TOKEN=$(node_token $n) http GET "/v1/nodes/$n"
    expect_json "$n has nothing left to clean up" .cleanup_needed 0
    expect_eq "$n's NICs hold no job service" "$(sim_count $n cxi0)$(sim_count $n cxi3)" 00
done
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job1"
expect_json "job $job1 is released" .state released
expect_eq "fmsim holds nothing" "$(fm_jobs)" ""

# ---- scancel of a running job releases it ------------------------------------------
job3=$(cd "$T/out" && timeout 30 sbatch --parsable -N1 -o /dev/null --wrap 'sleep 60')
wait_for 20 test "$(slurm_job_state "$job3")" = RUNNING
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job3"
expect_json "the running job $job3 holds an active reservation" .state active
timeout 10 scancel "$job3"
released () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    [ "$(jq -r .state <<<"$HTTP_BODY")" = released ]
}
wait_for 20 released "$job3"
expect_json "scancel released it" .state released

# ---- a job ends while the broker is down: no node drained, reports spooled ------
spooled () { ls "$T/$1/spool" 2>/dev/null | grep -c '\.json$'; }
# The job says its own id (squeue's newest running job might be another).
timeout 90 srun -N2 -w n1,n3 sh -c 'echo "job $SLURM_JOB_ID"; sleep 6' \
    >"$T/outage.out" 2>&1 &
outage_srun=$!
_running_on () { [ "$(sim_count "$1" cxi0)" = 1 ]; }
wait_for 30 _running_on n1 && wait_for 30 _running_on n3
_outage_job () { grep -q '^job [0-9]' "$T/outage.out"; }
wait_for 10 _outage_job
outage_job=$(sed -n 's/^job \([0-9]*\)$/\1/p' "$T/outage.out" | head -n 1)
broker_stop
wait "$outage_srun"
expect_eq "a job whose end falls in a broker outage completes" "$?" 0
_spooled_both () { [ "$(spooled n1)$(spooled n3)" = 11 ]; }
wait_for 30 _spooled_both
expect_eq "n1's and n3's Epilogs spooled their reports" "$(spooled n1)$(spooled n3)" 11
expect_eq "... having destroyed the services" "$(sim_count n1 cxi0)$(sim_count n3 cxi0)" 00
# The job stays completing (its nodes "mix") until EpilogSlurmctld, which
# retries the release, has ended: a drained node never gets idle.
wait_for 30 _slurm_node_is n1 idle && wait_for 30 _slurm_node_is n3 idle
expect_eq "no node is drained (n1 n3)" "$(slurm_node_state n1) $(slurm_node_state n3)" "idle idle"
expect_match "the hook's log says the report was spooled" "$(cat "$VNIB_HOOK_LOG")" \
    "warning vnibroker: epilog_slurmd job $outage_job: the broker did not take the report .*spooled in $T/n1/spool"
# EpilogSlurmctld runs when slurmctld gets to it, which under load can be
# after the nodes' Epilogs: the broker comes back only once it has given
# up and spooled the release (else its first try would rightly succeed).
_release_spooled () { [ -f "$VNIB_SPOOL/$outage_job" ]; }
wait_for 30 _release_spooled
expect_eq "EpilogSlurmctld spooled the job's release" "$?" 0
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$outage_job"
expect_json "the reservation is still active (EpilogSlurmctld spooled the release)" .state active
if [ "$(jq -r .state "$T/http.body")" != active ]; then
    # Who released it, and when, against what the hook did.
    TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$outage_job"
    jq -c '.events[] | [.time, .actor, .action, .node]' "$T/http.body" | sed 's/^/#   /'
    sed 's/^/#   hook: /' "$VNIB_HOOK_LOG"
fi
for n in n1 n3; do # what vnib-agent-flush.timer runs
    "$BUILD/vnib-agent" --config "$T/$n/agent.toml" flush >"$T/flush.out" 2>&1
    expect_match "vnib-agent flush on $n sends its report" "$(cat "$T/flush.out")" "flush: 1 sent, 0 dropped, 0 left"
done
TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$outage_job"
expect_json "the release (the reconcile's) needs no quarantine: both nodes confirmed" .state released

# ---- the broker stopped: new jobs are refused; back, they run -------------------
broker_stop
out=$(timeout 60 srun -N1 true 2>&1)
expect_eq "with the broker down, srun is refused (fail closed)" "$?" 1
expect_match "... Slurm says the controller prolog failed" "$out" 'PrologSlurmctld failed'
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
out=$(timeout 60 srun -N1 sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
expect_match "with the broker back, new jobs run isolated" "$out" '^30[0-9][0-9]$'

# ---- a stuck CXI service: quarantine kept, node drained, admin recovery ------------
# Every destroy on n2's cxi1 answers EBUSY, as if a process held an LNI.
sim_jq n2 cxi1 '.faults.destroy_ebusy = 1000'
timeout 60 srun -N1 -w n2 true
expect_eq "the job itself completes" "$?" 0
stuck_job=$(timeout 5 squeue -h -t all -w n2 -o '%i' | sort -n | tail -n 1)
# (the state is asked again on each try, not once before the wait)
wait_for 20 _slurm_node_is n2 drain
expect_eq "Slurm drained n2 (its Epilog failed)" "$(slurm_node_state n2)" drain
expect_match "... reason: Epilog error" "$(slurm_node_reason n2)" 'Epilog error'
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$stuck_job"
expect_json "the job's VNI stays quarantined" .state releasing
TOKEN=$ADMIN_TOKEN http GET /v1/nodes/n2
expect_json "the broker marked n2 drained too" .drained true
# The admin's recipe (plugins/slurm/README.md).
sim_jq n2 cxi1 '.faults.destroy_ebusy = 0'
"$BUILD/vnib-agent" --config "$T/n2/agent.toml" clean --all >"$T/clean.out" 2>&1
expect_eq "vnib-agent clean --all on n2 exits 0" "$?" 0
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$stuck_job"
expect_json "the quarantine ends" .state released
TOKEN=$ADMIN_TOKEN http DELETE /v1/nodes/n2/drain
expect_json "vnibctl node n2 --undrain (here its API call) returns it in the broker" .drained false
slurm_resume n2
expect_eq "scontrol resume returns n2" "$(slurm_node_state n2)" idle
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
expect_match "n2 runs jobs again" "$out" '^30[0-9][0-9]$'

# ---- the session token never shows in Slurm's views of the job ----------------
# A task of a 3-node step (hwcoll: it has the token) asks Slurm for its own
# step and job, in full (-dd; run as root here, which sees at least what
# the owner sees).  The harness has no slurmdbd, so sacct has nothing; it
# would store the job's comment and extra, which hold at most the lease
# (no token).
VIEW='if [ "$SLURMD_NODENAME" = n1 ]; then echo "TOKEN $FI_CXI_COLL_MCAST_TOKEN"; scontrol -dd show step "$SLURM_JOB_ID.$SLURM_STEP_ID"; scontrol -dd show job "$SLURM_JOB_ID"; fi'
out=$(timeout 60 srun -N3 sh -c "$VIEW" 2>"$T/srun.err")
tok=$(printf '%s\n' "$out" | sed -n 's/^TOKEN //p' | head -n 1)
views=$(printf '%s\n' "$out" | grep -v '^TOKEN ')
expect_match "a 3-node step's task has the session token" "$tok" '^.{8,}$'
expect_match "... and sees its step in scontrol" "$views" 'StepId=[0-9]+\.0 '
expect_match "... and its job" "$views" 'JobId=[0-9]+ JobName='
tok_re=$(printf '%s' "${tok:-no-token}" | sed 's/[][\.*^$+?(){}|]/\\&/g')
# The check below can fail: its pattern finds the token in a view that
# shows it (scontrol's own layout, the token as a value).
expect_match "... the token's pattern finds it where it is shown" \
    "   Comment=x Extra=$tok Reservation=(null)" "$tok_re"
expect_no_match "... neither shows the token" "$views" "$tok_re"

slurm_stop
finish
