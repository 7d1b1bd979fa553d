#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make deb: the Debian packages build with dpkg-buildpackage from a copy of
# the tree (the tree itself stays as it was), lintian finds no error in
# them, each holds what deploy/README.md ("Debian packages") says and no
# file is in two of them; unpacked into a scratch root (never the
# machine's), the installed configuration examples pass the installed
# vnibrokerd's --check-config, the units name the installed paths, and
# vnibroker's postinst, run for that root (DPKG_ROOT, as dpkg --root runs
# it), creates the user vnibroker, enables vnibrokerd.service without
# starting it and gives /etc/vnibroker root:vnibroker 0750, and a second
# run changes nothing.  One package build (a minute or so on two cores).
. "$(dirname "$0")/lib.sh"

# missing TOOL...: a failure under CI=true, else a skip of the whole script.
need () {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 && continue
        if [ "${CI:-}" = true ]; then
            not_ok "CI=true but $t is missing (apt-get install dpkg-dev debhelper fakeroot lintian)"
            finish
        fi
        skip_all "$t is not installed (dpkg-dev, debhelper, lintian)"
    done
}
need dpkg-buildpackage dh dpkg-deb lintian

SLURM_SRC=${SLURM_SRC:-$(sh "$TOP/deploy/tools/slurm-src.sh" "$TOP/build" --print 2>/dev/null)}
if [ -z "$SLURM_SRC" ] || { [ ! -f "$SLURM_SRC/config.h" ] && [ ! -f "$SLURM_SRC/tree/config.h" ]; }; then
    if [ "${CI:-}" = true ] || [ "${VNIB_REQUIRE_SLURM:-0}" = 1 ]; then
        not_ok "CI=true or VNIB_REQUIRE_SLURM=1 but there is no configured Slurm source tree (make deps, or SLURM_SRC)"
        finish
    fi
    skip_all "no configured Slurm source tree for switch_vnib.so (make deps, or SLURM_SRC=/path)"
fi
[ -f "$SLURM_SRC/config.h" ] || SLURM_SRC=$SLURM_SRC/tree

# The tree's state, to show that the build leaves it as it was.
tree_state () {
    if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$TOP" status --porcelain --untracked-files=all | grep -v ' build/'
    fi
}
before=$(tree_state)

OUT=$BUILD/deb-test
make --no-print-directory -C "$TOP" BUILD="$BUILD" DEB_DIR="$OUT" \
    SLURM_SRC="$SLURM_SRC" deb >"$T/deb.log" 2>&1
rc=$?
expect_eq "make deb succeeds" "$rc" 0
[ "$rc" -eq 0 ] || { tail -25 "$T/deb.log" | sed 's/^/#   /'; finish; }
expect_match "the build used dpkg-buildpackage on the copy in DEB_DIR/src" \
    "$(cat "$T/deb.log")" "dpkg-buildpackage: info: source package vnibroker"
expect_eq "the source tree is as it was" "$(tree_state)" "$before"
expect_no_match "no sanitizer and no -O0 in the package build" \
    "$(grep -E '^(cc|gcc|clang) ' "$T/deb.log")" '-fsanitize|-O0( |$)'

VERSION=$(sed -n 's/^#define VNIB_VERSION "\(.*\)"$/\1/p' "$TOP/include/vnib/version.h")
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for p in vnibroker vnibctl vnib-agent vnibroker-slurm; do
    if [ -s "$OUT/${p}_${VERSION}_$ARCH.deb" ]; then ok "$p $VERSION is built"
    else not_ok "$p $VERSION is built"; fi
done
CHANGES=$OUT/vnibroker_${VERSION}_$ARCH.changes

lint=$(lintian --fail-on error "$CHANGES" 2>&1)
rc=$?
printf '%s\n' "$lint" | grep -E '^[EWI]:' | sed 's/^/# lintian: /'
expect_eq "lintian --fail-on error passes the .changes" "$rc" 0
expect_no_match "lintian reports no error" "$lint" '^E: '

# contents PACKAGE: its files, one ./path per line.
contents () { dpkg-deb -c "$OUT/${1}_${VERSION}_$ARCH.deb" | awk '{ print $6 }'; }
# has PACKAGE PATH...: each PATH (without ./) is in PACKAGE.
has () {
    local p=$1 f list
    shift
    list=$(contents "$p")
    for f in "$@"; do
        if printf '%s\n' "$list" | grep -qxF "./$f"; then ok "$p holds /$f"
        else not_ok "$p holds /$f"; fi
    done
}
has vnibroker usr/sbin/vnibrokerd lib/systemd/system/vnibrokerd.service \
    lib/systemd/system/vnibrokerd.service.d/vnibrokerd-config.conf \
    usr/lib/sysusers.d/vnibroker.conf etc/vnibroker/vnibroker.toml.example \
    usr/share/doc/vnibroker/config.example.toml usr/share/doc/vnibroker/README.md \
    usr/share/doc/vnibroker/deploy/README.md usr/share/doc/vnibroker/server/api/openapi.yaml \
    usr/share/doc/vnibroker/copyright usr/share/man/man8/vnibrokerd.8.gz
has vnibctl usr/bin/vnibctl usr/share/doc/vnibctl/copyright usr/share/man/man1/vnibctl.1.gz
has vnib-agent usr/sbin/vnib-agent usr/lib/vnibroker/vnib-agent-broker.so \
    lib/systemd/system/vnib-agent-flush.service \
    lib/systemd/system/vnib-agent-flush.timer etc/vnibroker/agent.toml.example \
    usr/share/doc/vnibroker/agent/README.md usr/share/doc/vnibroker/agent/agent.example.toml \
    usr/share/man/man8/vnib-agent.8.gz
has vnibroker-slurm "usr/lib/$MULTIARCH/slurm-wlm/switch_vnib.so" \
    usr/lib/vnibroker/vnib-switch-helper.so \
    usr/lib/vnibroker/vnib_spank.so usr/lib/vnibroker/vnib-slurm-hook \
    lib/systemd/system/vnib-slurm-reconcile.service \
    lib/systemd/system/vnib-slurm-reconcile.timer etc/vnibroker/slurm-hooks.conf.example \
    usr/share/doc/vnibroker/plugins/slurm/README.md \
    usr/share/doc/vnibroker/plugins/slurm/hook/hooks.conf.example

all=$(for p in vnibroker vnibctl vnib-agent vnibroker-slurm; do contents $p; done)
expect_eq "no file is in two packages" \
    "$(printf '%s\n' "$all" | grep -v '/$' | sort | uniq -d)" ""
expect_eq "fmsim is in no package" "$(printf '%s\n' "$all" | grep fmsim)" ""

field () { dpkg-deb -f "$OUT/${1}_${VERSION}_$ARCH.deb" "$2"; }
expect_match "vnibroker depends on the libraries vnibrokerd links" \
    "$(field vnibroker Depends)" 'libpq5.*libssl3'
expect_no_match "no package depends on libcxi (loaded at run time)" \
    "$(for p in vnibroker vnibctl vnib-agent vnibroker-slurm; do field $p Depends; done)" cxi
slurm=$(dpkg-parsechangelog -l "$SLURM_SRC/debian/changelog" -S Version | sed 's/-[^-]*$//')
expect_match "vnibroker-slurm breaks a Slurm other than the one it is built for ($slurm)" \
    "$(field vnibroker-slurm Breaks)" "slurmd \(<< $slurm\).*slurmd \(>= $slurm\.0~\)|slurmd \(>= $slurm\.0~\).*slurmd \(<< $slurm\)"
expect_match "vnibroker-slurm depends on vnibctl and vnib-agent of its own version" \
    "$(field vnibroker-slurm Depends)" "vnibctl \(= $VERSION\).*vnib-agent \(= $VERSION\)"

# ---- unpacked into a scratch root -------------------------------------------

R=$T/root
mkdir -p "$R"
for p in vnibroker vnibctl vnib-agent vnibroker-slurm; do
    dpkg-deb -x "$OUT/${p}_${VERSION}_$ARCH.deb" "$R"
done

out=$("$R/usr/sbin/vnibrokerd" --check-config "$R/etc/vnibroker/vnibroker.toml.example" 2>&1)
rc=$?
expect_eq "the installed /etc/vnibroker/vnibroker.toml.example passes --check-config" "$rc" 0
[ "$rc" -eq 0 ] || echo "#   $out" | head -5
if cmp -s "$R/etc/vnibroker/vnibroker.toml.example" "$R/usr/share/doc/vnibroker/config.example.toml"
then ok "it is the documented /usr/share/doc/vnibroker/config.example.toml"
else not_ok "it is the documented /usr/share/doc/vnibroker/config.example.toml"; fi
expect_match "the installed vnibrokerd is this version" \
    "$("$R/usr/sbin/vnibrokerd" --version 2>&1)" "^vnibrokerd $VERSION "
"$R/usr/bin/vnibctl" --help >/dev/null 2>&1
expect_eq "the installed vnibctl runs" "$?" 0
"$R/usr/sbin/vnib-agent" --help >/dev/null 2>&1
expect_eq "the installed vnib-agent runs" "$?" 0
expect_match "switch_vnib.so is a Slurm switch plugin" \
    "$(nm -D --defined-only "$R/usr/lib/$MULTIARCH/slurm-wlm/switch_vnib.so" 2>&1)" ' plugin_type$'

# dpkg-buildflags' LDFLAGS (hardening=+all: -z now) reach every link,
# the plugins' too.
for f in usr/sbin/vnibrokerd usr/bin/vnibctl "usr/lib/$MULTIARCH/slurm-wlm/switch_vnib.so" \
         usr/lib/vnibroker/vnib-switch-helper.so usr/lib/vnibroker/vnib_spank.so; do
    expect_match "/$f is linked with BIND_NOW" "$(readelf -d "$R/$f" 2>&1)" 'BIND_NOW|FLAGS.*NOW'
done

unit=$(cat "$R/lib/systemd/system/vnibrokerd.service")
expect_match "vnibrokerd.service runs the installed vnibrokerd with /etc's config" "$unit" \
    '^ExecStart=/usr/sbin/vnibrokerd -c /etc/vnibroker/vnibroker.toml$'
expect_match "vnibrokerd.service runs as vnibroker" "$unit" '^User=vnibroker$'
expect_match "the drop-in skips vnibrokerd.service until /etc/vnibroker/vnibroker.toml exists" \
    "$(cat "$R/lib/systemd/system/vnibrokerd.service.d/vnibrokerd-config.conf")" \
    '^ConditionPathExists=/etc/vnibroker/vnibroker.toml$'
doc=$(sed -n 's|^Documentation=file://||p' "$R/lib/systemd/system/vnibrokerd.service")
if [ -n "$doc" ] && [ -f "$R$doc" ]; then ok "vnibrokerd.service's Documentation= is in the package"
else not_ok "vnibrokerd.service's Documentation= is in the package ($doc)"; fi
expect_match "the reconcile unit runs the installed hook" \
    "$(cat "$R/lib/systemd/system/vnib-slurm-reconcile.service")" \
    '^ExecStart=/usr/lib/vnibroker/vnib-slurm-hook reconcile$'
expect_match "the flush unit runs the installed agent" \
    "$(cat "$R/lib/systemd/system/vnib-agent-flush.service")" \
    '^ExecStart=/usr/sbin/vnib-agent --config /etc/vnibroker/agent.toml flush$'
expect_eq "no @PLACEHOLDER@ is left in an installed file" \
    "$(grep -rIlE '@[A-Za-z_]+@' "$R/etc" "$R/lib" "$R/usr/lib/vnibroker" "$R/usr/share/doc")" ""
conf=$(sh -c '. "$1"; echo "$VNIBCTL $VNIB_AGENT"' sh "$R/etc/vnibroker/slurm-hooks.conf.example")
expect_eq "slurm-hooks.conf.example names the installed programs" "$conf" \
    "/usr/bin/vnibctl /usr/sbin/vnib-agent"

# The maintainer scripts.
dpkg-deb -e "$OUT/vnibroker_${VERSION}_$ARCH.deb" "$T/ctl"
expect_match "the example in /etc is a conffile" "$(cat "$T/ctl/conffiles")" \
    '^/etc/vnibroker/vnibroker.toml.example$'
sh -n "$T/ctl/postinst" && sh -n "$T/ctl/prerm"
expect_eq "vnibroker's postinst and prerm are valid sh" "$?" 0
expect_match "the postinst creates the user with systemd-sysusers" \
    "$(cat "$T/ctl/postinst")" 'systemd-sysusers .*vnibroker\.conf'
expect_no_match "the postinst never starts or restarts vnibrokerd" \
    "$(cat "$T/ctl/postinst")" 'deb-systemd-invoke|systemctl .*(start|restart)'
expect_match "the prerm stops vnibrokerd on removal" "$(cat "$T/ctl/prerm")" \
    'deb-systemd-invoke stop vnibrokerd.service'

# The postinst for the scratch root, as dpkg --root would run it (root is
# needed for the chown; systemd-sysusers and deb-systemd-helper work on
# DPKG_ROOT).  The machine's own user database is checked to be untouched.
if [ "$(id -u)" -ne 0 ]; then
    skip "the postinst run needs root (chown)"
elif ! command -v systemd-sysusers >/dev/null || ! command -v deb-systemd-helper >/dev/null; then
    skip "systemd-sysusers or deb-systemd-helper is missing"
else
    # run_postinst ARGS...: with the environment dpkg gives it.
    run_postinst () {
        DPKG_ROOT=$R DPKG_MAINTSCRIPT_PACKAGE=vnibroker DPKG_MAINTSCRIPT_NAME=postinst \
            DPKG_MAINTSCRIPT_ARCH=$ARCH sh "$T/ctl/postinst" "$@"
    }
    host_state () {
        getent passwd vnibroker
        ls -l /etc/systemd/system/multi-user.target.wants/vnibrokerd.service 2>/dev/null
    }
    host_user=$(host_state)
    mkdir -p "$R/var/lib/dpkg" && touch "$R/var/lib/dpkg/statoverride"
    # configure (first install): no earlier version.
    run_postinst configure >"$T/postinst.log" 2>&1
    expect_eq "the postinst succeeds in the scratch root" "$?" 0
    expect_match "it created the system user vnibroker (no home, no login)" \
        "$(grep '^vnibroker:' "$R/etc/passwd")" \
        '^vnibroker:x:[0-9]+:[0-9]+:[^:]*:/nonexistent:/usr/sbin/nologin$'
    expect_match "and its group" "$(grep '^vnibroker:' "$R/etc/group")" '^vnibroker:x:[0-9]+:'
    gid=$(sed -n 's/^vnibroker:[^:]*:\([0-9]*\):.*/\1/p' "$R/etc/group")
    expect_eq "/etc/vnibroker is root:vnibroker 0750" \
        "$(stat -c '%u:%g %a' "$R/etc/vnibroker")" "0:$gid 750"
    if [ -L "$R/etc/systemd/system/multi-user.target.wants/vnibrokerd.service" ]; then
        ok "vnibrokerd.service is enabled in the scratch root"
    else
        not_ok "vnibrokerd.service is enabled in the scratch root"
    fi
    snap () { cat "$R/etc/passwd" "$R/etc/group" "$R/etc/shadow" 2>/dev/null; stat -c '%u:%g %a' "$R/etc/vnibroker"; }
    first=$(snap)
    # configure again, as an upgrade from this version.
    run_postinst configure "$VERSION" >>"$T/postinst.log" 2>&1
    expect_eq "the postinst succeeds a second time" "$?" 0
    expect_eq "and changes nothing (one vnibroker user, same ids, same modes)" "$(snap)" "$first"
    expect_eq "the machine's own users and units are untouched" "$(host_state)" "$host_user"
    [ "$FAILED" -eq 0 ] || sed 's/^/#   postinst: /' "$T/postinst.log"
fi

# ---- make deb SLURM_PREFIX=: vnibroker-slurm for another Slurm ----------------
# A Slurm deploy/tools/slurm-build.sh built (make deps builds 24.11): the
# switch plugin goes to that Slurm's PluginDir, is compiled for its
# version, and the package breaks no Debian Slurm package.
other=$(sh "$TOP/deploy/tools/slurm-build.sh" --dirs 2>/dev/null | head -n 1)
if [ -z "$other" ]; then
    skip "make deb SLURM_PREFIX=: no other Slurm built here (make deps builds 24.11)"
else
    OUT2=$BUILD/deb-test-other
    make --no-print-directory -C "$TOP" BUILD="$BUILD/deb-build-other" DEB_DIR="$OUT2" \
        SLURM_PREFIX="$other/prefix" deb >"$T/deb2.log" 2>&1
    rc=$?
    v=${other##*/slurm-}
    expect_eq "make deb SLURM_PREFIX=$other/prefix succeeds" "$rc" 0
    [ "$rc" -eq 0 ] || tail -25 "$T/deb2.log" | sed 's/^/#   /'
    deb2=$OUT2/vnibroker-slurm_${VERSION}_$ARCH.deb
    so=${other#/}/prefix/lib/slurm/switch_vnib.so
    expect_eq "its switch_vnib.so goes to that Slurm's PluginDir" \
        "$(dpkg-deb -c "$deb2" 2>/dev/null | awk '{ print $6 }' | grep -c "^\./$so\$")" 1
    expect_eq "... and breaks no Debian Slurm package" "$(dpkg-deb -f "$deb2" Breaks 2>/dev/null)" ""
    rm -rf "$T/other" && mkdir -p "$T/other" && dpkg-deb -x "$deb2" "$T/other"
    a=$(nm -D "$T/other/$so" 2>/dev/null | awk '$3 == "plugin_version" { print $1 }')
    got=$(objdump -s --start-address=0x$a --stop-address=$(printf '0x%x' $((0x${a:-0} + 4))) \
        "$T/other/$so" 2>/dev/null | tail -n 1 | awk '{ print $2 }')
    want=$(echo "$v" | awk -F. '{ printf "%02x%02x%02x00", $3, $2, $1 }')
    expect_eq "its plugin_version is Slurm $v's (the loader compares it)" "$got" "$want"
fi

finish
