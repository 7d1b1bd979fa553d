# SPDX-License-Identifier: GPL-2.0-or-later
# Part of tests/bench/run.sh, which sources it (never run on its own):
# isolation's cost on a job's start under a real scheduler: srun per Slurm
# release (slurmstart) and flux run (fluxstart).
# It uses run.sh's settings, helpers and broker.

# ---- job start: isolation's cost on srun, per Slurm release -------------
#
# tests/bench/slurm-start.sh: `srun -N3 true` on a real slurmctld and three
# slurmd of each Slurm release built here (22.05, and 24.11 and 26.05 when
# deploy/tools/slurm-build.sh built them), BENCH_SLURM_RUNS (20) jobs per
# way, the four ways alternating by rounds (a cluster runs one way at a
# time): no isolation (switch/none, no hooks), a switch plugin that does
# nothing (tests/bench/switch_noop.c, loaded as switch_vnib.so is: the
# floor, Slurm's own cost of an out-of-tree switch plugin), the switch
# plugin, the four hooks as a script that does nothing (the hooks' floor,
# Slurm's own cost of running them: on 24.11 and later about a second
# when a controller and a node prolog are both set) and the prolog hooks,
# the plugin and the hooks with the broker's leases.  The targets: the
# plugin at most 10% over the no-op plugin, the hooks at most 10% over
# the empty hooks.  The plugin
# reserves the step in slurmctld (one request for the step, one more for
# the job's first) and sets the step up in slurmstepd from its lease, with
# no broker request, around the step; its releases leave slurmctld's job
# lock (the outbox's thread); the hooks fork a controller prolog
# (reserve, then scontrol to write the lease into the job) and node
# prologs per job, and their Epilog runs after srun has returned.  The
# "#" lines after the rows say what slurmctld's log says each of
# switch/vnib's requests took.
slurmstart_scenario () {
    local v=$1 out=$T/slurmstart.$1.out none noop sw em hk target way
    VNIB_BUILD=$BUILD VNIB_SLURM_VERSION=$v timeout -k 5 1200 \
        bash "$TOP/tests/bench/slurm-start.sh" >"$out" 2>&1
    none=$(sed -n 's/^# none: \([0-9.]*\) .*/\1/p' "$out")
    noop=$(sed -n 's/^# noop: \([0-9.]*\) .*/\1/p' "$out")
    sw=$(sed -n 's/^# switch: \([0-9.]*\) .*/\1/p' "$out")
    em=$(sed -n 's/^# empty: \([0-9.]*\) .*/\1/p' "$out")
    hk=$(sed -n 's/^# hook: \([0-9.]*\) .*/\1/p' "$out")
    if [ -z "$none" ] || [ -z "$noop" ] || [ -z "$sw" ] || [ -z "$em" ] || [ -z "$hk" ]; then
        why=$(grep -m1 -E '^(# (not run|skip|.*failed|.*did not)|ok [0-9]+ # skip)' \
            "$out" | sed 's/^ok [0-9]* # skip /skip: /; s/^# //' | cut -c1-100)
        row_not_run "srun -N3 true, Slurm $v, switch/vnib: p50" ms "<=" 0 "${why:-no figures}"
        return 0
    fi
    target=$(awk -v n="$noop" 'BEGIN { printf "%.3f", n * 1.10 }')
    row_ref "srun -N3 true, Slurm $v, no isolation: p50" "$none" ms \
        "$(sed -n 's/^# none: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_ref "srun -N3 true, Slurm $v, no-op switch plugin: p50" "$noop" ms \
        "$(sed -n 's/^# noop: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "srun -N3 true, Slurm $v, switch/vnib: p50" "$sw" ms "<=" "$target" \
        "+10% of the no-op plugin; min max $(sed -n 's/^# switch: [0-9.]* \(.*\)/\1/p' "$out")"
    row_ref "srun -N3 true, Slurm $v, empty hooks: p50" "$em" ms \
        "$(sed -n 's/^# empty: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "srun -N3 true, Slurm $v, prolog hooks: p50" "$hk" ms "<=" \
        "$(awk -v n="$em" 'BEGIN { printf "%.3f", n * 1.10 }')" \
        "+10% of the empty hooks; min max $(sed -n 's/^# hook: [0-9.]* \(.*\)/\1/p' "$out")"
    for way in "ctld job reserve" "ctld step reserve" "ctld release"; do
        sed -n "s/^# $way: \([0-9.]*\) \([0-9.]*\) \([0-9.]*\)$/#   switch\/vnib, $way: median \1 ms, min \2, max \3/p" "$out"
    done
}

if wanted slurmstart; then
    for v in ${VNIB_SLURM_VERSIONS:-22.05 24.11 26.05}; do
        if [ "$(id -u)" -ne 0 ]; then
            row_not_run "srun -N3 true, Slurm $v, switch/vnib: p50" ms "<=" 0 "needs root (slurmctld, slurmd)"
            continue
        fi
        steal_mark
        slurmstart_scenario "$v"
        steal_note "slurmstart $v"
    done
fi

# ---- job start: isolation's cost on flux run ------------------------------
#
# tests/bench/flux-start.sh: `flux run -N3 true` on three-broker Flux test
# instances (flux-core as `make deps-flux` built it), BENCH_FLUX_RUNS (30)
# jobs per configuration, alternated job by job: flux-core alone, a
# per-rank prolog that runs /bin/true (the floor of any node-side step),
# and vnibroker (the jobtap plugin's reserve with a lease, vnib-flux-node
# creating the services from it, the shell plugin).  The target (issue
# 43): at most 10% over the empty per-rank prolog.  The "where" notes say
# where a job's start goes: the reserve, the per-rank prolog, and the
# housekeeping after the job.
fluxstart_scenario () {
    local none pl vn target out=$T/fluxstart.out
    VNIB_BUILD=$BUILD timeout -k 5 900 bash "$TOP/tests/bench/flux-start.sh" >"$out" 2>&1
    none=$(sed -n 's/^# none: \([0-9.]*\) .*/\1/p' "$out")
    pl=$(sed -n 's/^# perilog: \([0-9.]*\) .*/\1/p' "$out")
    vn=$(sed -n 's/^# vnib: \([0-9.]*\) .*/\1/p' "$out")
    if [ -z "$none" ] || [ -z "$pl" ] || [ -z "$vn" ]; then
        why=$(grep -m1 -E '^(# (not run|.*failed|.*did not)|ok [0-9]+ # skip)' "$out" |
            sed 's/^ok [0-9]* # skip /skip: /; s/^# //' | cut -c1-100)
        row_not_run "flux run -N3 true, vnibroker: p50" ms "<=" 0 "${why:-no figures}"
        return 0
    fi
    target=$(awk -v n="$pl" 'BEGIN { printf "%.3f", n * 1.10 }')
    row_ref "flux run -N3 true, flux-core alone: p50" "$none" ms \
        "$(sed -n 's/^# none: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_ref "flux run -N3 true, an empty per-rank prolog: p50" "$pl" ms \
        "$(sed -n 's/^# perilog: [0-9.]* \(.*\)/min max \1/p' "$out")"
    row_cmp "flux run -N3 true, vnibroker: p50" "$vn" ms "<=" "$target" \
        "+10% of the empty per-rank prolog; min max $(sed -n 's/^# vnib: [0-9.]* \(.*\)/\1/p' "$out")"
    sed -n 's/^# where: /#   fluxstart: /p' "$out"
}

if wanted fluxstart; then
    if [ "$(id -u)" -ne 0 ]; then
        row_not_run "flux run -N3 true, vnibroker: p50" ms "<=" 0 "needs root (the node side)"
    else
        steal_mark
        fluxstart_scenario
        steal_note "fluxstart"
    fi
fi
