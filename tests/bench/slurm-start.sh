#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job start overhead under Slurm, for `make bench` (tests/bench/run.sh,
# scenario "slurmstart"): `srun -N3 true` on the test cluster of
# tests/integration/slurm.sh (slurmctld and three slurmd, four simulated
# NICs each, a real broker) of the Slurm release VNIB_SLURM_VERSION,
# timed from srun's start to its exit, with no isolation (switch/none, no
# hooks: srun's own start), with the switch plugin (switch/vnib) and with
# the prolog-hook path (vnib-slurm-hook as PrologSlurmctld, Prolog,
# Epilog, EpilogSlurmctld, and vnib_spank.so).  A cluster runs one path
# at a time, so the paths alternate by rounds: each round starts one
# cluster per path (the order turning every round) and times RUNS/ROUNDS
# jobs on it.  Prints, as "#" lines, "none: MEDIAN MIN MAX", "switch:
# ..." and "hook: ..." in ms over RUNS jobs each (BENCH_SLURM_RUNS,
# default 20; BENCH_SLURM_ROUNDS, default 4).  Needs root (slurm.sh skips
# otherwise) and switch_vnib.so.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/agent.sh"
. "$(dirname "$0")/../integration/slurm.sh"

RUNS=${BENCH_SLURM_RUNS:-20}
ROUNDS=${BENCH_SLURM_ROUNDS:-4}
PER=$(((RUNS + ROUNDS - 1) / ROUNDS))

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3999)"
# Both paths' settings side by side: the agent configurations (with the
# node's name, which the hook also passes), the hook's, the plugin's.
slurm_switch_setup || { echo "# not run: no switch_vnib.so"; exit 1; }
slurm_hook_setup "AGENT_CONFIG=$T/%n/agent.toml" || exit 1
echo "required $(share "$VNIB_SLURM_OUT/vnib_spank.so") state_dir=$T/%n/state" >"$T/plugstack.conf"

start_path () {
    if [ "$1" = none ]; then
        slurm_start dir="$T/n"
    elif [ "$1" = switch ]; then
        slurm_start dir="$T/s" switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
            plugin_dir="$VNIB_PLUGIN_DIR"
    else
        slurm_start dir="$T/h" prolog="$VNIB_HOOK" epilog="$VNIB_HOOK" \
            prolog_ctld="$VNIB_HOOK" epilog_ctld="$VNIB_HOOK" \
            plugstack="$T/plugstack.conf"
    fi
}

: >"$T/none.ms"
: >"$T/switch.ms"
: >"$T/hook.ms"
order="none switch hook"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    r=$((r + 1))
    for path in $order; do
        start_path "$path" || { echo "# $path: the cluster did not start"; exit 1; }
        i=0
        while [ "$i" -lt "$PER" ]; do
            i=$((i + 1))
            t0=$(date +%s%N)
            timeout 60 srun -N3 true >/dev/null 2>>"$T/$path.err" ||
                echo "# $path: srun failed: $(tail -n 1 "$T/$path.err")"
            t1=$(date +%s%N)
            echo $(((t1 - t0) / 1000)) >>"$T/$path.ms"
        done
        slurm_stop
    done
    set -- $order
    order="$2 $3 $1"
done

for path in none switch hook; do
    sort -n "$T/$path.ms" | awk -v p="$path" -f "$(dirname "$0")/median.awk"
done
exit 0
