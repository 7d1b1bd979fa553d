#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build a Slurm release other than the installed one (Debian 12's 22.05)
# into a private prefix outside the checkout, so that the Slurm plugins can
# be compiled and tested against it.  One build per version, reused by
# every later `make check` on the machine.
#
#   sh deploy/tools/slurm-build.sh 24.11          fetch Debian 13's verified
#                                                 upstream tarball and build
#   sh deploy/tools/slurm-build.sh --src DIR      build a source tree (a
#                                                 site's own, or SchedMD's
#                                                 release tag exported)
#   sh deploy/tools/slurm-build.sh --list         print "VERSION TREE PREFIX"
#                                                 for every finished build
#   sh deploy/tools/slurm-build.sh --dirs         print each finished build's
#                                                 folder, one per line
#
# The cache is $VNIB_CACHE: by default /var/tmp/vnibroker-cache for root
# (the tests run Slurm's commands as an unprivileged user, who must reach
# them and their libraries: root's home is closed to others), else
# ${XDG_CACHE_HOME:-$HOME/.cache}/vnibroker.  The prefix is compiled into
# Slurm, so a build cannot be moved.  A build lives in
# $VNIB_CACHE/slurm-VERSION/: src/ (the configured tree a
# plugin is compiled against), prefix/ (the installed daemons, commands,
# headers and plugins), build.log, and a stamp written last, so an
# interrupted build is started again rather than used.
#
# 24.11 comes from Debian 13's source index, read through a private apt
# configuration (its own sources file, lists and cache under the build
# folder; the system's apt configuration is never touched).  apt checks the
# index's signature with Debian's archive keyring; this script then takes
# the SHA-256 of slurm-wlm_24.11.5.orig.tar.gz from that index, downloads
# the tarball and refuses it unless the digest matches.  (The .dsc and
# Debian's patches are not served here: the tree is upstream's.)
#
# Every version is configured minimally for a one-host test cluster
# (--enable-multiple-slurmd, munge; no GUI, REST, PMIx or accelerators);
# building one takes 8 to 10 minutes on two cores.
set -eu

. "$(dirname "$0")/cache.sh"

# The Debian 13 release this script knows how to fetch, and its digest as
# the signed index gives it (checked again against the index at fetch).
DEB_VERSION=24.11.5
DEB_SHA256=e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332

die () {
    echo "slurm-build: $*" >&2
    exit 1
}

list () {
    [ -d "$CACHE" ] || return 0
    for d in "$CACHE"/slurm-*; do
        [ -f "$d/stamp" ] || continue
        echo "$(cat "$d/stamp") $d/src $d/prefix"
    done
}

# The version of a Slurm source tree, from its META file.
tree_version () {
    [ -f "$1/META" ] || die "$1 is not a Slurm source tree (no META file)"
    awk '$1 == "Major:" { ma = $2 } $1 == "Minor:" { mi = $2 }
         $1 == "Micro:" { mc = $2 }
         END { if (ma == "" || mi == "" || mc == "") exit 1
               printf "%s.%s.%s\n", ma, mi, mc }' "$1/META" ||
        die "$1/META names no Major, Minor and Micro version"
}

# Fetch and verify Debian 13's upstream tarball into $1 (a folder).
fetch_debian () {
    dl=$1
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$keyring" ] || die "$keyring missing (package debian-archive-keyring)"
    command -v apt-cache >/dev/null || die "apt-cache not found"
    command -v curl >/dev/null || die "curl not found: \`make deps\` installs it"
    mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
    security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
    apt=$dl/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc" \
        "$apt/state"
    : >"$apt/state/status"
    cat >"$apt/etc/sources.list" <<EOF
# Written by deploy/tools/slurm-build.sh: only for Slurm's source index.
deb-src [signed-by=$keyring] $mirror trixie main
deb-src [signed-by=$keyring] $security trixie-security main
EOF
    sandbox=""
    [ "$(id -u)" -eq 0 ] && sandbox="-o APT::Sandbox::User=root"
    set -- -o Dir::Etc::SourceList="$apt/etc/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null \
        -o Dir::Etc::PreferencesParts=/dev/null \
        -o Dir::State::Lists="$apt/lists" \
        -o Dir::State::status="$apt/state/status" \
        -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1
    # shellcheck disable=SC2086 # sandbox is one option or nothing
    apt-get -q $sandbox "$@" update >"$dl/apt-update.log" 2>&1 || {
        tail -n 5 "$dl/apt-update.log" >&2
        die "apt-get update (Debian 13 sources) failed; see $dl/apt-update.log"
    }
    file=slurm-wlm_$DEB_VERSION.orig.tar.gz
    # The index's record: the Directory and the SHA-256 of the tarball.
    apt-cache "$@" showsrc slurm-wlm >"$dl/showsrc" 2>/dev/null ||
        die "the Debian 13 index lists no slurm-wlm"
    sums=$(awk -v f="$file" '$3 == f && length($1) == 64 { print $1 }' \
        "$dl/showsrc" | sort -u)
    [ -n "$sums" ] || die "the Debian 13 index does not list $file"
    [ "$sums" = "$DEB_SHA256" ] ||
        die "the index's SHA-256 of $file ($sums) is not the one this script expects"
    dir=$(awk -v f="$file" '
        /^Checksums-Sha256:/ { ins = 1; next }
        /^[^ ]/ { ins = 0 }
        ins && $3 == f { found = 1 }
        /^Directory:/ { if (found) { print $2; exit } }
        /^$/ { found = 0 }' "$dl/showsrc")
    [ -n "$dir" ] || dir=pool/main/s/slurm-wlm
    echo "slurm-build: downloading $mirror/$dir/$file"
    curl -fsS --retry 3 -o "$dl/$file.part" "$mirror/$dir/$file" ||
        die "download of $mirror/$dir/$file failed"
    got=$(sha256sum "$dl/$file.part" | cut -d' ' -f1)
    [ "$got" = "$DEB_SHA256" ] || {
        rm -f "$dl/$file.part"
        die "$file: SHA-256 $got is not the signed index's $DEB_SHA256; refused"
    }
    mv "$dl/$file.part" "$dl/$file"
    TARBALL=$dl/$file
}

# Configure, build and install the tree in $1 (version $2).
build_tree () {
    tree=$1
    version=$2
    top=$CACHE/slurm-$version
    command -v pkg-config >/dev/null || die "pkg-config not found"
    [ -f /usr/include/munge.h ] ||
        die "munge.h missing: \`make deps\` (as root) installs libmunge-dev"
    echo "slurm-build: building Slurm $version into $top/prefix (8-10 minutes on 2 cores; log: $top/build.log)"
    (
        cd "$tree" &&
            ./configure --prefix="$top/prefix" --sysconfdir="$top/prefix/etc" \
                --enable-multiple-slurmd --disable-debug --without-rpath \
                --disable-sview --disable-slurmrestd --disable-x11 \
                --without-hdf5 --without-rdkafka --without-pmix --without-ucx \
                --without-nvml --without-rsmi --without-oneapi \
                --without-freeipmi --without-ofed &&
            make -j"$JOBS" &&
            make install
    ) >"$top/build.log" 2>&1 || {
        tail -n 15 "$top/build.log" >&2
        die "building Slurm $version failed; see $top/build.log"
    }
    echo "$version" >"$top/stamp"
    echo "slurm-build: Slurm $version ready in $top"
}

case "${1:-}" in
    --list)
        list
        exit 0
        ;;
    --dirs)
        list | while read -r _ tree _; do dirname "$tree"; done
        exit 0
        ;;
    --src)
        [ $# -eq 2 ] || die "usage: slurm-build.sh --src DIR"
        src=$(cd "$2" && pwd) || die "$2: no such folder"
        version=$(tree_version "$src")
        ;;
    [0-9]*)
        case "$1" in
            24.11 | 24.11.5) version=$DEB_VERSION ;;
            *) die "version $1: only 24.11 is fetched from Debian; build others with --src DIR (SLURM_SRC=DIR)" ;;
        esac
        src=""
        ;;
    *)
        echo "usage: slurm-build.sh 24.11 | --src DIR | --list" >&2
        exit 2
        ;;
esac

top=$CACHE/slurm-$version
if [ -f "$top/stamp" ] && [ -f "$top/src/config.h" ] &&
    [ -x "$top/prefix/sbin/slurmctld" ]; then
    exit 0
fi
rm -rf "$top"
mkdir -p "$top"
chmod 755 "$CACHE" "$top"
if [ -z "$src" ]; then
    fetch_debian "$top"
    mkdir "$top/src.tmp"
    tar -xzf "$TARBALL" -C "$top/src.tmp" --strip-components=1 ||
        die "unpacking $TARBALL failed"
else
    # A copy: the build writes into the tree, which is the site's.
    mkdir "$top/src.tmp"
    (cd "$src" && tar -cf - --exclude=.git .) | tar -xf - -C "$top/src.tmp" ||
        die "copying $src failed"
fi
mv "$top/src.tmp" "$top/src"
build_tree "$top/src" "$version"
