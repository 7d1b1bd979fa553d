#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Where the controller's hook messages go (issue 19): slurmctld 22.05 logs
# nothing its PrologSlurmctld and EpilogSlurmctld print, so vnib-slurm-hook
# also sends each error and warning to syslog (through LOGGER, here a fake
# one that records its arguments) and appends it to LOG_FILE, which it
# makes 0640.  The hook runs directly, as Slurm would run it, against a
# broker URL where nothing listens; a log it cannot write fails nothing.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    # The hook refuses a settings file that root does not own.
    skip_slurm "vnib-slurm-hook reads root's settings file"
fi

# A port where nothing listens: bound, never listening.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOOK=$T/vnib-slurm-hook
LOG=$T/log/slurm-hook.log
sed "s|@HOOKS_CONF@|$T/hooks.conf|" "$TOP/plugins/slurm/hook/vnib-slurm-hook.in" >"$HOOK"
chmod 755 "$HOOK"
(umask 077 && echo "vnib1.not-a-real-token" >"$T/sched.token")
cat >"$T/logger" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$T/logger.args"
EOF
chmod 755 "$T/logger"
{
    echo "VNIBCTL=$BUILD/vnibctl"
    echo "SCONTROL=/bin/false"
    echo "VNIB_URL=http://127.0.0.1:$PORT"
    echo "VNIB_TOKEN_FILE=$T/sched.token"
    echo "RELEASE_ATTEMPTS=1"
    echo "RESERVE_RETRY_S=0" # one reserve, as before the retries (0525)
    echo "RELEASE_SPOOL=$T/spool"
    echo "LOGGER=$T/logger"
    echo "LOG_FILE=$LOG"
} >"$T/hooks.conf"
chmod 644 "$T/hooks.conf"

# hook CONTEXT JOB [NAME=VALUE...]: run the hook as Slurm would (no PATH
# needed, environment variables only); sets RC and ERR (its stderr).
hook () {
    local ctx=$1 job=$2
    shift 2
    ERR=$(env -i "$@" SLURM_SCRIPT_CONTEXT="$ctx" SLURM_JOB_ID="$job" \
        SLURM_JOB_UID=1000 SLURM_JOB_USER=alice SLURM_JOB_NODELIST=n1 \
        "$HOOK" 2>&1 >/dev/null)
    RC=$?
}

# ---- EpilogSlurmctld, broker down: RELEASE FAILED in both logs --------------
hook epilog_slurmctld 900001
expect_eq "EpilogSlurmctld with the broker down exits 1" "$RC" 1
expect_match "... and says RELEASE FAILED on stderr" "$ERR" "job 900001: RELEASE FAILED"
expect_eq "the log file is made, mode 0640" "$(stat -c %a "$LOG" 2>&1)" 640
line=$(grep 'job 900001' "$LOG")
expect_match "the log file has RELEASE FAILED, with the command that retries it" \
    "$line" "^[0-9T:-]+Z err vnibroker: epilog_slurmctld job 900001: RELEASE FAILED, spooled as $T/spool/900001 for 'vnib-slurm-hook reconcile'"
expect_match "... and the reason" "$line" "'vnib-slurm-hook reconcile': .*127\.0\.0\.1:$PORT"
args=$(grep 'job 900001' "$T/logger.args")
expect_match "syslog got it: tag vnib-slurm-hook, priority user.err" \
    "$args" "^-t vnib-slurm-hook -p user\.err -- vnibroker: epilog_slurmctld job 900001: RELEASE FAILED, spooled"
expect_eq "... once" "$(grep -c 'job 900001' "$T/logger.args")" 1

# A spool others can write: not spooled, and the message names the command.
mkdir -p "$T/open" && chmod 777 "$T/open"
hook epilog_slurmctld 900002
expect_eq "a second failed release exits 1" "$RC" 1
sed -i "s|^RELEASE_SPOOL=.*|RELEASE_SPOOL=$T/open|" "$T/hooks.conf"
hook epilog_slurmctld 900003
expect_eq "a release that cannot be spooled exits 1" "$RC" 1
expect_match "the log file says why it was not spooled" "$(cat "$LOG")" \
    "err vnibroker: epilog_slurmctld job 900003: $T/open is writable by others; refusing"
expect_match "... and which command releases the job" "$(cat "$LOG")" \
    "err vnibroker: epilog_slurmctld job 900003: RELEASE FAILED and could not be spooled in $T/open; the reservation stays active until 'vnibctl release 900003'"
expect_match "... in syslog too" "$(cat "$T/logger.args")" \
    "user\.err -- .*job 900003: RELEASE FAILED and could not be spooled.*'vnibctl release 900003'"
expect_eq "the log file is appended to, never truncated" \
    "$(grep -o 'job 90000[0-9]: RELEASE FAILED' "$LOG" | tr '\n' ' ')" \
    "job 900001: RELEASE FAILED job 900002: RELEASE FAILED job 900003: RELEASE FAILED "
sed -i "s|^RELEASE_SPOOL=.*|RELEASE_SPOOL=$T/spool|" "$T/hooks.conf"

# ---- PrologSlurmctld, broker down -------------------------------------------
hook prolog_slurmctld 900004
expect_eq "PrologSlurmctld with the broker down exits 1 (ON_BROKER_DOWN=fail)" "$RC" 1
expect_match "the log file says the job was refused, and why" "$(grep 'job 900004' "$LOG")" \
    "err vnibroker: prolog_slurmctld job 900004: no VNI reservation, job refused: .*127\.0\.0\.1:$PORT"
expect_match "... in syslog too" "$(grep 'job 900004' "$T/logger.args")" \
    "^-t vnib-slurm-hook -p user\.err -- .*job refused"

echo "ON_BROKER_DOWN=allow" >>"$T/hooks.conf"
hook prolog_slurmctld 900005
expect_eq "with ON_BROKER_DOWN=allow the job starts: exit 0" "$RC" 0
expect_match "the log file warns it starts WITHOUT VNI isolation" "$(grep 'job 900005' "$LOG")" \
    "warning vnibroker: prolog_slurmctld job 900005: broker unreachable .*; starting WITHOUT VNI isolation"
expect_match "... and that the comment could not be set" "$(grep 'job 900005' "$LOG")" \
    "warning .*job 900005: could not set the job's comment"
expect_match "syslog got it with priority user.warning" "$(grep 'job 900005' "$T/logger.args")" \
    "^-t vnib-slurm-hook -p user\.warning -- .*WITHOUT VNI isolation"

# ---- a log that cannot be written fails nothing -----------------------------
echo "LOG_FILE=$T/hooks.conf/x.log" >>"$T/hooks.conf" # under a regular file
echo "LOGGER=$T/no-such-logger" >>"$T/hooks.conf"
hook prolog_slurmctld 900006
expect_eq "an unwritable LOG_FILE and a missing LOGGER: the hook still exits 0" "$RC" 0
expect_match "... and says it on stderr" "$ERR" "job 900006: broker unreachable"
ln -s "$T/target" "$T/link.log"
echo "LOG_FILE=$T/link.log" >>"$T/hooks.conf"
hook prolog_slurmctld 900007
expect_eq "a LOG_FILE that is a symbolic link: the hook still exits 0" "$RC" 0
if [ -e "$T/target" ]; then
    not_ok "... and nothing is written through the link"
else
    ok "... and nothing is written through the link"
fi

finish
