#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetch, verify, unpack and configure the Slurm source tree that the
# switch plugin (plugins/slurm/switch/) is compiled against.
#
#   sh deploy/tools/slurm-src.sh BUILD_DIR            fetch and configure
#   sh deploy/tools/slurm-src.sh BUILD_DIR --print    print the tree's path
#                                                     if it is ready
#
# A Slurm plugin must be built from the same version's sources as the
# Slurm that loads it (the installed slurmctld: `dpkg -s slurmctld`).  The
# source comes from Debian's source package of exactly that version,
# through a private apt configuration under BUILD_DIR/slurm-src/apt: its
# own sources file (deb-src for bookworm, bookworm-updates and
# bookworm-security, signed by Debian's archive keyring), lists, cache and
# status.  The system's apt configuration is never touched.  apt checks
# the signed Release and Sources files and the .dsc against them;
# dpkg-source -x then checks every file against the .dsc.  Nothing else
# is applied: the tree is Debian's, with Debian's patches.
#
# The unpacked tree is configured once (./configure, no daemons built: a
# plugin needs only config.h and the headers) and a stamp file records
# the version: BUILD_DIR/slurm-src/stamp.  A second run with the stamp in
# place does nothing.  The tree is BUILD_DIR/slurm-src/tree.
#
# SLURM_VERSION overrides the version asked for (default: the installed
# slurmctld's, else libslurm-dev's).  A site with its own configured tree
# passes SLURM_SRC=/path to make instead and never runs this.
set -eu

[ $# -ge 1 ] || { echo "usage: slurm-src.sh BUILD_DIR [--print]" >&2; exit 2; }
# Absolute: apt takes a relative Dir::Etc::SourceList under /etc/apt, and
# would then read no deb-src line at all.
mkdir -p "$1"
BUILD_DIR=$(cd "$1" && pwd)
TOP=$BUILD_DIR/slurm-src
TREE=$TOP/tree
STAMP=$TOP/stamp

installed_version () {
    for p in slurmctld slurmd libslurm-dev; do
        v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
        if [ -n "$v" ]; then
            echo "$v"
            return 0
        fi
    done
    return 1
}

VERSION=${SLURM_VERSION:-$(installed_version || true)}
if [ -z "$VERSION" ]; then
    echo "slurm-src: no Slurm installed (slurmctld, slurmd or libslurm-dev); \`make deps\` installs it, or set SLURM_VERSION" >&2
    exit 1
fi

if [ "${2:-}" = --print ]; then
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSION" ] && echo "$TREE"
    exit 0
fi

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSION" ] && [ -f "$TREE/config.h" ]; then
    exit 0
fi

for prog in apt-get dpkg-source; do
    command -v "$prog" >/dev/null || {
        echo "slurm-src: $prog not found: \`make deps\` (as root) installs dpkg-dev" >&2
        exit 1
    }
done
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$KEYRING" ] || {
    echo "slurm-src: $KEYRING missing (package debian-archive-keyring)" >&2
    exit 1
}

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=${DEBIAN_SUITE:-bookworm}

APT=$TOP/apt
rm -f "$STAMP"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/etc" \
    "$APT/state" "$TOP/dl"
: >"$APT/state/status"
cat >"$APT/etc/sources.list" <<EOF
# Written by deploy/tools/slurm-src.sh: only for fetching Slurm's source.
deb-src [signed-by=$KEYRING] $MIRROR $SUITE main
deb-src [signed-by=$KEYRING] $MIRROR $SUITE-updates main
deb-src [signed-by=$KEYRING] $SECURITY_MIRROR $SUITE-security main
EOF

# Every path apt would otherwise take from /etc or /var is the private one.
# As root apt would hand the downloads to its _apt user, which may not be
# allowed into the build folder; they stay root's here.
SANDBOX=""
[ "$(id -u)" -eq 0 ] && SANDBOX="-o APT::Sandbox::User=root"
apt_private () {
    # shellcheck disable=SC2086 # SANDBOX is one option or nothing
    apt-get -q $SANDBOX \
        -o Dir::Etc::SourceList="$APT/etc/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null \
        -o Dir::Etc::PreferencesParts=/dev/null \
        -o Dir::State::Lists="$APT/lists" \
        -o Dir::State::status="$APT/state/status" \
        -o Dir::Cache="$APT/cache" \
        -o Debug::NoLocking=1 \
        "$@"
}

echo "slurm-src: fetching slurm-wlm $VERSION (Debian source package) into $TOP"
apt_private update >"$TOP/apt-update.log" 2>&1 || {
    echo "slurm-src: apt-get update failed; see $TOP/apt-update.log:" >&2
    tail -n 5 "$TOP/apt-update.log" >&2
    exit 1
}
(cd "$TOP/dl" && apt_private source --download-only "slurm-wlm=$VERSION") \
    >"$TOP/apt-source.log" 2>&1 || {
    echo "slurm-src: apt-get source slurm-wlm=$VERSION failed; see $TOP/apt-source.log:" >&2
    tail -n 5 "$TOP/apt-source.log" >&2
    exit 1
}

# The .dsc of that version (an epoch is not part of the file name).
upstream=${VERSION#*:}
dsc=$TOP/dl/slurm-wlm_$upstream.dsc
[ -f "$dsc" ] || {
    echo "slurm-src: $dsc was not downloaded" >&2
    exit 1
}

rm -rf "$TREE" "$TREE.tmp"
# dpkg-source checks the sizes and checksums of every file the .dsc names
# (its log warns that it cannot check the maintainer's inline signature,
# as debian-keyring is not installed: the .dsc itself was checked by apt
# against the signed Sources index).
dpkg-source -x "$dsc" "$TREE.tmp" >"$TOP/dpkg-source.log" 2>&1 || {
    echo "slurm-src: dpkg-source -x $dsc failed; see $TOP/dpkg-source.log" >&2
    exit 1
}

# What a plugin needs: config.h and the generated headers, with the
# options of Debian's build that shape the structures a plugin reads
# (debian/rules: --enable-multiple-slurmd, no --enable-front-end).  No
# daemons are built.
echo "slurm-src: configuring $TREE (once)"
(cd "$TREE.tmp" && ./configure --prefix=/usr --sysconfdir=/etc/slurm \
    --enable-multiple-slurmd --disable-debug --without-rpath \
    SUCMD=/bin/su SLEEP_CMD=/bin/sleep) >"$TOP/configure.log" 2>&1 || {
    echo "slurm-src: ./configure failed; see $TOP/configure.log:" >&2
    tail -n 5 "$TOP/configure.log" >&2
    exit 1
}
mv "$TREE.tmp" "$TREE"
echo "$VERSION" >"$STAMP"
echo "slurm-src: slurm-wlm $VERSION ready in $TREE"
