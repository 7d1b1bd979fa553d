#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build flux-core (Debian packages none) into a private prefix outside the
# checkout, so that the Flux plugins (plugins/flux/) can be compiled and
# tested against a real Flux.  One build per version, reused by every later
# `make check` on the machine.
#
#   sh deploy/tools/flux-build.sh --src DIR    build the flux-core source
#                                              tree DIR (flux-core's public
#                                              repository at a release tag,
#                                              exported; v0.88.0 is the
#                                              release vnibroker pins)
#   sh deploy/tools/flux-build.sh --git        clone the pinned tag from
#                                              $FLUX_GIT (default GitHub)
#                                              and build it
#   sh deploy/tools/flux-build.sh --prefix     print the prefix of the
#                                              newest finished build
#   sh deploy/tools/flux-build.sh --list       print "VERSION PREFIX" for
#                                              every finished build
#
# The cache is the one deploy/tools/slurm-build.sh uses: $VNIB_CACHE, by
# default /var/tmp/vnibroker-cache for root, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/vnibroker.  A build lives in
# $VNIB_CACHE/flux-core-VERSION/: src/ (a copy of the tree), prefix/, a
# build.log, and a stamp written last, so an interrupted build is started
# again rather than used.  The version is the tree's (its NEWS.md head, or
# $FLUX_VERSION); a tree of another version than the pinned one is built
# with a warning, never silently.
#
# flux-core's build needs these Debian packages (`make deps` installs
# them): autoconf automake libtool pkg-config libzmq3-dev libjansson-dev
# liblz4-dev libhwloc-dev libsqlite3-dev uuid-dev libarchive-dev
# libncurses-dev python3-dev python3-cffi python3-yaml python3-ply lua5.1
# liblua5.1-0-dev lua-posix libsodium-dev.  It takes about 10 minutes on
# two cores (autogen, configure, make).
set -eu

PIN=0.88.0

. "$(dirname "$0")/cache.sh"

die () {
    echo "flux-build: $*" >&2
    exit 1
}

list () {
    [ -d "$CACHE" ] || return 0
    for d in "$CACHE"/flux-core-*; do
        [ -f "$d/stamp" ] || continue
        echo "$(cat "$d/stamp") $d/prefix"
    done
}

# The release a flux-core tree is: $FLUX_VERSION, else the first
# "flux-core version X" heading of its NEWS.md.
tree_version () {
    if [ -n "${FLUX_VERSION:-}" ]; then
        echo "$FLUX_VERSION"
        return 0
    fi
    [ -f "$1/configure.ac" ] && grep -q flux-core "$1/configure.ac" ||
        die "$1 is not a flux-core source tree (no configure.ac naming flux-core)"
    v=$(awk '/^flux-core version [0-9]/ { print $3; exit }' "$1/NEWS.md" \
        2>/dev/null)
    [ -n "$v" ] || die "$1: no version in NEWS.md; set FLUX_VERSION"
    echo "$v"
}

case "${1:-}" in
    --list)
        list
        exit 0
        ;;
    --prefix)
        list | sort -V | tail -n 1 | cut -d' ' -f2
        exit 0
        ;;
    --src)
        [ $# -eq 2 ] || die "usage: flux-build.sh --src DIR"
        src=$(cd "$2" && pwd) || die "$2: no such folder"
        ;;
    --git)
        src=""
        ;;
    *)
        echo "usage: flux-build.sh --src DIR | --git | --prefix | --list" >&2
        exit 2
        ;;
esac

if [ -n "$src" ]; then
    version=$(tree_version "$src")
else
    version=$PIN
fi
[ "$version" = "$PIN" ] ||
    echo "flux-build: warning: building flux-core $version; vnibroker is tested against $PIN" >&2

top=$CACHE/flux-core-$version
if [ -f "$top/stamp" ] && [ -x "$top/prefix/bin/flux" ]; then
    exit 0
fi
for tool in autoconf automake libtoolize pkg-config lua5.1; do
    command -v "$tool" >/dev/null ||
        die "$tool not found: \`make deps\` (as root) installs flux-core's build packages"
done
for pc in libzmq jansson liblz4 hwloc sqlite3 uuid libarchive libsodium; do
    pkg-config --exists "$pc" ||
        die "pkg-config finds no $pc: \`make deps\` (as root) installs flux-core's build packages"
done
rm -rf "$top"
mkdir -p "$top"
chmod 755 "$CACHE" "$top"
mkdir "$top/src.tmp"
if [ -n "$src" ]; then
    # A copy: the build writes into the tree, which is the caller's.
    (cd "$src" && tar -cf - --exclude=.git .) | tar -xf - -C "$top/src.tmp" ||
        die "copying $src failed"
else
    url=${FLUX_GIT:-https://github.com/flux-framework/flux-core.git}
    echo "flux-build: cloning $url at v$PIN"
    git clone -q --depth 1 --branch "v$PIN" "$url" "$top/src.tmp" ||
        die "git clone of $url v$PIN failed (no network? export the tag and use --src DIR)"
    rm -rf "$top/src.tmp/.git"
fi
mv "$top/src.tmp" "$top/src"

echo "flux-build: building flux-core $version into $top/prefix (about 10 minutes on 2 cores; log: $top/build.log)"
# FLUX_VERSION: configure.ac asks git for the version otherwise, and the
# tree has no history.  Debian's python3: another python3 first on PATH
# may lack the ply module configure checks for.
(
    cd "$top/src" &&
        export FLUX_VERSION="$version" &&
        ./autogen.sh &&
        PYTHON=/usr/bin/python3 ./configure --prefix="$top/prefix" \
            --disable-docs &&
        make -j"$JOBS" &&
        make install
) >"$top/build.log" 2>&1 || {
    tail -n 15 "$top/build.log" >&2
    die "building flux-core $version failed; see $top/build.log"
}
echo "$version" >"$top/stamp"
echo "flux-build: flux-core $version ready in $top/prefix"
