#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Build vnibroker's Debian packages with Debian's own tools: what `make
# deb` runs.
#
#   sh deploy/tools/deb.sh OUT_DIR SLURM_SRC [SLURM_PREFIX]
#
# The source tree is copied to OUT_DIR/src (tracked and untracked files
# that git does not ignore, so uncommitted edits are in; without git, the
# tree less build/, .run/ and .git), with deploy/debian as its debian/,
# and dpkg-buildpackage -us -uc -b builds there, so the source tree stays
# clean; the .debs, .buildinfo and .changes land in OUT_DIR.  OUT_DIR is
# emptied first (when it is empty or holds an earlier build, else the
# script stops).  The packaging needs no root (Rules-Requires-Root: no).
# SLURM_SRC is the configured Slurm source tree switch_vnib.so is
# compiled against; a folder holding it as tree/ (build/slurm-src, as
# deploy/tools/slurm-src.sh makes it) is taken too.  DEB_BUILD_OPTIONS
# is passed on, with nocheck added and parallel=<cores> unless it names
# one.  The package version (deploy/debian/changelog) must be the
# broker's own (include/vnib/version.h).  SLURM_PREFIX, when given, is
# the folder of an installed Slurm that is not Debian's (a site's own, or
# deploy/tools/slurm-build.sh's): the plugins are built against its
# headers and installed into its PluginDir, SLURM_PREFIX/lib/slurm, and
# Debian's libslurm-dev is not needed to build.
set -eu

[ $# -eq 2 ] || [ $# -eq 3 ] || {
    echo "usage: deb.sh OUT_DIR SLURM_SRC [SLURM_PREFIX]" >&2
    exit 2
}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SLURM_SRC=$2
SLURM_PREFIX=${3:-}
if [ -n "$SLURM_PREFIX" ]; then
    [ -f "$SLURM_PREFIX/include/slurm/spank.h" ] || {
        echo "deb.sh: SLURM_PREFIX=$SLURM_PREFIX holds no include/slurm/spank.h: not an installed Slurm" >&2
        exit 1
    }
    SLURM_PREFIX=$(cd "$SLURM_PREFIX" && pwd)
fi

for tool in dpkg-buildpackage dh dpkg-parsechangelog; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "deb.sh: $tool is missing: apt-get install dpkg-dev debhelper fakeroot" >&2
        exit 1
    fi
done
if [ -n "$SLURM_SRC" ] && [ ! -f "$SLURM_SRC/config.h" ] &&
   [ -f "$SLURM_SRC/tree/config.h" ]; then
    SLURM_SRC=$SLURM_SRC/tree
fi
if [ -z "$SLURM_SRC" ] || [ ! -f "$SLURM_SRC/config.h" ]; then
    echo "deb.sh: no configured Slurm source tree at '$SLURM_SRC' (no config.h): vnibroker-slurm needs switch_vnib.so; \`make deps\` (as root) fetches it into build/slurm-src, or pass SLURM_SRC=/path" >&2
    exit 1
fi
SLURM_SRC=$(cd "$SLURM_SRC" && pwd)

version=$(dpkg-parsechangelog -l "$TOP/deploy/debian/changelog" -S Version)
broker=$(sed -n 's/^#define VNIB_VERSION "\(.*\)"$/\1/p' "$TOP/include/vnib/version.h")
if [ "$version" != "$broker" ]; then
    echo "deb.sh: deploy/debian/changelog is at $version, include/vnib/version.h at $broker: add a changelog entry (dch -v $broker)" >&2
    exit 1
fi

mkdir -p "$1"
OUT=$(cd "$1" && pwd)
case $TOP/ in
    "$OUT"/*) echo "deb.sh: OUT_DIR $OUT holds the source tree" >&2; exit 1 ;;
esac
# Emptied only when it is empty or an earlier build's.
if [ -n "$(ls -A "$OUT")" ] && [ ! -f "$OUT/src/debian/control" ]; then
    echo "deb.sh: OUT_DIR $OUT is not empty and holds no earlier make deb build: name another" >&2
    exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/src"
if [ -e "$TOP/.git" ] && git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$TOP" ls-files -z --cached --others --exclude-standard |
        (cd "$TOP" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh) |
        grep -v '^deploy/debian/' |
        tar -C "$TOP" -cf - -T - | tar -C "$OUT/src" -xf -
    revision=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)
else
    tar -C "$TOP" --exclude=./build --exclude=./.run --exclude=./.git \
        --exclude=./deploy/debian -cf - . | tar -C "$OUT/src" -xf -
    revision=unknown
fi
cp -R "$TOP/deploy/debian" "$OUT/src/debian"
echo "${VNIB_REVISION:-$revision}" > "$OUT/src/debian/vnib-revision"

opts=${DEB_BUILD_OPTIONS:-}
case " $opts " in *" nocheck "*) ;; *) opts="$opts nocheck" ;; esac
case " $opts " in *" parallel="*) ;; *) opts="$opts parallel=$(nproc 2>/dev/null || echo 1)" ;; esac

echo "deb.sh: building vnibroker $version ($revision) in $OUT/src, SLURM_SRC=$SLURM_SRC${SLURM_PREFIX:+, SLURM_PREFIX=$SLURM_PREFIX}"
cd "$OUT/src"
# With another Slurm, Debian's libslurm-dev (a build dependency for
# Debian's) is not needed: -d skips the check of build dependencies.
env SLURM_SRC="$SLURM_SRC" SLURM_PREFIX="$SLURM_PREFIX" \
    DEB_BUILD_OPTIONS="${opts# }" \
    dpkg-buildpackage -us -uc -b ${SLURM_PREFIX:+-d}
ls "$OUT"/*.deb
