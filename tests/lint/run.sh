#!/bin/sh
# make lint: the source checks that no compiler makes.  First the checkers
# are shown to work (each must report every defect in its "bad" fixture and
# nothing in its "good" one), then they read every C file git tracks.
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
exit "$fail"
