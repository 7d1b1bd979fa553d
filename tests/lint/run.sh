#!/bin/sh
# make lint: the source checks that no compiler makes: jansson reference
# steals (jansson-refs.pl) and includes against the layers' order
# (layers.sh).  First the checkers are shown to work (each must report
# every defect in its "bad" fixture and nothing in its "good" one), then
# they read every C file git tracks.
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
exit "$fail"
