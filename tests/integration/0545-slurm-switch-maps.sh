#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Nothing loaded where nothing is called (switch/vnib): Slurm loads
# switch_vnib.so into srun, slurmd, slurmctld and every slurmstepd, but
# only slurmctld and a step's slurmstepd talk to the broker or the NICs.
# Read from /proc/PID/maps of the real processes: slurmd and a running
# srun map the plugin and neither its helper (vnib-switch-helper.so),
# nor the agent's client of the broker (vnib-agent-broker.so), nor
# libcurl, nor jansson; slurmctld maps the helper from its start and the
# client once it has talked to the broker; a running step's slurmstepd,
# started from its lease, maps the helper and neither the client nor
# libcurl (it loads them at the step's end, to report).  A helper that is missing, or that others may write,
# is refused with a clear error in slurmctld's (or slurmd's) log, and the
# step fails closed, whatever vnib_outage says.  Without vnib_helper the
# plugin loads the helper from beside itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3099)$(slurm_lease_toml)"

slurm_switch_setup || { not_ok "switch plugin set-up"; finish; }
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }

pid_of () { echo " $VNIB_SLURM_PIDS " | sed -n "s/.* $1:\([0-9]*\) .*/\1/p"; }
# maps PID: which of ours and of libcurl's and jansson's PID has mapped,
# as "plugin helper client curl jansson" words (or "-" for none).
maps () {
    awk '
        /\/switch_vnib\.so$/ { f["plugin"] = 1 }
        /\/vnib-switch-helper\.so$/ { f["helper"] = 1 }
        /\/vnib-agent-broker\.so$/ { f["client"] = 1 }
        /\/libcurl[^\/]*\.so/ { f["curl"] = 1 }
        /\/libjansson[^\/]*\.so/ { f["jansson"] = 1 }
        END {
            n = split("plugin helper client curl jansson", w, " ")
            for (i = 1; i <= n; i++) if (w[i] in f) { printf "%s%s", s, w[i]; s = " " }
            if (s == "") printf "-"
        }' "/proc/$1/maps"
}

ctld=$(pid_of ctld)
expect_eq "slurmctld maps the plugin and its helper (and jansson) from its start, no client yet" \
    "$(maps "$ctld")" "plugin helper jansson"
n1=$(pid_of n1)
expect_eq "slurmd maps the plugin alone: no helper, client, libcurl or jansson" \
    "$(maps "$n1")" plugin

# A step that runs until $T/stop: srun and the step's slurmstepd live.
srun -N3 sh -c "while [ ! -e $T/stop ]; do sleep 0.2; done" >"$T/srun.out" 2>&1 &
srun_pid=$!
_running () { [ "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)" = 111 ]; }
wait_for 30 _running
expect_eq "the step runs on n1-n3" "$(sim_count n1 cxi0)$(sim_count n2 cxi0)$(sim_count n3 cxi0)" 111
job=$(timeout 5 squeue -h -o '%i' | sort -n | tail -n 1)
expect_eq "the running srun maps the plugin alone: no helper, client, libcurl or jansson" \
    "$(maps "$srun_pid")" plugin
stepd=$(pgrep -f "^slurmstepd: \[$job\.0\]" | head -n 1)
[ -n "$stepd" ] && ok "step $job.0 has a slurmstepd ($stepd)" || not_ok "step $job.0 has a slurmstepd"
expect_eq "the step's slurmstepd, started from its lease, maps the plugin and the helper, no client or libcurl" \
    "$(maps "$stepd")" "plugin helper jansson"
expect_eq "slurmctld, having reserved the step, maps the client and libcurl too" \
    "$(maps "$ctld")" "plugin helper client curl jansson"
for n in n1 n2 n3; do
    expect_eq "slurmd $n still maps no helper, client, libcurl or jansson" \
        "$(maps "$(pid_of $n)")" plugin
done
touch "$T/stop"
wait "$srun_pid"
expect_eq "the step completes" "$?" 0

# ---- a helper the step's slurmstepd must refuse ------------------------------
# slurmctld keeps the helper it loaded; a step's slurmstepd loads it anew
# and refuses one that others may write: the step fails closed.
chmod g+w "$VNIB_HELPER_DIR/vnib-switch-helper.so"
out=$(timeout 60 srun -N1 -w n2 sh -c 'echo TASK-RAN' 2>&1)
expect_no_match "with a group-writable helper, the task does not run" "$out" TASK-RAN
expect_match "... Slurm says the interconnect failed" "$out" 'Error configuring interconnect'
expect_match "... and slurmstepd says why, in slurmd's log" \
    "$(grep 'switch/vnib' "$VNIB_SLURM_LOGS/slurmd.n2.log" | tail -n 3)" \
    "cannot load the switch helper \\($VNIB_HELPER_DIR/vnib-switch-helper.so: refused: owned by uid 0, mode 0775"
expect_eq "... no service was made on n2" "$(sim_count n2 cxi0)" 0
expect_eq "... and n2 is not drained" "$(slurm_node_state n2)" idle
chmod g-w "$VNIB_HELPER_DIR/vnib-switch-helper.so"

# ---- no helper at all: slurmctld says so, and steps fail closed --------------
slurm_stop
before=$(wc -l <"$VNIB_SLURM_LOGS/slurmctld.log")
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS,vnib_outage=open,vnib_helper=$T/none/vnib-switch-helper.so" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm restarts"; slurm_dump_logs 30; finish; }
expect_match "with no helper, slurmctld's log says so at its start" \
    "$(tail -n +"$((before + 1))" "$VNIB_SLURM_LOGS/slurmctld.log" | grep 'switch/vnib' | head -n 3)" \
    "slurmctld: cannot load the switch helper \\($T/none/vnib-switch-helper.so: No such file or directory\\)"
out=$(timeout 60 srun -N1 -w n1 sh -c 'echo TASK-RAN' 2>&1)
expect_eq "... and a step fails, even with vnib_outage=open" "$?" 1
expect_no_match "... its task never runs" "$out" TASK-RAN
expect_match "... Slurm says the interconnect failed" "$out" 'Error configuring interconnect'
expect_match "... and slurmctld's log names the step and the file" \
    "$(grep 'switch/vnib' "$VNIB_SLURM_LOGS/slurmctld.log" | tail -n 2)" \
    "JobId=[0-9]+ StepId=0: cannot load the switch helper \\($T/none/vnib-switch-helper.so"

# ---- without vnib_helper: the helper beside the plugin --------------------
# (as make install puts them both in PREFIX/lib/vnibroker)
slurm_stop
cp "$VNIB_HELPER_DIR"/*.so "$VNIB_PLUGIN_DIR/"
slurm_start switch=vnib switch_params="$(echo "$VNIB_SWITCH_PARAMS" | sed 's/,vnib_helper=[^,]*//')" \
    plugin_dir="$VNIB_PLUGIN_DIR" || { not_ok "slurm restarts"; slurm_dump_logs 30; finish; }
out=$(timeout 60 srun -N1 -w n3 sh -c 'echo $SLINGSHOT_VNIS' 2>&1)
expect_match "without vnib_helper, the helper beside switch_vnib.so serves the step" \
    "$out" '^30[0-9][0-9]$'
expect_eq "... slurmctld mapped that one" \
    "$(grep -c " $VNIB_PLUGIN_DIR/vnib-switch-helper.so\$" "/proc/$(pid_of ctld)/maps" | \
        awk '{ print ($1 > 0) }')" 1

slurm_stop
finish
