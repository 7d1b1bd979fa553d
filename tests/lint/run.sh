#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make lint: the source checks that no compiler makes.  First the checkers
# are shown to work (each must report every defect in its "bad" fixture and
# nothing in its "good" one), then they read the files git tracks: the
# jansson references of every C file (jansson-refs.pl), includes and calls
# against the layers' order (layers.sh), and the licence line of every
# source file (spdx.sh).
set -u
cd "$(dirname "$0")/../.."
fail=0
out=$(perl tests/lint/jansson-refs.pl tests/lint/fixtures/jansson-bad.c)
n=$(printf '%s\n' "$out" | grep -c 'json_decref')
if [ "$n" -ne 3 ]; then
    echo "lint: jansson-refs.pl found $n of the 3 defects in jansson-bad.c:"
    printf '%s\n' "$out"
    fail=1
fi
if ! perl tests/lint/jansson-refs.pl tests/lint/fixtures/jansson-good.c; then
    echo "lint: jansson-refs.pl reported jansson-good.c, which is right"
    fail=1
fi
if ! perl tests/lint/jansson-refs.pl \
    $(git ls-files '*.c' ':!:tests/lint/fixtures/*'); then
    fail=1
fi
[ "$fail" -eq 0 ] && echo "lint: jansson references: ok"

lfail=0
bad=tests/lint/fixtures/layers-bad
out=$(sh tests/lint/layers.sh "$bad" $(find "$bad" -name '*.[ch]' | sort))
n=$(printf '%s\n' "$out" | grep -c 'higher layer')
if [ "$n" -ne 3 ]; then
    echo "lint: layers.sh found $n of the 3 upward includes in $bad:"
    printf '%s\n' "$out"
    lfail=1
fi
good=tests/lint/fixtures/layers-good
if ! sh tests/lint/layers.sh "$good" $(find "$good" -name '*.[ch]'); then
    echo "lint: layers.sh reported $good, which is right"
    lfail=1
fi
if ! sh tests/lint/layers.sh . $(git ls-files '*.c' '*.h' ':!:tests/*'); then
    lfail=1
fi
# With a build folder (make check passes build/san): the same order for
# the calls between the broker's objects.
if [ -n "${1:-}" ]; then
    fx=$(mktemp -d)
    for f in store/call api/thing; do
        mkdir -p "$fx/server/${f%/*}"
        ${CC:-cc} -c -o "$fx/server/$f.o" "tests/lint/fixtures/link-bad/server/$f.c"
    done
    out=$(sh tests/lint/layers.sh --link "$fx" tests/lint/fixtures/link-bad)
    rm -rf "$fx"
    n=$(printf '%s\n' "$out" | grep -c 'higher layer')
    if [ "$n" -ne 1 ]; then
        echo "lint: layers.sh --link found $n of the 1 upward call in link-bad:"
        printf '%s\n' "$out"
        lfail=1
    fi
    sh tests/lint/layers.sh --link "$1" || lfail=1
else
    echo "lint: layers of calls: skipped (no build folder given; make check gives build/san)"
fi
[ "$lfail" -eq 0 ] && echo "lint: layers: ok"
[ "$lfail" -eq 0 ] || fail=1

# The licence line.  fixtures/spdx/missing/ holds files as they might be
# written, added/ the same files as `spdx.sh --add` must leave them: the
# check must name exactly the files that differ, nothing in added/, and
# --add, twice, must turn copies of missing/ into added/ (modes kept).
spdx_fail=0
fx=tests/lint/fixtures/spdx
want=$(for f in "$fx"/missing/*; do
    cmp -s "$f" "$fx/added/${f##*/}" || echo "$f"
done)
got=$(sh tests/lint/spdx.sh "$fx"/missing/* | sed -n 's/^spdx: \(.*\): no .*/\1/p')
if [ "$got" != "$want" ]; then
    echo "lint: spdx.sh named these files of $fx/missing:"
    printf '%s\n' "$got"
    echo "lint: instead of these:"
    printf '%s\n' "$want"
    spdx_fail=1
fi
if ! out=$(sh tests/lint/spdx.sh "$fx"/added/*); then
    echo "lint: spdx.sh reported files of $fx/added, which are right:"
    printf '%s\n' "$out"
    spdx_fail=1
fi
tmp=$(mktemp -d)
cp -p "$fx"/missing/* "$tmp"/
sh tests/lint/spdx.sh --add "$tmp"/* >/dev/null
sh tests/lint/spdx.sh --add "$tmp"/* >/dev/null
for f in "$fx"/added/*; do
    c=$tmp/${f##*/}
    if ! cmp -s "$f" "$c" || { [ -x "$f" ] && [ ! -x "$c" ]; }; then
        echo "lint: spdx.sh --add (twice) made of $fx/missing/${f##*/}:"
        diff "$f" "$c"
        spdx_fail=1
    fi
done
rm -rf "$tmp"

# The tree.  While tests/lint/spdx-pending exists (until every source
# file has been given the line at once, by `spdx.sh --add`, which removes
# it), a file without the line is counted, not a failure.
if [ "$spdx_fail" -eq 0 ]; then
    if out=$(sh tests/lint/spdx.sh); then
        echo "lint: licence lines: ok"
    elif [ -e tests/lint/spdx-pending ]; then
        n=$(printf '%s\n' "$out" | grep -c '^spdx: ')
        echo "lint: licence lines: $n source files have none; not yet a failure, as tests/lint/spdx-pending exists (\`sh tests/lint/spdx.sh\` names them, \`sh tests/lint/spdx.sh --add\` adds them and removes that file)"
    else
        printf '%s\n' "$out"
        echo "lint: licence lines: each file above lacks '/* SPDX-License-Identifier: GPL-2.0-or-later */' (or its own comment syntax) in its first 3 lines: \`sh tests/lint/spdx.sh --add\` adds it"
        spdx_fail=1
    fi
fi
[ "$spdx_fail" -eq 0 ] || fail=1
exit "$fail"
