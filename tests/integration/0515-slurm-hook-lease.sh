#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The prolog hooks carry the job's lease (plugins/slurm/README.md, "Leases
# on the hook path"): PrologSlurmctld reserves the job with a lease and
# writes it into the job's extra (Slurm 24.11 and later) or comment, which
# Slurm puts into every credential of the job; each node's Prolog starts
# the job from it, with no broker request, so the nodes report only
# destroyed, at the job's end.  With PrologFlags=Alloc (the Prolog at
# allocation) and without (the Prolog at a node's first step), for srun
# and batch jobs.  A job that uses extra itself keeps it (the lease goes
# into its comment); one that uses every field keeps them, and its nodes
# ask the broker as before, as does a node that refuses the lease.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)$(slurm_lease_toml)"
for n in n1 n2 n3; do
    agent_setup "$n" 4 "
[lease]
public_keys = [\"$T/lease.pub\"]
max_skew_s = $SLURM_LEASE_SKEW"
done
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" || { not_ok "the hook"; finish; }
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$T/%n/state" >"$T/plugstack.conf"
mkdir -p "$T/out"
chmod 777 "$T/out"
H=$VNIB_HOOK
start () {
    slurm_start prolog="$H" epilog="$H" prolog_ctld="$H" epilog_ctld="$H" \
        plugstack="$T/plugstack.conf" "$@" || { not_ok "slurm starts"; slurm_dump_logs; finish; }
}

# Slurm 24.11 and later carry it in extra, 22.05 in comment.
if [ "$VNIB_SLURM_RELEASE" -ge 2411 ]; then FIELD=Extra; else FIELD=Comment; fi
last_job () { timeout 5 squeue -h -t all -o '%i' | sort -n | tail -n 1; }
job_field () { timeout 5 scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
state_of () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"
    jq -r '.state // "none"' <<<"$HTTP_BODY"
}
# reports JOB: the nodes' reports about the job, "node:cxi", sorted.
reports () {
    TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$1&action=report&limit=1000"
    jq -r '.events[] | "\(.node):\(.detail.cxi)"' <<<"$HTTP_BODY" | sort | tr '\n' ' '
}
_released () { [ "$(state_of "$1")" = released ]; }

# check JOB WANT-REPORTS WHAT: the job ran from its lease (or not), and is
# released at its end.
check () {
    wait_for 20 _released "$1"
    expect_eq "$3: released at its end" "$(state_of "$1")" released
    expect_eq "$3: its nodes' reports" "$(reports "$1")" "$2"
}

# ---- PrologFlags=Alloc (the Prolog at allocation) ---------------------------
start
out=$(timeout 60 srun -N3 sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"' 2>&1)
job=$(last_job)
expect_match "srun -N3 runs, its tasks see the job's VNI" "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" \
    '^n1 30[0-9][0-9] n2 30[0-9][0-9] n3 30[0-9][0-9] $'
expect_match "the job's ${FIELD,,} holds its lease" "$(job_field "$job" "$FIELD")" '^vnib1\.'
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job"
expect_json "... a presumed reservation" .presumed true
check "$job" "n1:destroyed n2:destroyed n3:destroyed " \
    "srun, Alloc: no node asked the broker at the start (only destroyed)"

cat >"$T/out/job.sh" <<'EOS'
#!/bin/sh
srun sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"'
EOS
chmod 755 "$T/out/job.sh"
b=$(cd "$T/out" && runuser -u nobody -- timeout 30 sbatch --parsable -N2 -w n1,n2 -o "$T/out/b.out" job.sh)
expect_eq "a batch job -N2 completes" "$(slurm_wait_job "$b" 60)" COMPLETED
expect_match "... its tasks saw the job's VNI" "$(sort "$T/out/b.out" | tr '\n' ' ')" \
    '^n1 30[0-9][0-9] n2 30[0-9][0-9] $'
check "$b" "n1:destroyed n2:destroyed " "batch, Alloc: only destroyed"

# A job with extra of its own (24.11+) keeps it: its lease goes into its
# comment.
if [ "$FIELD" = Extra ]; then
    out=$(timeout 60 srun -N1 -w n1 --extra=mine sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
    job=$(last_job)
    expect_match "a job with its own extra runs isolated" "$out" '^30[0-9][0-9]$'
    expect_eq "... keeps its extra" "$(job_field "$job" Extra)" mine
    expect_match "... its comment holds its lease" "$(job_field "$job" Comment)" '^vnib1\.'
    check "$job" "n1:destroyed " "... only destroyed"
fi
# A job using every field Slurm has for it keeps them; its nodes ask the
# broker.
own=--comment=mine
[ "$FIELD" = Extra ] && own="$own --extra=mine"
# shellcheck disable=SC2086 # one or two options
out=$(timeout 60 srun -N1 -w n2 $own sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
job=$(last_job)
expect_match "a job with its own comment (and extra, 24.11+) runs isolated" "$out" '^30[0-9][0-9]$'
expect_eq "... keeps its comment" "$(job_field "$job" Comment)" mine
check "$job" "n2:created n2:creating n2:destroyed " "... and its node asked the broker"
# A lease a node refuses (it lists another key): that node asks the
# broker instead, the others start from the lease.
(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/other.key" 2>/dev/null)
openssl pkey -in "$T/other.key" -pubout -out "$T/other.pub"
sed -i "s|$T/lease.pub|$T/other.pub|" "$T/n3/agent.toml"
out=$(timeout 60 srun -N2 -w n1,n3 sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"' 2>&1)
job=$(last_job)
expect_match "with n3 refusing the lease, the job runs isolated on both nodes" \
    "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" '^n1 30[0-9][0-9] n3 30[0-9][0-9] $'
check "$job" "n1:destroyed n3:created n3:creating n3:destroyed " \
    "... n1 from the lease, n3 from the broker"
expect_match "... the hook's log says n3 refused it" \
    "$(grep "prolog_slurmd job $job:" "$VNIB_HOOK_LOG")" \
    "the job's lease was refused; asking the broker"
sed -i "s|$T/other.pub|$T/lease.pub|" "$T/n3/agent.toml"
slurm_stop

# ---- without PrologFlags=Alloc (the Prolog at a node's first step) ---------
start prolog_flags=none
out=$(timeout 60 srun -N2 -w n1,n3 sh -c 'echo "$SLURMD_NODENAME $SLINGSHOT_VNIS"' 2>&1)
job=$(last_job)
expect_match "srun -N2 without Alloc: its tasks see the job's VNI" \
    "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" '^n1 30[0-9][0-9] n3 30[0-9][0-9] $'
check "$job" "n1:destroyed n3:destroyed " "srun without Alloc: only destroyed"
b=$(cd "$T/out" && runuser -u nobody -- timeout 30 sbatch --parsable -N1 -w n2 -o "$T/out/c.out" job.sh)
expect_eq "a batch job without Alloc completes" "$(slurm_wait_job "$b" 60)" COMPLETED
expect_match "... its task saw the job's VNI" "$(cat "$T/out/c.out")" '^n2 30[0-9][0-9]$'
check "$b" "n2:destroyed " "batch without Alloc: only destroyed"

slurm_stop
expect_db_consistent
finish
