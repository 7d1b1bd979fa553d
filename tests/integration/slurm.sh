# SPDX-License-Identifier: GPL-2.0-or-later
# A real Slurm cluster on loopback for integration tests, sourced after
# lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/slurm.sh"
#   slurm_start prolog=$T/prolog.sh epilog=$T/epilog.sh \
#       prolog_ctld=$T/ctld-prolog.sh epilog_ctld=$T/ctld-epilog.sh \
#       plugstack=$T/plugstack.conf || { not_ok "slurm starts"; finish; }
#   timeout 60 srun -N3 hostname
#
# slurm_start takes NAME=VALUE arguments, all optional:
#   dir=DIR            where everything lives (default $T/slurm); keep it
#                      short: slurmstepd's Unix sockets live under it and a
#                      socket path is at most 107 bytes
#   prolog=PATH        node Prolog (runs as root in slurmd, on every node
#                      of the allocation at allocation time: PrologFlags)
#   epilog=PATH        node Epilog
#   prolog_ctld=PATH   PrologSlurmctld
#   epilog_ctld=PATH   EpilogSlurmctld
#   plugstack=PATH     PlugStackConfig (SPANK plugins; default: an empty file)
#   prolog_flags=LIST  PrologFlags (default Alloc; "none" for none)
#   cpus=N             CPUs per node (default 4; more than the host has is
#                      fine, SlurmdParameters=config_overrides)
#   port=N             first of four TCP ports (default: derived from $$,
#                      skipping ports in use); never 6817/6818
#   conf=TEXT          extra slurm.conf lines, appended
#   switch=NAME        SwitchType=switch/NAME (default none)
#   switch_params=TEXT SwitchParameters=TEXT
#   plugin_dir=DIR     a folder searched after Slurm's own PluginDir (for
#                      switch_vnib.so: slurm_switch_setup)
#
# Which Slurm: VNIB_SLURM_VERSION (tests/run-all.sh runs each Slurm test
# once per release in VNIB_SLURM_VERSIONS, default "22.05 24.11 26.05").
# 22.05, or unset, is the installed Slurm (Debian 12's) and the plugins in
# $BUILD; another is the build deploy/tools/slurm-build.sh made of that
# release ($VNIB_CACHE/slurm-X.Y.Z: its commands first in PATH, its
# PluginDir) and the plugins make built for it in $BUILD/slurm-X.Y.Z.  A
# release never built skips the script (a failure for 24.11 under
# VNIB_REQUIRE_SLURM=1, which `make deps` builds; a skip for 26.05, whose
# source a site brings: `make deps-slurm SLURM_SRC=DIR`).  Sourcing sets
# VNIB_SLURM_VERSION to the full version (22.05.8, 24.11.5...),
# VNIB_SLURM_OUT to the folder of its plugins, and VNIB_SLURM_RELEASE to
# its number for comparisons (22.05 -> 2205).
# A hook left out is not configured.  Hooks must be executable.
#
# It writes DIR/slurm.conf (ClusterName=vnibtest, nodes n1, n2, n3 on
# 127.0.0.1 with a port each, partition "debug"), starts slurmctld and
# three slurmd in the foreground (-D) in the background, tracks their PIDs,
# exports SLURM_CONF for srun, sbatch, squeue, scontrol and sinfo, and
# waits until the three nodes are idle (at most 20 s; about 1 s here).
# It sets VNIB_SLURM_DIR, VNIB_SLURM_LOGS (the daemons' logs: slurmctld.log,
# slurmd.n1.log, ...), VNIB_SLURM_PORT (SlurmctldPort; n1..n3 listen on the
# next three) and VNIB_SLURM_PIDS ("ctld:PID n1:PID n2:PID n3:PID").
# Helpers: slurm_node_state, slurm_node_reason, slurm_resume, slurm_job_state,
# slurm_wait_job, slurm_dump_logs, slurm_ctld_stop, slurm_ctld_start, and
# for vnibroker's hook slurm_hook_setup and slurm_hook_set, for the switch
# plugin slurm_switch_setup and slurm_ctld_kill (each described where it
# is defined).
#
# slurm_stop cancels the jobs left (so that slurmstepd ends their tasks),
# sends the daemons SIGTERM, SIGKILL after 5 s, then kills any slurmstepd
# still listening under DIR.  It also runs from the EXIT trap, before
# lib.sh's cleanup, so a failing test leaves nothing running.  Slurm runs
# as root here (SlurmUser=root, SlurmdUser=root, no munged: auth/none and
# cred/none): sourced by anyone else, this file skips the whole script
# (lib.sh's skip_slurm, a failure under VNIB_REQUIRE_SLURM=1).  Job ids
# start at 1 in every cluster.
#
# ---- Slurm 22.05.8 (Debian 12) facts, as observed with this harness ------
#
# Environment of the hooks.  None of them gets PATH (a shell falls back to
# its built-in default; exec'd programs must be named by absolute path or
# set PATH themselves).  PWD is the daemon's working directory.
#   PrologSlurmctld / EpilogSlurmctld (run by slurmctld, as SlurmUser):
#     SLURM_JOB_ID SLURM_JOBID SLURM_JOB_UID SLURM_JOB_USER SLURM_JOB_GID
#     SLURM_JOB_GROUP SLURM_JOB_NODELIST (e.g. n[1-3]) SLURM_JOB_NUM_NODES
#     SLURM_JOB_CPUS_PER_NODE (e.g. 1(x3)) SLURM_JOB_NAME SLURM_JOB_ACCOUNT
#     SLURM_JOB_PARTITION SLURM_JOB_WORK_DIR SLURM_JOB_RESTART_COUNT
#     SLURM_CLUSTER_NAME SLURM_SCRIPT_CONTEXT=prolog_slurmctld|epilog_slurmctld
#     SLURM_JOB_STDIN/STDOUT (sbatch only); the epilog adds
#     SLURM_JOB_EXIT_CODE SLURM_JOB_EXIT_CODE2 SLURM_JOB_DERIVED_EC.
#   Prolog / Epilog (run by slurmd on each node, as root):
#     SLURMD_NODENAME (n1...) SLURM_JOB_ID SLURM_JOBID SLURM_JOB_UID SLURM_UID
#     SLURM_JOB_USER SLURM_JOB_GID SLURM_NODELIST (the job's nodes; there is
#     NO SLURM_JOB_NODELIST here) SLURM_JOB_NUM_NODES SLURM_JOB_CPUS_PER_NODE
#     SLURM_JOB_PARTITION SLURM_JOB_WORK_DIR SLURM_JOB_RESTART_COUNT
#     SLURM_CLUSTER_NAME SLURM_CONF (slurmd's -f path)
#     SLURM_SCRIPT_CONTEXT=prolog_slurmd|epilog_slurmd; no SLURM_JOB_NAME,
#     SLURM_JOB_ACCOUNT or SLURM_JOB_GROUP; the epilog adds the exit codes.
#   All four get the SPANK job control environment: a plugin's
#     spank_job_control_setenv(sp, "VNIB_VNIS", "2", 1) in srun/sbatch
#     arrives as SPANK_VNIB_VNIS=2; Slurm also adds every SPANK option as
#     SPANK__SLURM_SPANK_OPTION_<plugin>_<option> (dashes become _), e.g.
#     SPANK__SLURM_SPANK_OPTION_vnib_network_vnis=2.  A batch script sees
#     them as SLURM_SPANK_VNIB_VNIS etc.; srun tasks do not.
# Node Prolog timing.  Without PrologFlags=Alloc the Prolog runs on a node
#   only when the first step starts there: for sbatch on the batch node
#   just before the script, on the other nodes only when an srun inside
#   reaches them (never, if none does), while the Epilog runs on every node
#   of the job regardless.  With PrologFlags=Alloc (this harness's default)
#   it runs on all nodes at allocation, and the batch script and srun wait
#   for it.
# PrologSlurmctld exits non-zero:
#   srun (new allocation): the job is CANCELLED, srun exits 1 ("PrologSlurmctld
#     failed, job killed"); no node Prolog runs.
#   sbatch: the job is requeued (Restarts=1), PENDING with a BeginTime 121 s
#     later, and tried again; with sbatch --no-requeue it is CANCELLED.
#   EpilogSlurmctld runs after a failed PrologSlurmctld, in both cases.
# Node Prolog exits non-zero: the node is DRAINED, reason "Prolog error";
#   srun exits 1 ("Prolog failure on node n3"), the job is killed; a batch
#   job is requeued and HELD (Reason=launch_failed_requeued_held, needs
#   scontrol release).  The Epilog still runs on that node.
# Node Epilog exits non-zero: the node is DRAINED, reason "Epilog error";
#   the job itself still ends COMPLETED and srun exits 0.
# A drained node comes back with `scontrol update nodename=n1 state=resume`;
#   for a few hundred ms it may show idle* (not responding) until slurmd
#   registers again, so wait for "idle" (slurm_resume does).  Drains stay
#   with ReturnToService=2, which only returns DOWN nodes on registration.
# A SPANK plugin's slurm_spank_task_init_privileged returning < 0 ends the
#   task with exit status 1 before it runs ("spank_task_init_privileged
#   failed"); its slurm_error lines reach the task's stderr.  slurm_info in
#   a task reaches neither the task nor slurmd's log.
# SPANK options must be registered with spank_option_register in
#   slurm_spank_init for sbatch/salloc to accept them.  A callback that
#   returns < 0 makes srun/sbatch exit 255 with the callback's message and
#   "error: Invalid --network-vnis argument: 7".
# Debian's MPI plugins log "can not load PMIx library" errors at start;
#   harmless with MpiDefault=none.

if [ "$(id -u)" -ne 0 ]; then
    skip_slurm "the Slurm harness runs slurmctld and slurmd as root"
fi

VNIB_SLURM_PREFIX=""
case "${VNIB_SLURM_VERSION:-22.05}" in
    22.05 | 22.05.*)
        VNIB_SLURM_VERSION=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null |
            sed 's/-.*//')
        VNIB_SLURM_OUT=$BUILD
        ;;
    *)
        _want=${VNIB_SLURM_VERSION}
        _dir=""
        for _d in $(sh "$TOP/deploy/tools/slurm-build.sh" --dirs 2>/dev/null); do
            case "${_d##*/slurm-}" in
                "$_want" | "$_want".*) _dir=$_d ;;
            esac
        done
        if [ -z "$_dir" ]; then
            case "$_want" in
                24.11*)
                    skip_slurm "Slurm $_want was never built here: make deps (deploy/tools/slurm-build.sh 24.11) builds it"
                    ;;
                *)
                    skip_all "Slurm $_want was never built here: no registry here serves its source; a site builds it with make deps-slurm SLURM_SRC=DIR"
                    ;;
            esac
        fi
        VNIB_SLURM_VERSION=${_dir##*/slurm-}
        VNIB_SLURM_PREFIX=$_dir/prefix
        VNIB_SLURM_OUT=$BUILD/slurm-$VNIB_SLURM_VERSION
        [ -f "$VNIB_SLURM_OUT/switch_vnib.so" ] && [ -f "$VNIB_SLURM_OUT/vnib_spank.so" ] ||
            skip_slurm "Slurm $VNIB_SLURM_VERSION is built but its plugins are not ($VNIB_SLURM_OUT): make tests builds them"
        PATH=$VNIB_SLURM_PREFIX/bin:$VNIB_SLURM_PREFIX/sbin:$PATH
        export PATH
        unset _want _dir _d
        ;;
esac
VNIB_SLURM_RELEASE=$(echo "$VNIB_SLURM_VERSION" | awk -F. '{ printf "%d%02d", $1, $2 }')
echo "# Slurm $VNIB_SLURM_VERSION${VNIB_SLURM_PREFIX:+ ($VNIB_SLURM_PREFIX)}"

# slurm_require_admission: skip the test (all of it) on a release whose
# slurmctld never asks a switch plugin whether a job may start
# (switch_p_job_start(job, test_only): 25.11 and later ask).
slurm_require_admission () {
    [ "$VNIB_SLURM_RELEASE" -ge 2511 ] ||
        skip_all "Slurm $VNIB_SLURM_VERSION never asks a switch plugin whether a job may start (25.11 and later do)"
}

VNIB_SLURM_DIR=""
VNIB_SLURM_LOGS=""
VNIB_SLURM_PORT=""
VNIB_SLURM_PIDS=""

# slurm_start NAME=VALUE...: see the top of this file.
slurm_start () {
    local arg prog n
    s_dir=$T/slurm s_prolog="" s_epilog="" s_prolog_ctld="" s_epilog_ctld=""
    s_plugstack="" s_flags=Alloc s_cpus=4 s_port="" s_conf=""
    s_switch=none s_switch_params="" s_plugin_dir=""
    for arg in "$@"; do
        case "$arg" in
            dir=*) s_dir=${arg#*=} ;;
            prolog=*) s_prolog=${arg#*=} ;;
            epilog=*) s_epilog=${arg#*=} ;;
            prolog_ctld=*) s_prolog_ctld=${arg#*=} ;;
            epilog_ctld=*) s_epilog_ctld=${arg#*=} ;;
            plugstack=*) s_plugstack=${arg#*=} ;;
            prolog_flags=*) s_flags=${arg#*=} ;;
            cpus=*) s_cpus=${arg#*=} ;;
            port=*) s_port=${arg#*=} ;;
            conf=*) s_conf=${arg#*=} ;;
            switch=*) s_switch=${arg#*=} ;;
            switch_params=*) s_switch_params=${arg#*=} ;;
            plugin_dir=*) s_plugin_dir=${arg#*=} ;;
            *) echo "# slurm_start: unknown argument '$arg'"; return 1 ;;
        esac
    done
    if [ "$(id -u)" -ne 0 ]; then
        echo "# slurm_start: the Slurm harness must run as root"
        return 1
    fi
    for prog in slurmctld slurmd srun sbatch sinfo squeue scontrol scancel; do
        command -v "$prog" >/dev/null || {
            echo "# slurm_start: $prog not found (make deps)"
            return 1
        }
    done
    [ -n "$VNIB_SLURM_PIDS" ] && { echo "# slurm_start: already running"; return 1; }

    VNIB_SLURM_DIR=$s_dir
    VNIB_SLURM_LOGS=$s_dir/log
    mkdir -p "$s_dir/state" "$s_dir/spool" "$s_dir/log" "$s_dir/run" || return 1
    if [ -z "$s_plugstack" ]; then
        s_plugstack=$s_dir/plugstack.conf
        : >"$s_plugstack"
    fi
    [ -n "$s_port" ] || s_port=$(_slurm_free_ports) || {
        echo "# slurm_start: no four free TCP ports found"
        return 1
    }
    VNIB_SLURM_PORT=$s_port
    _slurm_conf >"$s_dir/slurm.conf" || return 1
    export SLURM_CONF=$s_dir/slurm.conf

    slurmctld -D -f "$SLURM_CONF" >"$s_dir/log/slurmctld.out" 2>&1 &
    VNIB_SLURM_PIDS="ctld:$!"
    track "$!"
    for n in n1 n2 n3; do
        slurmd -D -f "$SLURM_CONF" -N "$n" >"$s_dir/log/slurmd.$n.out" 2>&1 &
        VNIB_SLURM_PIDS="$VNIB_SLURM_PIDS $n:$!"
        track "$!"
    done
    # vnib-slurm-hook's scontrol in PrologSlurmctld (which gets no
    # SLURM_CONF from slurmctld) must find this cluster's slurm.conf.
    [ -f "$T/hooks.conf" ] && slurm_hook_set SLURM_CONF "$SLURM_CONF"
    if ! wait_for 20 _slurm_all_idle; then
        echo "# slurm_start: the nodes did not become idle within 20 s:"
        timeout 5 sinfo -N 2>&1 | sed 's/^/#   /'
        slurm_dump_logs 20
        return 1
    fi
}

# The four ports: SlurmctldPort, then n1, n2, n3.
_slurm_free_ports () {
    local base tries used
    # Below the kernel's ephemeral range (32768-), which srun uses.
    base=$((20000 + ($$ % 700) * 16))
    tries=0
    while [ "$tries" -lt 100 ]; do
        used=$(ss -Htan exclude time-wait \
            "( sport >= :$base and sport <= :$((base + 3)) )" 2>/dev/null)
        if [ -z "$used" ]; then
            echo "$base"
            return 0
        fi
        base=$((base + 16))
        [ "$base" -gt 32000 ] && base=20000
        tries=$((tries + 1))
    done
    return 1
}

_slurm_conf () {
    cat <<EOF
# Written by tests/integration/slurm.sh for one test; see that file.
ClusterName=vnibtest
SlurmctldHost=localhost
SlurmctldPort=$s_port
SlurmdPort=$((s_port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$s_dir/state
SlurmdSpoolDir=$s_dir/spool/%n
SlurmctldPidFile=$s_dir/run/slurmctld.pid
SlurmdPidFile=$s_dir/run/slurmd.%n.pid
SlurmctldLogFile=$s_dir/log/slurmctld.log
SlurmdLogFile=$s_dir/log/slurmd.%n.log
SlurmctldDebug=debug
SlurmdDebug=debug
MailProg=/bin/true
# Nodes may claim more CPUs than the host has.
SlurmdParameters=config_overrides
# Never proctrack/linuxproc: it takes a signal to "container 0" (a step
# that failed before its container was made, then cancelled or requeued)
# for one to every process on the host, the tests' shells and daemons
# included.  pgid refuses container 0 (plugins/slurm/README.md,
# "Failures and limits").
ProctrackType=proctrack/pgid
$([ "$VNIB_SLURM_RELEASE" -lt 2405 ] && echo "TaskPlugin=task/none")
SwitchType=switch/$s_switch
${s_switch_params:+SwitchParameters=$s_switch_params}
$([ -n "$s_plugin_dir" ] && echo "PluginDir=$(_slurm_plugin_dir):$s_plugin_dir")
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# Several jobs per node, one core each by default; FIFO and at once.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
# Batch jobs are scheduled at slurmctld's next 1 s tick, not 3 s later.
SchedulerParameters=batch_sched_delay=0
# Returns DOWN nodes (a restarted slurmd); drained nodes stay drained.
ReturnToService=2
PlugStackConfig=$s_plugstack
${s_prolog:+Prolog=$s_prolog}
${s_epilog:+Epilog=$s_epilog}
${s_prolog_ctld:+PrologSlurmctld=$s_prolog_ctld}
${s_epilog_ctld:+EpilogSlurmctld=$s_epilog_ctld}
$([ "$s_flags" = none ] || echo "PrologFlags=$s_flags")
# A hung hook fails (and drains its node) instead of hanging the test.
PrologEpilogTimeout=30
# Short timeouts: a test never waits long for Slurm.
KillWait=2
MessageTimeout=5
TCPTimeout=2
SlurmctldTimeout=5
SlurmdTimeout=10
InactiveLimit=0
# Finished jobs stay visible (squeue -t all, scontrol show job) for asserts.
MinJobAge=600
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((s_port + 1)) CPUs=$s_cpus State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((s_port + 2)) CPUs=$s_cpus State=UNKNOWN
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((s_port + 3)) CPUs=$s_cpus State=UNKNOWN
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
$s_conf
EOF
}

# Slurm's own plugin folder (where switch_none.so is).
_slurm_plugin_dir () {
    local f
    if [ -n "$VNIB_SLURM_PREFIX" ]; then
        echo "$VNIB_SLURM_PREFIX/lib/slurm"
        return 0
    fi
    f=$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep '/switch_none\.so$' | head -n 1)
    [ -n "$f" ] || f=/usr/lib/x86_64-linux-gnu/slurm-wlm/switch_none.so
    dirname "$f"
}

_slurm_all_idle () {
    [ "$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | tr '\n' ' ')" = \
        "n1 idle n2 idle n3 idle " ]
}

# slurm_node_state NODE: the short state sinfo shows: idle, mix, alloc,
# drain, drng, comp, idle* (not responding), ...
slurm_node_state () {
    timeout 5 sinfo -h -N -n "$1" -o '%t' 2>/dev/null | head -n 1
}

# slurm_node_reason NODE: why the node is drained or down ("none" if not).
slurm_node_reason () {
    timeout 5 sinfo -h -N -n "$1" -o '%E' 2>/dev/null | head -n 1
}

# slurm_resume NODE [SECONDS]: undrain NODE and wait until it is idle.
slurm_resume () {
    timeout 5 scontrol update nodename="$1" state=resume || return 1
    wait_for "${2:-10}" _slurm_node_is "$1" idle
}

_slurm_node_is () {
    [ "$(slurm_node_state "$1")" = "$2" ]
}

# slurm_job_state JOBID: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED...
slurm_job_state () {
    timeout 5 squeue -h -t all -j "$1" -o '%T' 2>/dev/null | head -n 1
}

# slurm_wait_job JOBID [SECONDS]: wait until the job has ended (default at
# most 30 s), then print its state; non-zero if it has not ended.
slurm_wait_job () {
    local rc
    wait_for "${2:-30}" _slurm_job_ended "$1"
    rc=$?
    slurm_job_state "$1"
    return $rc
}

_slurm_job_ended () {
    case "$(slurm_job_state "$1")" in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | BOOT_FAIL | \
            OUT_OF_MEMORY | DEADLINE | PREEMPTED) return 0 ;;
        *) return 1 ;;
    esac
}

# slurm_dump_logs [LINES]: the last LINES (default 8) of each daemon's log,
# as TAP comments; short, since tests/run-all.sh shows only the last 60
# lines of a failed test (KEEP_TEST_DIR=1 keeps the whole logs).
slurm_dump_logs () {
    local f
    for f in "$VNIB_SLURM_LOGS"/slurmctld.log "$VNIB_SLURM_LOGS"/slurmd.n*.log; do
        [ -f "$f" ] || continue
        echo "# --- $f (last ${1:-8} lines)"
        tail -n "${1:-8}" "$f" | sed 's/^/#   /'
    done
}

# slurm_ctld_stop: stop slurmctld alone (SIGTERM: it saves its state), so
# that squeue, sbatch and scontrol fail; the slurmd and the jobs they run
# carry on.
slurm_ctld_stop () {
    local ctld pid
    ctld=${VNIB_SLURM_PIDS%% *}
    pid=${ctld#ctld:}
    kill -TERM "$pid" 2>/dev/null
    wait_for 10 eval "! _slurm_alive $pid" || kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    STARTED_PIDS=$(echo " $STARTED_PIDS " | sed "s/ $pid / /; s/^ *//; s/ *$//")
}

# slurm_ctld_start: start slurmctld again from its saved state (its jobs
# and their ids), and wait until squeue answers (at most 20 s).
slurm_ctld_start () {
    slurmctld -D -f "$SLURM_CONF" >>"$VNIB_SLURM_LOGS/slurmctld.out" 2>&1 &
    track "$!"
    VNIB_SLURM_PIDS="ctld:$! ${VNIB_SLURM_PIDS#* }"
    wait_for 20 timeout 5 squeue -h
}

# slurm_ctld_kill: kill -9 slurmctld (no state saved at exit); the slurmd
# and the jobs they run carry on.  slurm_ctld_start brings it back.
slurm_ctld_kill () {
    local ctld pid
    ctld=${VNIB_SLURM_PIDS%% *}
    pid=${ctld#ctld:}
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    STARTED_PIDS=$(echo " $STARTED_PIDS " | sed "s/ $pid / /; s/^ *//; s/ *$//")
}

# slurm_plugin_unresolved SO: the symbols SO needs that neither this
# release's Slurm libraries (libslurmfull, which every Slurm program
# loads, and libslurm) nor the libraries SO links define, one per line.
# Slurm loads plugins with lazy binding: such a symbol would kill the
# daemon only when first called (slurm_seterrno, gone in 24.05, did).
slurm_plugin_unresolved () {
    local libs l
    if [ -n "$VNIB_SLURM_PREFIX" ]; then
        libs="$VNIB_SLURM_PREFIX/lib/slurm/libslurmfull.so $VNIB_SLURM_PREFIX/lib/libslurm.so"
    else
        libs="$(_slurm_plugin_dir)/libslurmfull.so $(ls /usr/lib/*/libslurm.so.[0-9]* 2>/dev/null | head -n 1)"
    fi
    libs="$libs $(ldd "$1" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p')"
    for l in $libs; do
        nm -D --defined-only "$l" 2>/dev/null | awk '{ sub(/@.*/, "", $3); print $3 }'
    done | sort -u >"$T/defined.syms"
    nm -D --undefined-only "$1" | awk '$1 == "U" { sub(/@.*/, "", $2); print $2 }' |
        sort -u | comm -23 - "$T/defined.syms"
}

# slurm_switch_setup [NAME=VALUE...]: the switch plugin: a copy of the
# built switch_vnib.so in $T/plugins (VNIB_PLUGIN_DIR), of its helper
# vnib-switch-helper.so and the agent's vnib-agent-broker.so in $T/helper
# (VNIB_HELPER_DIR; vnib_helper names it), the agent settings
# $T/NODE/agent.toml of n1-n3 (the broker at $BROKER_URL, node.name set,
# four simulated NICs each; tokens from node_token; the broker's lease
# key, when slurm_lease_toml made one), slurmctld's token in
# $T/sched.token, and VNIB_SWITCH_PARAMS: SwitchParameters for them, the
# release spool in $T/spool/release (VNIB_SPOOL); NAME=VALUE items are
# appended.  Pass switch=vnib switch_params="$VNIB_SWITCH_PARAMS"
# plugin_dir="$VNIB_PLUGIN_DIR" to slurm_start.  With AGENT_RUN_ROOT set,
# the nodes' state and NIC files are in AGENT_RUN_ROOT/NODE/, as
# agent_setup's (agent.sh).
slurm_switch_setup () {
    local n arg
    [ -f "$VNIB_SLURM_OUT/switch_vnib.so" ] || {
        echo "# slurm_switch_setup: $VNIB_SLURM_OUT/switch_vnib.so was not built"
        return 1
    }
    VNIB_PLUGIN_DIR=$T/plugins
    mkdir -p "$VNIB_PLUGIN_DIR" && chmod 755 "$VNIB_PLUGIN_DIR" || return 1
    cp "$VNIB_SLURM_OUT/switch_vnib.so" "$VNIB_PLUGIN_DIR/" || return 1
    chmod 755 "$VNIB_PLUGIN_DIR/switch_vnib.so"
    # The plugin's helper, and the agent's client of the broker beside it
    # (vnib_helper below), as make install puts them in PREFIX/lib/vnibroker.
    VNIB_HELPER_DIR=$T/helper
    mkdir -p "$VNIB_HELPER_DIR" && chmod 755 "$VNIB_HELPER_DIR" || return 1
    cp "$BUILD/vnib-switch-helper.so" "$BUILD/vnib-agent-broker.so" \
        "$VNIB_HELPER_DIR/" || return 1
    chmod 755 "$VNIB_HELPER_DIR"/*.so
    (umask 077 && printf '%s\n' "$SCHED_TOKEN" >"$T/sched.token")
    for n in n1 n2 n3; do
        mkdir -p "$T/$n" "${AGENT_RUN_ROOT:-$T}/$n"
        (umask 077 && node_token "$n" >"$T/$n/token")
        cat >"$T/$n/agent.toml" <<EOF
[broker]
url = "$BROKER_URL"
token_file = "$T/$n/token"
fetch_timeout_ms = 2000
request_timeout_ms = 1000
spool_after_ms = 500

[node]
name = "$n"
state_dir = "${AGENT_RUN_ROOT:-$T}/$n/state"
spool_dir = "$T/$n/spool"

[nic]
backend = "sim"
sim_dir = "${AGENT_RUN_ROOT:-$T}/$n/sim"
EOF
        if [ -f "$T/lease.pub" ]; then
            printf '\n[lease]\npublic_keys = ["%s"]\nmax_skew_s = %s\n' \
                "$T/lease.pub" "$SLURM_LEASE_SKEW" >>"$T/$n/agent.toml"
        fi
        "$BUILD/vnib-agent" --config "$T/$n/agent.toml" sim-init --nics 4 >/dev/null ||
            return 1
    done
    VNIB_SPOOL=$T/spool/release
    VNIB_SWITCH_PARAMS="vnib_url=$BROKER_URL,vnib_token_file=$T/sched.token"
    VNIB_SWITCH_PARAMS="$VNIB_SWITCH_PARAMS,vnib_agent_config=$T/%n/agent.toml"
    VNIB_SWITCH_PARAMS="$VNIB_SWITCH_PARAMS,vnib_release_spool=$VNIB_SPOOL"
    VNIB_SWITCH_PARAMS="$VNIB_SWITCH_PARAMS,vnib_helper=$VNIB_HELPER_DIR/vnib-switch-helper.so"
    VNIB_SWITCH_PARAMS="$VNIB_SWITCH_PARAMS,vnib_timeout_ms=2000,vnib_retry_busy_ms=2000"
    for arg in "$@"; do
        VNIB_SWITCH_PARAMS="$VNIB_SWITCH_PARAMS,$arg"
    done
}

# slurm_vnib_up PARAMS WHAT: slurm_switch_setup with the NAME=VALUE items
# PARAMS (comma-separated), $T/out for the jobs (nobody's), and slurmctld
# and slurmd n1-n3 started with switch/vnib; the "ok" line names WHAT, and
# a failure ends the test.
slurm_vnib_up () {
    slurm_switch_setup "$1" || { not_ok "switch plugin set-up"; finish; }
    mkdir -p "$T/out"
    chown nobody "$T/out"
    slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
        plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
    ok "slurmctld and slurmd n1-n3 are up with SwitchType=switch/vnib, $2"
}

# slurm_lease_toml: the broker's [lease] table (EXTRA-TOML for broker_up)
# with a new key pair, $T/lease.key and $T/lease.pub (agent.sh's
# lease_keys), a lease life of SLURM_LEASE_TTL (10) s and a skew of
# SLURM_LEASE_SKEW (2) s, so that the VNIs leases named cool down for
# 12 s at most (a small pool is soon free again).  slurm_switch_setup,
# called after it, lists the public key in every node's agent.toml.
SLURM_LEASE_TTL=${SLURM_LEASE_TTL:-10}
SLURM_LEASE_SKEW=${SLURM_LEASE_SKEW:-2}
slurm_lease_toml () {
    [ -f "$T/lease.pub" ] || lease_keys || return 1
    printf '\n[lease]\nkey_file = "%s"\nttl_s = %s\nmax_skew_s = %s\n' \
        "$T/lease.key" "$SLURM_LEASE_TTL" "$SLURM_LEASE_SKEW"
}

# slurm_hook_setup [NAME=VALUE...]: plugins/slurm/hook/vnib-slurm-hook as
# $T/vnib-slurm-hook (also VNIB_HOOK), reading $T/hooks.conf: the broker
# at $BROKER_URL with $SCHED_TOKEN (in $T/sched.token), copies of the
# built vnibctl and vnib-agent, the release spool in $T/spool/release
# (VNIB_SPOOL) and the log file $T/hook.log (VNIB_HOOK_LOG), never the
# system's.  NAME=VALUE settings are appended.
slurm_hook_setup () {
    local arg
    (umask 077 && printf '%s\n' "$SCHED_TOKEN" >"$T/sched.token")
    sed -e "s|@HOOKS_CONF@|$T/hooks.conf|" -e "s|@BINDIR@|$BUILD|" \
        -e "s|@SBINDIR@|$BUILD|" -e "s|@CONFDIR@|$T|" \
        "$TOP/plugins/slurm/hook/vnib-slurm-hook.in" >"$T/vnib-slurm-hook" || return 1
    chmod 755 "$T/vnib-slurm-hook"
    VNIB_HOOK=$T/vnib-slurm-hook
    VNIB_SPOOL=$T/spool/release
    VNIB_HOOK_LOG=$T/hook.log
    {
        echo "VNIBCTL=$(share "$BUILD/vnibctl")"
        # The agent loads its client of the broker from beside itself.
        share "$BUILD/vnib-agent-broker.so" >/dev/null || return 1
        echo "VNIB_AGENT=$(share "$BUILD/vnib-agent")"
        echo "SCONTROL=$(command -v scontrol)"
        echo "SQUEUE=$(command -v squeue)"
        echo "JQ=$(command -v jq)"
        echo "VNIB_URL=$BROKER_URL"
        echo "VNIB_TOKEN_FILE=$T/sched.token"
        echo "RELEASE_SPOOL=$VNIB_SPOOL"
        echo "LOG_FILE=$VNIB_HOOK_LOG"
        for arg in "$@"; do
            printf '%s\n' "$arg"
        done
    } >"$T/hooks.conf"
    chmod 644 "$T/hooks.conf"
}

# slurm_hook_set NAME VALUE: change one setting of $T/hooks.conf (the
# last assignment wins).
slurm_hook_set () {
    printf '%s=%s\n' "$1" "$2" >>"$T/hooks.conf"
}

_slurm_alive () {
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    case "$st" in Z*) return 1 ;; esac
}

# slurm_stop: end the jobs, then the daemons; see the top of this file.
slurm_stop () {
    local pids entry ctld jobs pid i alive
    [ -n "$VNIB_SLURM_PIDS" ] || return 0
    pids=""
    for entry in $VNIB_SLURM_PIDS; do
        pids="$pids ${entry#*:}"
    done
    ctld=${VNIB_SLURM_PIDS%% *}
    # Jobs first, while slurmctld and slurmd can still end them cleanly.
    if _slurm_alive "${ctld#ctld:}"; then
        jobs=$(timeout 5 squeue -h -o '%i' 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086 # one argument per job
            timeout 5 scancel $jobs 2>/dev/null
            wait_for 10 _slurm_no_jobs
        fi
    fi
    for pid in $pids; do
        kill -TERM "$pid" 2>/dev/null
    done
    i=0
    while [ "$i" -lt 50 ]; do
        alive=""
        for pid in $pids; do
            _slurm_alive "$pid" && alive="$alive $pid"
        done
        [ -z "$alive" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    for pid in $pids; do
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        STARTED_PIDS=$(echo " $STARTED_PIDS " | sed "s/ $pid / /; s/^ *//; s/ *$//")
    done
    # A slurmstepd outlives its slurmd; ours listen under our spool dir.
    for pid in $(ss -xlpH 2>/dev/null | grep -F " $VNIB_SLURM_DIR/spool/" |
        sed -n 's/.*pid=\([0-9]*\).*/\1/p' | sort -u); do
        kill -KILL "$pid" 2>/dev/null
    done
    VNIB_SLURM_PIDS=""
}

_slurm_no_jobs () {
    [ -z "$(timeout 5 squeue -h -o '%i' 2>/dev/null)" ]
}

# Stop Slurm before lib.sh's cleanup kills what it tracks (too abruptly
# for slurmd, whose slurmstepd would outlive it) and removes $T.
trap 'slurm_stop; cleanup' EXIT
