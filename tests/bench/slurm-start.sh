#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job start overhead under Slurm, for `make bench` (tests/bench/run.sh,
# scenario "slurmstart"): `srun -N3 true` on the test cluster of
# tests/integration/slurm.sh (slurmctld and three slurmd, four simulated
# NICs each, a real broker that issues leases) of the Slurm release
# VNIB_SLURM_VERSION, timed from srun's start to its exit, four ways:
#
#   none    no isolation (switch/none, no hooks): srun's own start
#   noop    a switch plugin that does nothing (tests/bench/switch_noop.c),
#           loaded from a folder of its own as switch_vnib.so is: the
#           floor of any out-of-tree switch plugin, Slurm's own cost
#   switch  switch/vnib (its helper, the step's lease)
#   empty   the four hooks (PrologSlurmctld, Prolog, Epilog,
#           EpilogSlurmctld) as a script that does nothing: the floor of
#           any hook, Slurm's own cost (on 24.11 and later about a second
#           when a controller and a node prolog are both set)
#   hook    the prolog hooks (vnib-slurm-hook as PrologSlurmctld, Prolog,
#           Epilog, EpilogSlurmctld, with the job's lease, and
#           vnib_spank.so)
#
# A cluster runs one way at a time, so the ways alternate by rounds: each
# round starts one cluster per way (the order turning every round) and
# times RUNS/ROUNDS jobs on it.  Prints, as "#" lines, "none: MEDIAN MIN
# MAX", "noop: ...", "switch: ...", "empty: ..." and "hook: ..." in ms over RUNS jobs
# each (BENCH_SLURM_RUNS, default 20; BENCH_SLURM_ROUNDS, default 4), and
# what slurmctld's log says switch/vnib's broker requests took: "ctld job
# reserve", "ctld step reserve" (both under slurmctld's job lock) and
# "ctld release" (the outbox's thread, off the lock).  The nodes' state
# and simulated NICs are on tmpfs (/dev/shm), as the agent's default
# state directory, /run, is.
# BENCH_SLURM_WAYS names a subset of the ways (default all five).
# Needs root (slurm.sh skips otherwise), switch_vnib.so and the no-op
# plugin (make bench-bins).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/agent.sh"
. "$(dirname "$0")/../integration/slurm.sh"

RUNS=${BENCH_SLURM_RUNS:-20}
ROUNDS=${BENCH_SLURM_ROUNDS:-4}
PER=$(((RUNS + ROUNDS - 1) / ROUNDS))
WAYS=${BENCH_SLURM_WAYS:-none noop switch empty hook}

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3999)$(slurm_lease_toml)"
# The nodes' state (node.state_dir) and their simulated NICs (nic.sim_dir)
# on tmpfs, as the Flux bench has them: the agent's default state
# directory, /run/vnibroker, is a tmpfs (its records are written durably,
# which costs a disk nothing there), and a real NIC's services live in its
# driver, not in files on a disk.
AGENT_RUN_ROOT=$(mktemp -d /dev/shm/vnib-slurmstart.XXXXXX) || exit 1
trap 'slurm_stop; rm -rf "$AGENT_RUN_ROOT"; cleanup' EXIT
# Every way's settings side by side: the agent configurations (with the
# node's name, which the hook also passes, and the lease key), the
# hook's, the plugin's, the no-op plugin's folder.
slurm_switch_setup || { echo "# not run: no switch_vnib.so"; exit 1; }
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" || exit 1
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$AGENT_RUN_ROOT/%n/state" >"$T/plugstack.conf"
NOOP_DIR=$T/noop
mkdir -p "$NOOP_DIR" && chmod 755 "$NOOP_DIR"
cp "$VNIB_SLURM_OUT/bench/switch_noop.so" "$NOOP_DIR/" 2>/dev/null ||
    { echo "# not run: no $VNIB_SLURM_OUT/bench/switch_noop.so (make bench-bins)"; exit 1; }
chmod 755 "$NOOP_DIR/switch_noop.so"
EMPTY_HOOK=$T/empty-hook
printf '#!/bin/sh\nexit 0\n' >"$EMPTY_HOOK" && chmod 755 "$EMPTY_HOOK" || exit 1

start_way () {
    case "$1" in
        none) slurm_start dir="$T/n" ;;
        noop) slurm_start dir="$T/o" switch=noop plugin_dir="$NOOP_DIR" ;;
        switch)
            slurm_start dir="$T/s" switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
                plugin_dir="$VNIB_PLUGIN_DIR"
            ;;
        empty)
            slurm_start dir="$T/e" prolog="$EMPTY_HOOK" epilog="$EMPTY_HOOK" \
                prolog_ctld="$EMPTY_HOOK" epilog_ctld="$EMPTY_HOOK"
            ;;
        hook)
            slurm_start dir="$T/h" prolog="$VNIB_HOOK" epilog="$VNIB_HOOK" \
                prolog_ctld="$VNIB_HOOK" epilog_ctld="$VNIB_HOOK" \
                plugstack="$T/plugstack.conf"
            ;;
    esac
}

for way in $WAYS; do : >"$T/$way.ms"; done
order=$WAYS
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    r=$((r + 1))
    for way in $order; do
        start_way "$way" || { echo "# $way: the cluster did not start"; exit 1; }
        i=0
        while [ "$i" -lt "$PER" ]; do
            i=$((i + 1))
            t0=$(date +%s%N)
            timeout 60 srun -N3 true >/dev/null 2>>"$T/$way.err" ||
                echo "# $way: srun failed: $(tail -n 1 "$T/$way.err")"
            t1=$(date +%s%N)
            echo $(((t1 - t0) / 1000)) >>"$T/$way.ms"
        done
        slurm_stop
    done
    # shellcheck disable=SC2086 # the ways, one word each
    set -- $order
    first=$1
    shift
    order="$* $first"
done

for way in $WAYS; do
    sort -n "$T/$way.ms" | awk -v p="$way" -f "$(dirname "$0")/median.awk"
done
# What switch/vnib's requests took, as slurmctld's log says (microseconds
# in, for median.awk).
log=$T/s/log/slurmctld.log
sed -n 's/.*switch\/vnib: JobId=[0-9]* StepId=[0-9]* nodes=.*: reservation [0-9]* (\([0-9.]*\) ms).*/\1/p' "$log" |
    awk '{ printf "%d\n", $1 * 1000 }' | sort -n | awk -v p="ctld job reserve" -f "$(dirname "$0")/median.awk"
sed -n 's/.*switch\/vnib: JobId=[0-9]* StepId=[0-9]* nodes=.*, step reservation [0-9]* (\([0-9.]*\) ms).*/\1/p' "$log" |
    awk '{ printf "%d\n", $1 * 1000 }' | sort -n | awk -v p="ctld step reserve" -f "$(dirname "$0")/median.awk"
sed -n 's/.*switch\/vnib: JobId=[0-9]*\( StepId=[0-9]*\)\{0,1\}: released (\([0-9.]*\) ms).*/\2/p' "$log" |
    awk '{ printf "%d\n", $1 * 1000 }' | sort -n | awk -v p="ctld release" -f "$(dirname "$0")/median.awk"
exit 0
