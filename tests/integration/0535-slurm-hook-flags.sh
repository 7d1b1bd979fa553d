#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The hook path (vnib-slurm-hook, vnib_spank.so) under the slurm.conf
# forms sites use beyond 0510's: several scripts for one Prolog and
# Epilog (a glob, "prolog.d/*", in every release; several Prolog= and
# Epilog= lines from 24.05 on), each of which runs, ours among them; and on Slurm 24.05
# and later PrologFlags=RunInJob, where the node Prolog and Epilog run
# inside the job's extern slurmstepd.  Slurm 22.05's node Prolog has no
# SLURM_JOB_NODELIST (23.02.6 added it): the hook needs none.  In each
# case an srun -N2 job's tasks see the reservation's VNIs, and its end
# releases it, destroys its services and takes it out of quarantine.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)"
for n in n1 n2 n3; do agent_setup "$n" 4; done
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" EPILOG_RETRY_BUSY=2s ||
    { not_ok "the hook"; finish; }
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$T/%n/state" >"$T/plugstack.conf"
H=$VNIB_HOOK

# A site's own scripts beside ours: each leaves a mark with the
# environment Slurm gave it (hooks get no PATH).
mkdir -p "$T/marks"
for s in first last; do
    cat >"$T/$s.sh" <<EOS
#!/bin/sh
PATH=/usr/bin:/bin
env | grep -E '^(SLURM_JOB_ID|SLURM_JOB_NODELIST|SLURM_NODELIST|SLURM_SCRIPT_CONTEXT)=' | sort \
    >"$T/marks/$s.\$SLURMD_NODENAME.\$SLURM_JOB_ID"
EOS
    chmod 755 "$T/$s.sh"
done

get () {
    TOKEN=$SCHED_TOKEN http GET "$1"
    jq -r "$2" <<<"$HTTP_BODY"
}
services () { echo "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)"; }

# run_job LABEL: an srun -N2 job on n1 and n2; its tasks must see the
# reservation's VNI, and its end must leave nothing behind.
run_job () {
    local out job vnis
    out=$(timeout 60 srun -N2 -w n1,n2 sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"' 2>"$T/srun.err")
    expect_eq "$1: srun -N2 runs" "$?" 0
    [ -n "$out" ] || { slurm_dump_logs 20; sed 's/^/#   /' "$T/srun.err"; }
    job=$(timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1)
    vnis=$(get "/v1/reservations/$job" '.vnis | join(",")')
    expect_match "$1: the broker reserved job $job a VNI" "$vnis" '^30[0-9][0-9]$'
    expect_eq "$1: both tasks saw it" "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" "n1 $vnis n2 $vnis "
    _settled () { [ "$(get "/v1/reservations/$job" .state)" = released ] && [ "$(services)" = 000 ]; }
    wait_for 30 _settled
    expect_eq "$1: job $job is released and out of quarantine" "$(get "/v1/reservations/$job" .state)" released
    expect_eq "$1: its services are gone" "$(services)" 000
    LAST_JOB=$job
}

# ---- several scripts per Prolog and Epilog: a glob --------------------------
# Slurm runs them in reverse alphabetical order: the site's first, ours
# second in the Prolog; ours first in the Epilog.
mkdir -p "$T/prolog.d" "$T/epilog.d"
cp "$T/first.sh" "$T/prolog.d/90-site"
cp "$H" "$T/prolog.d/50-vnib"
cp "$H" "$T/epilog.d/90-vnib"
cp "$T/last.sh" "$T/epilog.d/10-site"
slurm_start prolog="$T/prolog.d/*" epilog="$T/epilog.d/*" prolog_ctld="$H" \
    epilog_ctld="$H" plugstack="$T/plugstack.conf" ||
    { not_ok "slurm starts"; slurm_dump_logs; finish; }
ok "Slurm $VNIB_SLURM_VERSION is up with Prolog=prolog.d/* and Epilog=epilog.d/*, ours among them"
run_job "prolog.d/*"
j=$LAST_JOB
_marks () { [ -f "$T/marks/last.n1.$j" ] && [ -f "$T/marks/last.n2.$j" ]; }
wait_for 10 _marks
expect_eq "the site's Prolog script ran on both nodes too" \
    "$(ls "$T/marks" | grep -c "^first\.n[12]\.$j\$")" 2
expect_eq "... and its Epilog script" "$(ls "$T/marks" | grep -c "^last\.n[12]\.$j\$")" 2
if [ "$VNIB_SLURM_RELEASE" -lt 2302 ]; then
    expect_eq "Slurm $VNIB_SLURM_VERSION's node Prolog has no SLURM_JOB_NODELIST (the hook needs none)" \
        "$(grep -c '^SLURM_JOB_NODELIST=' "$T/marks/first.n1.$j")" 0
else
    expect_eq "Slurm $VNIB_SLURM_VERSION's node Prolog has SLURM_JOB_NODELIST" \
        "$(grep -c '^SLURM_JOB_NODELIST=n\[1-2\]$' "$T/marks/first.n1.$j")" 1
fi
slurm_stop

# ---- 24.05+: several Prolog= lines, and PrologFlags=RunInJob -------------------
# RunInJob: the node Prolog and Epilog run in the job's extern slurmstepd.
if [ "$VNIB_SLURM_RELEASE" -ge 2405 ]; then
    slurm_start prolog="$T/first.sh" epilog="$H" prolog_ctld="$H" \
        epilog_ctld="$H" plugstack="$T/plugstack.conf" prolog_flags=RunInJob \
        conf="Prolog=$H
Epilog=$T/last.sh" ||
        { not_ok "slurm starts with PrologFlags=RunInJob"; slurm_dump_logs; finish; }
    ok "Slurm $VNIB_SLURM_VERSION is up with two Prolog= and two Epilog= lines and PrologFlags=RunInJob"
    run_job "RunInJob"
    j=$LAST_JOB
    wait_for 10 _marks
    expect_eq "RunInJob: the listed Prolog and Epilog scripts ran on both nodes" \
        "$(ls "$T/marks" | grep -c "^\(first\|last\)\.n[12]\.$j\$")" 4
    slurm_stop
else
    skip "several Prolog= lines and PrologFlags=RunInJob: Slurm $VNIB_SLURM_VERSION has neither (24.05 and later do)"
fi
expect_db_consistent
finish
