#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make install: it succeeds with the README's own example and with a
# packager's DESTDIR, PREFIX=/usr and SYSCONFDIR=/etc, also over an earlier
# install; the programs, both units, the three guides (under distinct
# names), the examples and the hook land where deploy/README.md says; no
# @PLACEHOLDER@ is left in any installed file; every path the installed
# files name follows PREFIX and SYSCONFDIR; the installed configuration
# example passes --check-config; and each unit's systemd-analyze security
# exposure is no worse than the score its guide states.
. "$(dirname "$0")/lib.sh"

# do_install DESTDIR [VAR=VALUE...]: make install from this tree into
# DESTDIR, with the binaries already built in $BUILD (nothing is rebuilt);
# the output is in DESTDIR.log.
do_install () {
    local dest=$1
    shift
    make --no-print-directory -C "$TOP" BUILD="$BUILD" DESTDIR="$dest" "$@" \
        install >"$dest.log" 2>&1
}

# The README's example (PREFIX=/usr, SYSCONFDIR left at its default).
do_install "$T/readme" PREFIX=/usr
expect_eq "the README's make install example succeeds" "$?" 0
expect_no_match "make install rebuilds nothing" "$(cat "$T/readme.log")" \
    '(^| )-c .*\.c( |$)|-o [^ ]*/vnibrokerd '

# A packager's install, twice: the second is an upgrade over the first.
ROOT=$T/root
do_install "$ROOT" PREFIX=/usr SYSCONFDIR=/etc
expect_eq "make install DESTDIR PREFIX=/usr SYSCONFDIR=/etc succeeds" "$?" 0
do_install "$ROOT" PREFIX=/usr SYSCONFDIR=/etc
expect_eq "make install again over the same DESTDIR succeeds" "$?" 0
[ "$FAILED" -eq 0 ] || sed 's/^/#   /' "$ROOT.log"

for f in usr/sbin/vnibrokerd usr/bin/vnibctl usr/sbin/vnib-agent \
         usr/lib/vnibroker/vnib-slurm-hook; do
    if [ -f "$ROOT/$f" ] && [ -x "$ROOT/$f" ]; then ok "$f is installed, executable"
    else not_ok "$f is installed, executable"; fi
done
expect_eq "fmsim is not installed" "$(find "$ROOT" -name fmsim)" ""

DOC=$ROOT/usr/share/doc/vnibroker
UNITS=$ROOT/usr/lib/systemd/system
for f in usr/lib/vnibroker/vnib_spank.so \
         usr/lib/vnibroker/vnib-agent-broker.so \
         usr/lib/vnibroker/switch_vnib.so \
         usr/lib/vnibroker/vnib-switch-helper.so \
         usr/lib/systemd/system/vnibrokerd.service \
         usr/lib/systemd/system/vnib-slurm-reconcile.service \
         usr/lib/systemd/system/vnib-slurm-reconcile.timer \
         usr/share/doc/vnibroker/config.example.toml \
         usr/share/doc/vnibroker/agent/agent.example.toml \
         usr/share/doc/vnibroker/plugins/slurm/hook/hooks.conf.example \
         usr/share/doc/vnibroker/server/api/openapi.yaml; do
    if [ -s "$ROOT/$f" ]; then ok "$f is installed"; else not_ok "$f is installed"; fi
done
# Slurm loads switch_vnib.so into srun and slurmd too: it links libc
# alone; its helper links no libcurl (0545-slurm-switch-maps.sh).
expect_eq "the installed switch_vnib.so needs libc alone" \
    "$(readelf -d "$ROOT/usr/lib/vnibroker/switch_vnib.so" 2>&1 | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')" libc.so.6
expect_no_match "the installed vnib-switch-helper.so needs no libcurl" \
    "$(readelf -d "$ROOT/usr/lib/vnibroker/vnib-switch-helper.so" 2>&1 | grep NEEDED)" curl
# Each guide under its own name, with its own text.
for pair in README.md:README.md deploy/README.md:deploy/README.md \
            plugins/slurm/README.md:plugins/slurm/README.md \
            agent/README.md:agent/README.md; do
    if cmp -s "$TOP/${pair%%:*}" "$DOC/${pair#*:}"; then
        ok "${pair%%:*} is installed as doc/vnibroker/${pair#*:}"
    else
        not_ok "${pair%%:*} is installed as doc/vnibroker/${pair#*:}"
    fi
done

# The installed agent finds its client of the broker: with no broker to
# reach, flush gets as far as trying (3), not "not found" (2).
printf '[broker]\nurl = "http://127.0.0.1:1"\ntoken_file = "%s"\nfetch_timeout_ms = 200\n[node]\nname = "n1"\nspool_dir = "%s"\n' \
    "$T/node.token" "$T/spool" >"$T/agent.toml"
(umask 077 && printf 'vnibnode.n1.x\n' >"$T/node.token")
"$ROOT/usr/sbin/vnib-agent" --config "$T/agent.toml" flush >/dev/null 2>"$T/flush.err"
expect_eq "the installed vnib-agent loads PREFIX/lib/vnibroker/vnib-agent-broker.so" \
    "$?:$(grep -c 'vnib-agent-broker.so' "$T/flush.err")" 3:0

# The Flux node side, where flux-core was found: the program, and beside
# it a link to the agent's client of the broker, which it loads from there.
if [ -x "$BUILD/flux/vnib-flux-node" ]; then
    FN=$ROOT/usr/lib/vnibroker/flux
    expect_eq "usr/lib/vnibroker/flux/vnib-flux-node is installed, and runs" \
        "$("$FN/vnib-flux-node" --help >/dev/null 2>&1; echo $?)" 0
    expect_eq "... beside a link to PREFIX/lib/vnibroker/vnib-agent-broker.so" \
        "$(readlink "$FN/vnib-agent-broker.so"):$(cmp -s "$FN/vnib-agent-broker.so" \
            "$ROOT/usr/lib/vnibroker/vnib-agent-broker.so" && echo same)" "../vnib-agent-broker.so:same"
else
    skip "no flux-core here: vnib-flux-node is not built"
fi

left=$(grep -rIEn '@[A-Za-z_]+@' "$ROOT" "$T/readme")
expect_eq "no @PLACEHOLDER@ is left in an installed file" "$left" ""

unit=$(cat "$UNITS/vnibrokerd.service")
expect_match "vnibrokerd.service starts /usr/sbin/vnibrokerd with /etc's config" \
    "$unit" '^ExecStart=/usr/sbin/vnibrokerd -c /etc/vnibroker/vnibroker.toml$'
expect_match "vnibrokerd.service checks that config first" "$unit" \
    '^ExecStartPre=/usr/sbin/vnibrokerd --check-config /etc/vnibroker/vnibroker.toml$'
doc=$(sed -n 's|^Documentation=file://||p' "$UNITS/vnibrokerd.service")
expect_eq "vnibrokerd.service's Documentation= is the installed production guide" \
    "$doc" /usr/share/doc/vnibroker/deploy/README.md
for unitfile in vnibrokerd.service vnib-slurm-reconcile.service; do
    doc=$(sed -n 's|^Documentation=file://||p' "$UNITS/$unitfile")
    if [ -n "$doc" ] && [ -f "$ROOT$doc" ]; then ok "$unitfile's Documentation= exists"
    else not_ok "$unitfile's Documentation= exists ($doc)"; fi
done
for directive in UMask=0077 ProtectClock=yes ProtectKernelLogs=yes \
        ProtectHostname=yes RestrictRealtime=yes RestrictSUIDSGID=yes \
        PrivateMounts=yes RemoveIPC=yes ProtectProc=invisible ProcSubset=pid \
        SystemCallFilter=@system-service 'StartLimitIntervalSec=.+' \
        'StartLimitBurst=[0-9]+'; do
    expect_match "vnibrokerd.service sets $directive" "$unit" "^$directive\$"
done
rec=$(cat "$UNITS/vnib-slurm-reconcile.service")
expect_match "the reconcile unit runs the installed hook" "$rec" \
    '^ExecStart=/usr/lib/vnibroker/vnib-slurm-hook reconcile$'
expect_match "the reconcile unit waits for /etc's hook settings" "$rec" \
    '^ConditionPathExists=/etc/vnibroker/slurm-hooks.conf$'

hook=$ROOT/usr/lib/vnibroker/vnib-slurm-hook
expect_match "the hook reads /etc/vnibroker/slurm-hooks.conf" "$(cat "$hook")" \
    '^CONF=/etc/vnibroker/slurm-hooks.conf$'
sh -n "$hook"
expect_eq "the installed hook is valid sh" "$?" 0
# The settings example as the hook reads it: every path is the installed one.
conf=$(sh -c '. "$1"; echo "$VNIBCTL $VNIB_AGENT $VNIB_TOKEN_FILE $AGENT_CONFIG"' \
       sh "$DOC/plugins/slurm/hook/hooks.conf.example")
expect_eq "hooks.conf.example names the installed programs and /etc files" "$conf" \
    "/usr/bin/vnibctl /usr/sbin/vnib-agent /etc/vnibroker/slurmctld.token /etc/vnibroker/agent.toml"
expect_match "hooks.conf.example says where it goes" \
    "$(head -1 "$DOC/plugins/slurm/hook/hooks.conf.example")" '^# /etc/vnibroker/slurm-hooks.conf: '

# The installed configuration example is valid as it stands.
out=$("$ROOT/usr/sbin/vnibrokerd" --check-config "$DOC/config.example.toml" 2>&1)
rc=$?
expect_eq "the installed config.example.toml passes --check-config" "$rc" 0
[ "$rc" -eq 0 ] || echo "#   $out" | head -5

# Other PREFIX and SYSCONFDIR: nothing installed names /usr or /etc/vnibroker.
OPT=$T/opt
do_install "$OPT" PREFIX=/opt/vnib SYSCONFDIR=/opt/vnib/etc
expect_eq "make install PREFIX=/opt/vnib SYSCONFDIR=/opt/vnib/etc succeeds" "$?" 0
ounit=$(cat "$OPT/opt/vnib/lib/systemd/system/vnibrokerd.service" 2>&1)
expect_match "the unit follows PREFIX and SYSCONFDIR" "$ounit" \
    '^ExecStart=/opt/vnib/sbin/vnibrokerd -c /opt/vnib/etc/vnibroker/vnibroker.toml$'
stray=$(grep -rIEn '(^|[^a-z/])/(usr/(s?bin/vnib|lib/vnib|share/doc/vnib)|etc/vnibroker)' \
            "$OPT/opt/vnib/lib" "$OPT/opt/vnib/share/doc/vnibroker/plugins/slurm/hook/hooks.conf.example" \
            "$OPT/opt/vnib/share/doc/vnibroker/config.example.toml" \
            "$OPT/opt/vnib/share/doc/vnibroker/agent/agent.example.toml")
expect_eq "no unit, hook or example names the default paths" "$stray" ""

# The node side's timer that sends spooled reports (agent/README.md).
for f in vnib-agent-flush.service vnib-agent-flush.timer; do
    if [ -s "$UNITS/$f" ]; then ok "$f is installed"; else not_ok "$f is installed"; fi
done
flush=$(cat "$UNITS/vnib-agent-flush.service" 2>&1)
expect_match "vnib-agent-flush.service runs the installed agent with /etc's config" "$flush" \
    '^ExecStart=/usr/sbin/vnib-agent --config /etc/vnibroker/agent.toml flush$'
doc=$(sed -n 's|^Documentation=file://||p' "$UNITS/vnib-agent-flush.service")
if [ -n "$doc" ] && [ -f "$ROOT$doc" ]; then ok "vnib-agent-flush.service's Documentation= exists"
else not_ok "vnib-agent-flush.service's Documentation= exists ($doc)"; fi

# The hardening, as systemd rates it, against what the guides state.
# check_security UNIT GUIDE: UNIT's exposure level is no worse than the
# first "exposure level N" GUIDE states.
check_security () {
    local unit=$1 guide=$2 score stated
    score=$(systemd-analyze security --offline=yes "$UNITS/$unit" 2>&1 |
            sed -n "s/.*Overall exposure level for $unit: \([0-9.]*\).*/\1/p")
    stated=$(sed -n 's/.*"exposure level \([0-9.]*\) .*/\1/p' "$TOP/$guide" | head -1)
    echo "# systemd-analyze security $unit: $score; $guide states $stated"
    if [ -n "$score" ] && [ -n "$stated" ] &&
       awk -v a="$score" -v b="$stated" 'BEGIN { exit !(a <= b) }'; then
        ok "systemd-analyze security rates $unit $score, no worse than the guide's $stated"
    else
        not_ok "systemd-analyze security rates $unit '$score', no worse than the guide's '$stated'"
    fi
}
if ! command -v systemd-analyze >/dev/null 2>&1; then
    for _ in 1 2 3; do skip "systemd-analyze is not installed"; done
elif ! systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    for _ in 1 2 3; do skip "this systemd-analyze has no --offline"; done
else
    check_security vnibrokerd.service deploy/README.md
    check_security vnib-slurm-reconcile.service plugins/slurm/README.md
    check_security vnib-agent-flush.service agent/README.md
fi

finish
