#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Flux shell plugin (plugins/flux/shell/vnib_shell.c) in a real Flux,
# without the broker, the agent or the jobtap plugin: a two-broker test
# instance (`flux start --test-size=2 --test-hosts=fx[0-1]`, ranks 0 and 1
# are nodes fx0 and fx1) loads it into every job shell through a lua.d/
# drop-in beside flux-core's initrc, with state_dir=$T/%n/state.  Each
# job is submitted held, its env files are written by hand as
# `vnib-agent prolog --job ID` would (root's jobs directory, the file
# 0400), then it is released and its tasks print their SLINGSHOT_* and
# FI_CXI_* variables:
#
#   - system mode: each node's file, nothing from the submitting shell;
#     FI_CXI_COLL_JOB_STEP_ID is the decimal job id; a node without a
#     file sets nothing; a malformed or group-writable file fails the job,
#     the reason in its output and eventlog; no token value is logged;
#   - -o cray-slingshot=off: nothing;
#   - inherit mode in a `flux batch` and a `flux alloc` sub-instance: the
#     inner job's tasks get the outer job's values per node, STEP_ID
#     outer/inner, and nothing where the outer job has nothing;
#   - a bad conf table fails the job.
#
# Jobs run as root, the test instance's owner: the file's owner rule is
# lib/envfile.c's unit tests' (tests/unit/lib/test_envfile.c).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/flux.sh"

flux_require
SHELL_SO=$VNIB_FLUX_SHELL
FLUX_SIZE=2

# ---- the plugin loads into flux-shell --------------------------------------

# flux_shell_* come from the flux-shell program, not a library, so the
# plugin is linked without --no-undefined: check here that flux-shell and
# the libraries define every symbol it needs (a missing one would fail
# only when called).
shell_bin=$FLUX_PREFIX/libexec/flux/flux-shell
unresolved=$(
    for l in "$shell_bin" $(LD_LIBRARY_PATH=$FLUX_PREFIX/lib ldd "$SHELL_SO" |
        sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do
        nm -D --defined-only "$l" | awk '{ sub(/@.*/, "", $3); print $3 }'
    done | sort -u >"$T/defined.syms"
    nm -D --undefined-only "$SHELL_SO" | awk '$1 == "U" { sub(/@.*/, "", $2); print $2 }' |
        sort -u | comm -23 - "$T/defined.syms" | tr '\n' ' '
)
expect_eq "flux-shell and its libraries define every symbol vnib-shell.so needs" "$unresolved" ""
expect_eq "vnib-shell.so exports flux_plugin_init only (lib/ stays hidden)" \
    "$(nm -D --defined-only "$SHELL_SO" | awk '$2 == "T" || $2 == "D" || $2 == "B" { print $3 }' | tr '\n' ' ')" \
    "flux_plugin_init "

# ---- the instance ------------------------------------------------------------

for n in fx0 fx1; do
    mkdir -p "$T/$n/state/jobs"
    chmod 711 "$T/$n/state/jobs"
done
# flux-core's initrc, which sources lua.d/*.lua beside it: the plugin's
# line goes there, as a site's would in /etc/flux/shell/lua.d/.
mkdir -p "$T/shellrc/lua.d"
cp "$FLUX_PREFIX/etc/flux/shell/initrc.lua" "$T/shellrc/initrc.lua"
cat >"$T/shellrc/lua.d/vnib.lua" <<EOF
plugin.load { file = "$SHELL_SO", conf = { state_dir = "$T/%n/state" } }
EOF
# A site's line with a misspelt key, for one job (-o initrc=).
cat >"$T/badconf.lua" <<EOF
source ("$FLUX_PREFIX/etc/flux/shell/initrc.lua")
plugin.load { file = "$SHELL_SO", conf = { statedir = "$T/%n/state" } }
EOF

# start_instance: the two-node instance, no configuration, the shell rc
# with the plugin.
start_instance () {
    flux_start "$T/empty.d" "$T/shellrc/initrc.lua" || {
        not_ok "flux starts"
        finish
    }
}
start_instance
ok "a two-node test instance runs (fx0, fx1)"

# Each task (one per node, -N2 -n2: task i on the instance's rank i, and
# in a sub-instance on the inner rank i, whose broker the outer job's task
# i is) prints "NODE NAME=value" for each SLINGSHOT_* and FI_CXI_*
# variable it has (and LD_PRELOAD), "NODE ran", and "NODE host HOSTNAME", its broker's
# hostname attribute.
REPORT='h=fx$FLUX_TASK_RANK; echo "$h ran"; echo "$h host $(flux getattr hostname)"; env | grep -E "^(SLINGSHOT_|FI_CXI_|LD_PRELOAD=)" | sort | sed "s/^/$h /"'

# submit_held ARGS...: submit a held job of one task per node; sets ID
# (f58) and DEC (decimal).
submit_held () {
    ID=$(fluxc submit --urgency=hold -N2 -n2 "$@") || return 1
    DEC=$(fluxc job id --to=dec "$ID")
}

# env_file NODE MODE [CONTENT]: the job's env file on NODE (the job DEC),
# CONTENT from stdin when not given.
env_file () {
    f=$T/$1/state/jobs/$DEC.env
    if [ $# -ge 3 ]; then printf '%s' "$3" >"$f"; else cat >"$f"; fi
    chmod "$2" "$f"
}

# run_held: release job ID and wait for it; its stdout in $T/out, its
# stderr (the shells' log) in $T/err, its exit status in RC.
run_held () {
    fluxc job urgency "$ID" default
    fluxc job attach "$ID" >"$T/out" 2>"$T/err"
    RC=$?
}

# failed: "failed" when the job RC is of failed.  Its status is the first
# shell's to end: 1 (shell_die) or, when another shell died first and the
# job's end killed this one, 143 (SIGTERM).
failed () {
    [ "$RC" -ne 0 ] && echo failed
}

# vars HOST: what the task on HOST printed, one "NAME=value" a line.
vars () {
    sed -n "s/^$1 \([A-Z_]*=\)/\1/p" "$T/out" | tr '\n' ' '
}

# The values a user's shell might carry into a job: every reserved name.
LEAK=(--env=SLINGSHOT_VNIS=999 --env=SLINGSHOT_DEVICES=cxi9
      --env=SLINGSHOT_SVC_IDS=9 --env=SLINGSHOT_TCS=0xf
      --env=FI_CXI_COLL_JOB_ID=forged --env=FI_CXI_COLL_JOB_STEP_ID=forged
      --env=FI_CXI_COLL_MCAST_TOKEN=forged
      --env=FI_CXI_COLL_FABRIC_MGR_URL=http://forged
      --env=FI_CXI_HWCOLL_ADDRS_PER_JOB=9 --env=FI_CXI_HWCOLL_MIN_NODES=9)

# ---- system mode: each node's file, nothing from the shell --------------------

submit_held --env=FI_CXI_RX_MATCH_MODE=hybrid -o verbose=1 \
    "${LEAK[@]}" sh -c "$REPORT"
env_file fx0 0400 <<EOF
export SLINGSHOT_VNIS=1024,1025
export SLINGSHOT_DEVICES=cxi0,cxi1
export SLINGSHOT_SVC_IDS=3,3
export SLINGSHOT_TCS=0xa
export FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r1
export FI_CXI_COLL_JOB_STEP_ID=from-the-file
export FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken
export FI_CXI_COLL_FABRIC_MGR_URL=https://fm:8000
unset FI_CXI_HWCOLL_MIN_NODES
export LD_PRELOAD=/nonexistent/evil.so
EOF
env_file fx1 0400 <<EOF
export SLINGSHOT_VNIS=1024,1025
export SLINGSHOT_DEVICES=cxi0
export SLINGSHOT_SVC_IDS=7
export SLINGSHOT_TCS=0xa
EOF
run_held
expect_eq "system mode: the job ran (exit 0)" "$RC" 0
expect_eq "... its task 0 on fx0, task 1 on fx1" \
    "$(sed -n 's/^\(fx[01]\) host \(.*\)$/\1=\2/p' "$T/out" | sort | tr '\n' ' ')" "fx0=fx0 fx1=fx1 "
expect_eq "fx0's task has fx0's file, STEP_ID the decimal job id, nothing from the shell" "$(vars fx0)" \
    "FI_CXI_COLL_FABRIC_MGR_URL=https://fm:8000 FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r1 FI_CXI_COLL_JOB_STEP_ID=$DEC FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken FI_CXI_RX_MATCH_MODE=hybrid SLINGSHOT_DEVICES=cxi0,cxi1 SLINGSHOT_SVC_IDS=3,3 SLINGSHOT_TCS=0xa SLINGSHOT_VNIS=1024,1025 "
expect_eq "fx1's task has fx1's file (no collectives: no FI_CXI_COLL_*)" "$(vars fx1)" \
    "FI_CXI_RX_MATCH_MODE=hybrid SLINGSHOT_DEVICES=cxi0 SLINGSHOT_SVC_IDS=7 SLINGSHOT_TCS=0xa SLINGSHOT_VNIS=1024,1025 "
expect_match "each shell says it ran in system mode, naming its file" "$(cat "$T/err")" \
    "flux-shell\[1\]: DEBUG: vnib: mode system: 4 variables from $T/fx1/state/jobs/$DEC.env"
expect_match "... fx0's: 9 lines applied, LD_PRELOAD skipped" "$(cat "$T/err")" \
    "flux-shell\[0\]: DEBUG: vnib: mode system: 9 variables from $T/fx0/state/jobs/$DEC.env"
expect_match "... with a warning naming LD_PRELOAD" "$(cat "$T/err")" \
    "WARN: vnib: ignoring LD_PRELOAD from $T/fx0/state/jobs/$DEC.env: only SLINGSHOT_\* and FI_CXI_\* are set"
expect_no_match "LD_PRELOAD from the file is not set" "$(cat "$T/out" "$T/err")" 'LD_PRELOAD=|evil'
# (The tasks print it: the output eventlog's log entries only.)
expect_no_match "the multicast token's value is in no log line" \
    "$(cat "$T/err"; fluxc job eventlog -p output "$ID" | grep ' log '; fluxc dmesg)" \
    's3cret-t0ken'
expect_match "... which would have seen it: the output eventlog has the shells' log" \
    "$(fluxc job eventlog -p output "$ID" | grep ' log ')" 'mode system'

# ---- no file on a node: nothing set there ---------------------------------------

submit_held -o verbose=1 "${LEAK[@]}" sh -c "$REPORT"
env_file fx0 0400 'export SLINGSHOT_VNIS=2048
'
run_held
expect_eq "a node without a file: the job runs (exit 0)" "$RC" 0
expect_eq "fx0 has its file's one variable" "$(vars fx0)" "SLINGSHOT_VNIS=2048 "
expect_eq "fx1, without a file, has none of the reserved names" "$(vars fx1)" ""
expect_match "... and its task did run" "$(cat "$T/out")" '^fx1 ran$'
expect_match "fx1's shell names the missing file" "$(cat "$T/err")" \
    "flux-shell\[1\]: DEBUG: vnib: no $T/fx1/state/jobs/$DEC.env"
expect_match "... then, with nothing to inherit either (the instance's own broker), says mode none" \
    "$(cat "$T/err")" 'flux-shell\[1\]: DEBUG: vnib: mode none: the local broker has none of the names'


# ---- a malformed file, a group-writable file: the job fails ---------------------

submit_held sh -c "$REPORT"
env_file fx0 0400 'export SLINGSHOT_VNIS=2048
'
env_file fx1 0400 'export SLINGSHOT_VNIS=2048
export SLINGSHOT_DEVICES
'
run_held
expect_eq "a malformed file on fx1 fails the job" "$(failed)" failed
expect_eq "... before any task runs" "$(grep -c ' ran$' "$T/out")" 0
expect_match "... its output names the file and the line" "$(cat "$T/err")" \
    "FATAL: vnib: job $DEC: $T/fx1/state/jobs/$DEC.env: malformed line 2 of the env file"
expect_match "... and so does its exec exception" "$(fluxc job eventlog "$ID")" \
    "exception type=\"exec\" severity=0 note=\"job $DEC: $T/fx1/state/jobs/$DEC.env: malformed line 2 of the env file"

submit_held sh -c "$REPORT"
env_file fx0 0620 'export SLINGSHOT_VNIS=2048
'
run_held
expect_eq "a group-writable file on fx0 fails the job (fx1 has none)" "$(failed)" failed
expect_match "... the exception names the file and the rule" "$(fluxc job eventlog "$ID")" \
    "note=\"job $DEC: refusing $T/fx0/state/jobs/$DEC.env: it must be writable by neither group nor others \(mode 0620\)"

submit_held sh -c "$REPORT"
env_file fx1 0400 'export SLINGSHOT_VNIS=2048'
run_held
expect_eq "a truncated file (no final newline) fails the job" "$(failed)" failed
expect_match "... saying so" "$(cat "$T/err")" \
    "its last line has no newline \(truncated\?\)"

# ---- -o cray-slingshot=off ---------------------------------------------------------

submit_held -o cray-slingshot=off -o verbose=1 "${LEAK[@]}" sh -c "$REPORT"
env_file fx0 0400 'export SLINGSHOT_VNIS=2048
'
env_file fx1 0400 'export SLINGSHOT_VNIS=2048
'
run_held
expect_eq "-o cray-slingshot=off: the job runs (exit 0)" "$RC" 0
expect_eq "... fx0 has none of the reserved names, neither the file's nor the shell's" "$(vars fx0)" ""
expect_eq "... nor has fx1" "$(vars fx1)" ""
expect_match "... and its shells say mode off" "$(cat "$T/err")" \
    'flux-shell\[1\]: DEBUG: vnib: mode off'

# Off, the file is not read at all: a malformed one does not fail the job.
submit_held -o cray-slingshot=off sh -c "$REPORT"
env_file fx0 0400 'garbage
'
run_held
expect_eq "... even a malformed file is not read (exit 0)" "$RC" 0

# ---- a bad conf table fails the job ----------------------------------------------

submit_held -o initrc="$T/badconf.lua" sh -c "$REPORT"
run_held
expect_eq "a misspelt conf key fails the job" "$(failed)" failed
expect_match "... with an exec exception" "$(fluxc job eventlog "$ID")" \
    "exception type=\"exec\" severity=0 note=\"loading rc file $T/badconf.lua"
expect_match "... naming it" "$(cat "$T/err")" 'vnib: conf: .*statedir'

# ---- inherit mode: a flux batch sub-instance ----------------------------------------

# The inner instance's shells load the plugin too (a site's initrc is
# every instance's).  The batch script carries forged values of its own;
# its first inner job reports, the second runs with cray-slingshot=off.
cat >"$T/batch.sh" <<EOF
#!/bin/bash
export SLINGSHOT_VNIS=forged-inner FI_CXI_COLL_JOB_STEP_ID=forged-inner
echo "level \$(flux getattr instance-level)"
id=\$(flux submit -N2 -n2 -o verbose=1 sh -c '$REPORT')
echo "inner \$(flux job id --to=dec \$id)"
flux job attach \$id 2>&1
id=\$(flux submit -N2 -n2 -o cray-slingshot=off sh -c '$REPORT')
flux job attach \$id 2>&1 | sed 's/^/off /'
EOF
chmod 755 "$T/batch.sh"

# batch_held: submit the batch job held (ID, DEC); its output goes to
# $T/batch.N.out, N counting the batch jobs.
BATCHES=0
batch_held () {
    BATCHES=$((BATCHES + 1))
    ID=$(fluxc batch --urgency=hold -N2 --output="$T/batch.$BATCHES.out" \
        --broker-opts=-Sconf.shell_initrc="$T/shellrc/initrc.lua" "$T/batch.sh") || return 1
    DEC=$(fluxc job id --to=dec "$ID")
}

# run_batch: release it, wait for it; its output in $T/out, RC.
run_batch () {
    fluxc job urgency "$ID" default
    fluxc job attach "$ID" >/dev/null 2>"$T/err"
    RC=$?
    cp "$T/batch.$BATCHES.out" "$T/out"
}

batch_held
OUTER=$DEC
env_file fx0 0400 <<EOF
export SLINGSHOT_VNIS=1100,1101
export SLINGSHOT_DEVICES=cxi0
export FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r7
export FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken
EOF
env_file fx1 0400 <<EOF
export SLINGSHOT_VNIS=1100,1101
export SLINGSHOT_DEVICES=cxi0,cxi1,cxi2
export FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r7
export FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken
EOF
run_batch
INNER=$(sed -n 's/^inner \([0-9]*\)$/\1/p' "$T/out")
expect_eq "the batch job runs (exit 0)" "$RC" 0
expect_eq "its jobs run in a sub-instance (instance-level 1)" "$(sed -n 's/^level //p' "$T/out")" 1
expect_match "the inner job has an id" "$INNER" '^[0-9]+$'
expect_eq "the inner job's task on fx0 has the outer job's fx0 values, STEP_ID outer/inner" "$(vars fx0)" \
    "FI_CXI_COLL_JOB_ID=vnibtest-$OUTER-r7 FI_CXI_COLL_JOB_STEP_ID=$OUTER/$INNER FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken SLINGSHOT_DEVICES=cxi0 SLINGSHOT_VNIS=1100,1101 "
expect_eq "... and on fx1, fx1's" "$(vars fx1)" \
    "FI_CXI_COLL_JOB_ID=vnibtest-$OUTER-r7 FI_CXI_COLL_JOB_STEP_ID=$OUTER/$INNER FI_CXI_COLL_MCAST_TOKEN=s3cret-t0ken SLINGSHOT_DEVICES=cxi0,cxi1,cxi2 SLINGSHOT_VNIS=1100,1101 "
expect_match "the inner shells say mode inherit" "$(cat "$T/out")" \
    'flux-shell\[1\]: DEBUG: vnib: mode inherit: 5 variables from the local broker'
expect_eq "the inner job with cray-slingshot=off has none of them" \
    "$(sed -n 's/^off fx[01] \([A-Z_]*=\)/\1/p' "$T/out" | tr '\n' ' ')" ""
expect_eq "... and ran on both nodes" "$(grep -c '^off fx[01] ran$' "$T/out")" 2
expect_no_match "no log line of either instance has the token's value" \
    "$(grep -v '^fx[01] ' "$T/out"; cat "$T/err"; fluxc dmesg)" 's3cret-t0ken'

# An outer job with VNIs on fx0 only and no collectives: fx1's inner
# task has nothing, and no inner STEP_ID is made up.
batch_held
env_file fx0 0400 'export SLINGSHOT_VNIS=1200
'
run_batch
expect_eq "a batch job whose fx1 has no reservation runs (exit 0)" "$RC" 0
expect_eq "its inner task on fx0 has the VNIs, no STEP_ID" "$(vars fx0)" "SLINGSHOT_VNIS=1200 "
expect_eq "... on fx1 none of the names" "$(vars fx1)" ""
expect_match "fx1's inner shell says mode none" "$(cat "$T/out")" \
    'flux-shell\[1\]: DEBUG: vnib: mode none: the local broker has none of the names'

# ---- inherit mode: a flux alloc sub-instance -----------------------------------

# flux alloc waits for its job in the foreground (held here until its
# files are written) and runs its command on a pty.
cat >"$T/alloc.sh" <<EOF
#!/bin/bash
id=\$(flux submit -N2 -n2 sh -c '$REPORT')
echo "inner \$(flux job id --to=dec \$id)"
flux job attach \$id
EOF
chmod 755 "$T/alloc.sh"
timeout 120 "$FLUX" alloc --urgency=hold -N2 \
    --broker-opts=-Sconf.shell_initrc="$T/shellrc/initrc.lua" "$T/alloc.sh" \
    </dev/null >"$T/alloc.out" 2>&1 &
ALLOC_PID=$!
track "$ALLOC_PID"
pending () {
    ID=$(fluxc jobs -n -f pending -o '{id}' | head -n 1)
    [ -n "$ID" ]
}
if wait_for 60 pending && pending; then
    DEC=$(fluxc job id --to=dec "$ID")
    for n in fx0 fx1; do
        env_file $n 0400 "export SLINGSHOT_VNIS=1300
export SLINGSHOT_DEVICES=$n-nic
export FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r9
"
    done
    fluxc job urgency "$ID" default
    wait "$ALLOC_PID"
    expect_eq "flux alloc runs (exit 0)" "$?" 0
    tr -d '\r' <"$T/alloc.out" >"$T/out"
    INNER=$(sed -n 's/^inner \([0-9]*\)$/\1/p' "$T/out")
    expect_eq "the alloc's inner task on fx0 has the outer job's fx0 values" "$(vars fx0)" \
        "FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r9 FI_CXI_COLL_JOB_STEP_ID=$DEC/$INNER SLINGSHOT_DEVICES=fx0-nic SLINGSHOT_VNIS=1300 "
    expect_eq "... and on fx1, fx1's" "$(vars fx1)" \
        "FI_CXI_COLL_JOB_ID=vnibtest-$DEC-r9 FI_CXI_COLL_JOB_STEP_ID=$DEC/$INNER SLINGSHOT_DEVICES=fx1-nic SLINGSHOT_VNIS=1300 "
else
    not_ok "flux alloc's job is pending"
    sed 's/^/#   /' "$T/alloc.out" | tail -n 10
fi

# ---- Flux inside another scheduler's job: no file, the brokers' values ----------
# An instance at level 0 started with the enclosing (Slurm) job's values in
# its environment: a job of it without a file inherits them from its
# node's broker, as a sub-instance's does.
flux_stop
SLINGSHOT_VNIS=4242 FI_CXI_COLL_JOB_ID=slurm-77 FI_CXI_COLL_JOB_STEP_ID=3 start_instance
submit_held -o verbose=1 "${LEAK[@]}" sh -c "$REPORT"
run_held
expect_eq "Flux inside a Slurm job: the job runs" "$RC" 0
expect_eq "fx0's task has the enclosing job's values, not the submitter's" "$(vars fx0)" \
    "FI_CXI_COLL_JOB_ID=slurm-77 FI_CXI_COLL_JOB_STEP_ID=3/$DEC SLINGSHOT_VNIS=4242 "
expect_match "... in mode inherit" "$(cat "$T/err")" 'flux-shell\[0\]: DEBUG: vnib: mode inherit'

flux_stop
finish
