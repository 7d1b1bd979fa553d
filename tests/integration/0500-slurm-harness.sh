#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Slurm harness (slurm.sh) and the SPANK plugin on a real Slurm 22.05,
# without the broker or the agent: the hooks run on the job's nodes, the
# plugin copies a hand-written env file (installed by the Prolog, as
# vnib-agent will) into every task and refuses a malformed one, its
# options reach PrologSlurmctld, and a failing Prolog drains its node
# until it is resumed.  0510-slurm.sh drives the same pieces with the
# broker and the agent; this test keeps the plugin's edge cases.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm.sh"

[ -f "$VNIB_SLURM_OUT/vnib_spank.so" ] || { not_ok "the SPANK plugin is built ($VNIB_SLURM_OUT/vnib_spank.so)"; finish; }
# Slurm binds a plugin's calls lazily: a missing one fails only when made.
for so in vnib_spank.so switch_vnib.so; do
    expect_eq "every symbol $so needs is in Slurm $VNIB_SLURM_VERSION's libraries or its own" \
        "$(slurm_plugin_unresolved "$VNIB_SLURM_OUT/$so" | tr '\n' ' ')" ""
done
# sbatch, as the job's user, loads the plugin: a copy, not the checkout's.
SPANK=$(share "$VNIB_SLURM_OUT/vnib_spank.so")

H=$T/hooks         # what the hooks saw, one file per hook, node and job
STATE=$T/vnib      # the plugin's state_dir
mkdir -p "$H" "$STATE/jobs" "$T/out"
chmod 755 "$STATE" "$STATE/jobs"
chown nobody "$T/out"

# The job's env file as vnib-agent will write it.  LD_PRELOAD is not a
# SLINGSHOT_ or FI_CXI_ name, so the plugin must skip it.
cat >"$T/job.env" <<'EOF'
export SLINGSHOT_VNIS=1024,1025
export SLINGSHOT_DEVICES=cxi0
export SLINGSHOT_SVC_IDS=3
export SLINGSHOT_TCS=0xa
export FI_CXI_COLL_JOB_ID=vnibtest-JOBID
unset FI_CXI_HWCOLL_MIN_NODES
export LD_PRELOAD=/nonexistent/evil.so
EOF

# One recorder for the four hooks.  Slurm gives hooks no PATH.  The node
# Prolog installs the env file (a malformed one while $H/malformed
# exists) and fails while $H/fail.prolog.NODE exists; the Epilog removes
# the file.
cat >"$T/hook.sh" <<EOF
#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
kind=\$1
node=\${SLURMD_NODENAME:-ctld}
env >"$H/\$node.\$SLURM_JOB_ID.\$kind.tmp"
mv "$H/\$node.\$SLURM_JOB_ID.\$kind.tmp" "$H/\$node.\$SLURM_JOB_ID.\$kind"
f=$STATE/jobs/\$SLURM_JOB_ID.env
case \$kind in
prolog)
    [ -e "$H/fail.prolog.\$node" ] && exit 1
    if [ -e "$H/malformed" ]; then
        printf 'export SLINGSHOT_VNIS=1024\\nexport SLINGSHOT_DEVICES\\n' >"\$f.tmp"
    else
        sed "s/JOBID/\$SLURM_JOB_ID/" "$T/job.env" >"\$f.tmp"
    fi
    chown "\$SLURM_JOB_UID" "\$f.tmp" && chmod 0400 "\$f.tmp" && mv "\$f.tmp" "\$f"
    ;;
epilog)
    rm -f "\$f"
    ;;
esac
exit 0
EOF
chmod 755 "$T/hook.sh"
for kind in prolog epilog prolog_ctld epilog_ctld; do
    printf '#!/bin/sh\nexec %s %s\n' "$T/hook.sh" "$kind" >"$T/$kind.sh"
    chmod 755 "$T/$kind.sh"
done
echo "required $SPANK state_dir=$STATE" >"$T/plugstack.conf"

start=$(date +%s%N)
slurm_start prolog="$T/prolog.sh" epilog="$T/epilog.sh" \
    prolog_ctld="$T/prolog_ctld.sh" epilog_ctld="$T/epilog_ctld.sh" \
    plugstack="$T/plugstack.conf" || { not_ok "slurm starts"; finish; }
ok "three nodes idle $((($(date +%s%N) - start) / 1000000)) ms after start (port $VNIB_SLURM_PORT)"

# hook_nodes JOB KIND: the nodes on which a hook ran for JOB.
hook_nodes () {
    ls "$H" | sed -n "s/^\(n[0-9]*\)\.$1\.$2\$/\1/p" | sort | tr '\n' ' '
}

# slingshot_env: what a task prints of its Slingshot environment.
TASK_ENV='echo "$SLURMD_NODENAME: $(env | grep -E "^(SLINGSHOT_|FI_CXI_|LD_PRELOAD)" | LC_ALL=C sort | tr "\n" " ")"'

# ---- srun -N3: hooks, the env file in every task, the options -------------
out=$(SLINGSHOT_VNIS=999 FI_CXI_COLL_MCAST_TOKEN=leaked FI_CXI_RX_MATCH_MODE=hybrid \
    timeout 60 srun -N3 --network-vnis=2 --hwcoll=on sh -c "$TASK_ENV" 2>"$T/srun.err")
rc=$?
expect_eq "srun -N3 runs" "$rc" 0
job=$(timeout 5 squeue -h -t all -o '%i %j' | awk '$2 == "sh" { print $1 }' | tail -n 1)
want="FI_CXI_COLL_JOB_ID=vnibtest-$job FI_CXI_COLL_JOB_STEP_ID=0 FI_CXI_RX_MATCH_MODE=hybrid SLINGSHOT_DEVICES=cxi0 SLINGSHOT_SVC_IDS=3 SLINGSHOT_TCS=0xa SLINGSHOT_VNIS=1024,1025 "
expect_eq "every task has the job's env file, nothing from the shell" \
    "$(printf '%s\n' "$out" | sort)" "$(printf 'n1: %s\nn2: %s\nn3: %s' "$want" "$want" "$want")"
expect_match "the skipped LD_PRELOAD line is reported" "$(cat "$T/srun.err")" \
    'vnib: job [0-9]+: ignoring LD_PRELOAD'
expect_eq "the Prolog ran on n1 n2 n3" "$(hook_nodes "$job" prolog)" "n1 n2 n3 "
# Each node's Epilog and EpilogSlurmctld run when the job ends, each in
# its own time: wait for all of them, not for one node's.
_epilogs_done () {
    [ "$(hook_nodes "$job" epilog)" = "n1 n2 n3 " ] && [ -e "$H/ctld.$job.epilog_ctld" ]
}
wait_for 10 _epilogs_done
expect_eq "the Epilog ran on n1 n2 n3" "$(hook_nodes "$job" epilog)" "n1 n2 n3 "
expect_eq "PrologSlurmctld ran once" "$(ls "$H" | grep -c "^ctld\.$job\.prolog_ctld\$")" 1
ctld_env=$(cat "$H/ctld.$job.prolog_ctld" 2>/dev/null)
expect_match "--network-vnis=2 reaches PrologSlurmctld as SPANK_VNIB_VNIS" "$ctld_env" '^SPANK_VNIB_VNIS=2$'
expect_match "--hwcoll=on reaches PrologSlurmctld as SPANK_VNIB_HWCOLL" "$ctld_env" '^SPANK_VNIB_HWCOLL=on$'
expect_match "PrologSlurmctld sees the node list" "$ctld_env" '^SLURM_JOB_NODELIST=n\[1-3\]$'
expect_match "the node Prolog knows its node" "$(cat "$H/n2.$job.prolog")" '^SLURMD_NODENAME=n2$'
expect_match "the node Prolog sees the options too" "$(cat "$H/n2.$job.prolog")" '^SPANK_VNIB_VNIS=2$'
expect_eq "the Epilog removed the env file" "$(ls "$STATE/jobs")" ""

out=$(timeout 30 srun -N1 --network-vnis=5 true 2>&1)
rc=$?
expect_eq "srun refuses --network-vnis=5" "$rc" 255
expect_match "... saying why" "$out" 'network-vnis must be 0 to 4'
out=$(timeout 30 sbatch --hwcoll=maybe --wrap true 2>&1)
expect_match "sbatch refuses --hwcoll=maybe" "$out" 'hwcoll must be on, off or auto'

# ---- sbatch -N2 as a user, with an inner srun --------------------------------
cat >"$T/out/job.sh" <<EOF
#!/bin/sh
echo "prologs before the script: \$(ls $H | grep "^n.*\.\$SLURM_JOB_ID\.prolog\$" | cut -d. -f1 | tr '\n' ' ')"
sh -c '$TASK_ENV' | sed 's/^/batch /'
srun sh -c '$TASK_ENV' | sort | sed 's/^/step /'
EOF
job=$(cd "$T/out" && SLINGSHOT_TCS=0xff runuser -u nobody -- \
    timeout 30 sbatch --parsable -N2 --network-vnis=3 -o "$T/out/%j.out" job.sh)
state=$(slurm_wait_job "$job" 30)
expect_eq "sbatch -N2 job $job completes" "$state" COMPLETED
out=$(cat "$T/out/$job.out" 2>/dev/null)
want="FI_CXI_COLL_JOB_ID=vnibtest-$job FI_CXI_COLL_JOB_STEP_ID=%s SLINGSHOT_DEVICES=cxi0 SLINGSHOT_SVC_IDS=3 SLINGSHOT_TCS=0xa SLINGSHOT_VNIS=1024,1025 "
nodes=$(timeout 5 scontrol show hostnames "$(timeout 5 squeue -h -t all -j "$job" -o %N)" | tr '\n' ' ')
expect_eq "the Prolog ran on the job's nodes ($nodes) only" "$(hook_nodes "$job" prolog)" "$nodes"
expect_match "... before the batch script (PrologFlags=Alloc)" "$out" "^prologs before the script: $nodes\$"
expect_match "the batch script has the env file, step id batch" "$out" \
    "^batch n[0-9]: $(printf "$want" batch)\$"
expect_eq "the inner srun's tasks have it, step id 0" "$(printf '%s\n' "$out" | grep -c "^step n[0-9]: $(printf "$want" 0)\$")" 2
expect_match "the job ran as nobody, whose env file it was" "$(cat "$H/ctld.$job.prolog_ctld")" '^SLURM_JOB_USER=nobody$'
expect_match "PrologSlurmctld sees sbatch's --network-vnis=3" "$(cat "$H/ctld.$job.prolog_ctld")" '^SPANK_VNIB_VNIS=3$'

# ---- a malformed env file: the task is refused -------------------------------
touch "$H/malformed"
out=$(timeout 30 srun -N1 true 2>&1)
rc=$?
rm -f "$H/malformed"
expect_eq "a task with a malformed env file is refused (exit 1)" "$rc" 1
expect_match "... naming the line" "$out" 'vnib: job [0-9]+: malformed line 2 of the env file'

# ---- a failing Prolog drains its node; resume brings it back -----------------
touch "$H/fail.prolog.n3"
out=$(timeout 30 srun -N1 -w n3 true 2>&1)
rc=$?
rm -f "$H/fail.prolog.n3"
expect_eq "srun fails when the Prolog fails" "$rc" 1
# slurmctld may record the drain a moment after srun has returned.
wait_for 10 _slurm_node_is n3 drain
expect_eq "the node is drained" "$(slurm_node_state n3)" drain
expect_eq "... because of the Prolog" "$(slurm_node_reason n3)" "Prolog error"
slurm_resume n3 10
expect_eq "scontrol update state=resume makes it idle" "$(slurm_node_state n3)" idle
expect_eq "and it runs jobs again" "$(timeout 30 srun -N1 -w n3 hostname)" "$(hostname)"

# ---- stop, with a job still running -------------------------------------------
job=$(timeout 30 sbatch --parsable -N1 -o /dev/null --wrap "echo \$\$ >$T/sleeper.pid; exec sleep 300")
wait_for 10 test -s "$T/sleeper.pid"
sleeper=$(cat "$T/sleeper.pid" 2>/dev/null)
expect_eq "a long job runs" "$(slurm_job_state "$job")" RUNNING
pids=$VNIB_SLURM_PIDS
slurm_stop
expect_eq "slurm_stop ends the jobs' processes" "$(kill -0 "${sleeper:-0}" 2>/dev/null && echo alive)" ""
left=""
for entry in $pids; do
    kill -0 "${entry#*:}" 2>/dev/null && left="$left $entry"
done
expect_eq "slurm_stop ends every daemon" "$left" ""
expect_eq "... and leaves no slurmstepd" "$(ss -xlpH | grep -cF "$T/")" 0

[ "$FAILED" -eq 0 ] || slurm_dump_logs
finish
