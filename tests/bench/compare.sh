#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# `make bench-compare BASE=DIR`: the same benchmarks on two trees, this
# one and another checkout DIR (the tree before a change: `git worktree
# add DIR REV`), alternated: ROUNDS rounds, the order of the two turning
# each round so that neither always runs on a warmer or busier machine.
# Each tree runs its own tests/bench/run.sh with its own build (BUILD,
# default build/ in each tree); the table then gives every figure's median
# and range per tree and the ratio of the medians (compare.py).  A change
# that is "within the noise" has ranges that overlap.
#
# Usage: compare.sh BASE [ROUNDS]; BENCH_ONLY (default: the request paths'
# scenarios) and the other BENCH_* knobs of run.sh apply to both trees.
set -eu
BASE=${1:?usage: compare.sh BASE-CHECKOUT [ROUNDS]}
ROUNDS=${2:-3}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BASE=$(cd "$BASE" && pwd)
[ -f "$BASE/tests/bench/run.sh" ] || {
    echo "compare: $BASE has no tests/bench/run.sh: not a vnibroker checkout" >&2
    exit 1
}
export BENCH_ONLY=${BENCH_ONLY:-healthz compare openloop bigjob nodeview rss storm}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/vnib-compare.XXXXXX")
echo "compare: $BASE (before) against $TOP (after), $ROUNDS rounds of: $BENCH_ONLY"
i=1
while [ "$i" -le "$ROUNDS" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for which in $order; do
        case $which in before) dir=$BASE ;; after) dir=$TOP ;; esac
        if ! (cd "$dir" && sh tests/bench/run.sh "${BUILD:-build}") \
            >"$OUT/$which.$i.txt" 2>&1; then
            echo "compare: $which, round $i: run.sh failed; its output: $OUT/$which.$i.txt" >&2
            exit 1
        fi
        echo "compare: round $i, $which: done"
    done
    i=$((i + 1))
done
python3 "$TOP/tests/bench/compare.py" "$OUT"
echo "compare: each run's own table is in $OUT"
