#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# PrologSlurmctld rides through a broker outage (issue 45, part 1): its
# reserve is tried again with back-off while the broker is unreachable or
# answers 503, for RESERVE_RETRY_S (capped by Slurm's PrologEpilogTimeout,
# 30 s in the harness, less 5 s).  A job submitted while the broker is
# stopped, or while PostgreSQL is, starts isolated once it is back ~3 s
# later (its VNI in the broker and in its tasks' SLINGSHOT_VNIS), and the
# hook's log has the retry once when it begins and once when it ends.  With
# the outage longer than the bound (RESERVE_RETRY_S=2) the outage policy
# applies: the job fails (ON_BROKER_DOWN=fail) or starts without isolation
# (allow).  A refusal other than 503 and 429 (here 401) is final at once.
# A job that finds the pool exhausted gets its VNI once another job ends.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
broker_pin_port "$T/b.toml"
for n in n1 n2 n3; do agent_setup "$n" 4; done
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" RELEASE_ATTEMPTS=1 ||
    { not_ok "the hook"; finish; }
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$T/%n/state" >"$T/plugstack.conf"
H=$VNIB_HOOK
slurm_start prolog="$H" epilog="$H" prolog_ctld="$H" epilog_ctld="$H" \
    plugstack="$T/plugstack.conf" || { not_ok "slurm starts"; slurm_dump_logs; finish; }

# hook_lines JOB: the PrologSlurmctld lines of the hook's log for JOB.
hook_lines () {
    grep "prolog_slurmctld job $1: " "$VNIB_HOOK_LOG" 2>/dev/null
}
# job_vni JOB: the first VNI of the job's newest reservation, or "none".
job_vni () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    jq -r '.vnis[0] // "none"' <<<"$HTTP_BODY"
}
# run_job NAME: srun -N2 in the background, its tasks saying their job and
# VNIs into $T/NAME.out; sets SRUN.
run_job () {
    timeout 90 srun -N2 -w n1,n2 \
        sh -c 'echo "$SLURMD_NODENAME $SLURM_JOB_ID ${SLINGSHOT_VNIS:-none}"' \
        >"$T/$1.out" 2>&1 &
    SRUN=$!
}
# ran NAME: the "job VNIS" both tasks of the job NAME printed (one line
# when they agree), or what srun said.
ran () {
    sed -n 's/^n[12] //p' "$T/$1.out" | sort -u
}
# retries_begun N: the hook's log says more than N times that a reserve
# is being retried.
retries_begun () {
    [ "$(grep -c 'retrying for up to' "$VNIB_HOOK_LOG" 2>/dev/null)" -gt "$1" ]
}

# ---- the broker stopped, back after ~3 s: the job starts isolated -----------
broker_stop
run_job down
wait_for 20 retries_begun 0
sleep 3
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }
wait "$SRUN"
expect_eq "a job submitted while the broker is stopped runs once it is back" "$?" 0
read -r job vni <<<"$(ran down)"
expect_match "... both tasks see the job's VNI" "$(ran down)" '^[0-9]+ 30[0-9][0-9]$'
expect_eq "... the VNI of its reservation in the broker" "${vni:-}" "$(job_vni "${job:-0}")"
lines=$(hook_lines "$job")
expect_match "the hook's log: the retry begins, broker unreachable, for 25 s:" \
    "$lines" "warning vnibroker: prolog_slurmctld job $job: reserve: broker unreachable \(.*\); retrying for up to 25\.000 s"
expect_match "... RESERVE_RETRY_S=30 cut to 5 s before PrologEpilogTimeout (30 s)" "$lines" \
    "retrying for up to 25\.000 s \(RESERVE_RETRY_S=30 cut to 5 s before Slurm's PrologSlurmctld timeout, 30 s\)"
expect_match "... and it ends: reserved, with the attempts and the time" "$lines" \
    "warning .*job $job: reserve: reserved at attempt [0-9]+, after [0-9]+\.[0-9]+ s \(first failure: broker unreachable"
expect_eq "... two reserve lines in all, not one per attempt" \
    "$(printf '%s\n' "$lines" | grep -c ': reserve: ')" 2
attempts=$(printf '%s\n' "$lines" | sed -n 's/.*reserved at attempt \([0-9]*\),.*/\1/p')
echo "# broker stopped for ~3 s: $(printf '%s\n' "$lines" | grep -o 'reserved at attempt [0-9]*, after [0-9.]* s')"
if [ "${attempts:-0}" -ge 3 ]; then
    ok "... after several attempts ($attempts)"
else
    not_ok "... after several attempts (${attempts:-none})"
fi

# ---- PostgreSQL stopped (the broker answers 503), back after ~3 s -----------
pg_stop
run_job nodb
wait_for 20 retries_begun 1
sleep 3
pg_resume_start || { not_ok "PostgreSQL restarts"; finish; }
wait "$SRUN"
expect_eq "a job submitted while PostgreSQL is stopped runs once it is back" "$?" 0
read -r job vni <<<"$(ran nodb)"
expect_match "... both tasks see the job's VNI" "$(ran nodb)" '^[0-9]+ 30[0-9][0-9]$'
expect_eq "... the VNI of its reservation in the broker" "${vni:-}" "$(job_vni "${job:-0}")"
lines=$(hook_lines "$job")
expect_match "the hook's log: the broker answered a 503, retried" "$lines" \
    "job $job: reserve: the broker answered (unavailable|database_unavailable|deadline_exceeded); retrying"
expect_match "... and reserved" "$lines" "job $job: reserve: reserved at attempt [0-9]+"
echo "# PostgreSQL stopped for ~3 s: $(printf '%s\n' "$lines" | grep -o 'reserved at attempt [0-9]*, after [0-9.]* s')"

# ---- longer than RESERVE_RETRY_S: the outage policy -------------------------
slurm_hook_set RESERVE_RETRY_S 2
broker_stop
t0=$(now_ms)
out=$(timeout 60 srun -N1 -w n1 true 2>&1)
rc=$?
took=$(($(now_ms) - t0))
expect_eq "broker away past RESERVE_RETRY_S=2, ON_BROKER_DOWN=fail: srun fails" "$rc" 1
expect_match "... Slurm says the controller prolog failed" "$out" 'PrologSlurmctld failed'
job=$(timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1)
lines=$(hook_lines "$job")
expect_match "... the hook gave up after the bound" "$lines" \
    "warning .*job $job: reserve: giving up after [0-9]+ attempts in 2\.[0-9]+ s \(first failure: broker unreachable"
expect_match "... then refused the job" "$lines" "err .*job $job: no VNI reservation, job refused: "
echo "# RESERVE_RETRY_S=2: srun failed after $took ms ($(printf '%s\n' "$lines" | grep -o 'giving up after [0-9]* attempts in [0-9.]* s'))"
if [ "$took" -lt 15000 ]; then
    ok "... within the bound, not Slurm's timeout (${took} ms)"
else
    not_ok "... within the bound, not Slurm's timeout (${took} ms)"
fi

slurm_hook_set ON_BROKER_DOWN allow
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo "$SLURM_JOB_ID ${SLINGSHOT_VNIS:-none}"' 2>&1)
expect_eq "... ON_BROKER_DOWN=allow: the job runs" "$?" 0
job=${out%% *}
expect_eq "... without isolation" "${out#* }" none
lines=$(hook_lines "$job")
expect_match "... after the bound" "$lines" "job $job: reserve: giving up after [0-9]+ attempts in 2\."
expect_match "... and says so" "$lines" "warning .*job $job: broker unreachable .*; starting WITHOUT VNI isolation"
expect_match "... its comment too" "$(timeout 5 scontrol show job "$job")" \
    "Comment=vnibroker: broker unreachable at start; no VNI isolation"
slurm_hook_set ON_BROKER_DOWN fail
broker_start "$T/b.toml" || { not_ok "broker restarts"; finish; }

# ---- a refusal other than 503 and 429 is final at once ----------------------
(umask 077 && echo "vnib1.not-a-real-token" >"$T/bad.token")
slurm_hook_set VNIB_TOKEN_FILE "$T/bad.token"
slurm_hook_set RESERVE_RETRY_S 30
t0=$(now_ms)
out=$(timeout 60 srun -N1 -w n3 true 2>&1)
rc=$?
took=$(($(now_ms) - t0))
expect_eq "a 401 refusal fails the job" "$rc" 1
job=$(timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1)
lines=$(hook_lines "$job")
expect_match "... the hook says why" "$lines" "err .*job $job: no VNI reservation, job refused: vnibctl: unauthorized: "
expect_no_match "... and did not retry" "$lines" "retrying|giving up"
if [ "$took" -lt 10000 ]; then
    ok "... at once (${took} ms)"
else
    not_ok "... at once (${took} ms)"
fi

# ---- a short pool: the reserve waits for a VNI to come back -----------------
# Two VNIs, held by two jobs until $T/release exists; a third job starting
# meanwhile gets 503 vni_pool_exhausted, and its reserve passes once the
# holders are let go (not after a fixed time: on a loaded machine a
# holder's own start could outlast it).
slurm_hook_set VNIB_TOKEN_FILE "$T/sched.token"
broker_stop
sed -i 's/^pool = .*/pool = "3000-3001"/' "$T/b.toml"
broker_start "$T/b.toml" || { not_ok "broker restarts with a pool of 2"; finish; }
rm -f "$T/release"
for n in 1 2; do
    timeout 120 srun -N1 -w "n$n" sh -c "echo \"\${SLINGSHOT_VNIS:-none}\"; while [ ! -e '$T/release' ]; do sleep 0.2; done" \
        >"$T/hold$n.out" 2>&1 &
    holders="${holders:-} $!"
done
_holding () { grep -q '^300[01]$' "$T/hold1.out" && grep -q '^300[01]$' "$T/hold2.out"; }
wait_for 30 _holding
expect_eq "two jobs hold the pool's two VNIs" "$(cat "$T/hold1.out" "$T/hold2.out" | sort | tr '\n' ' ')" "3000 3001 "
timeout 90 srun -N1 -w n3 sh -c 'echo "$SLURM_JOB_ID ${SLINGSHOT_VNIS:-none}"' >"$T/third.out" 2>&1 &
third=$!
_third_waits () { grep -q 'reserve: the broker answered vni_pool_exhausted; retrying' "$VNIB_HOOK_LOG"; }
wait_for 30 _third_waits || echo "# the third job's reserve was not refused for want of VNIs"
touch "$T/release"
wait "$third"
expect_eq "a third job, started on the exhausted pool, runs" "$?" 0
out=$(cat "$T/third.out")
job=${out%% *}
expect_match "... isolated, once a VNI came back" "${out#* }" '^300[01]$'
lines=$(hook_lines "$job")
expect_match "... the hook retried on vni_pool_exhausted" "$lines" \
    "job $job: reserve: the broker answered vni_pool_exhausted; retrying for up to"
expect_match "... and reserved" "$lines" "job $job: reserve: reserved at attempt [0-9]+"
echo "# pool exhausted: $(printf '%s\n' "$lines" | grep -o 'reserved at attempt [0-9]*, after [0-9.]* s')"
# shellcheck disable=SC2086 # two PIDs
wait $holders

slurm_stop
finish
