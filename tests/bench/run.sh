#!/bin/sh
# `make bench`: build and run the benchmarks, printing one table of
# scenario, figure, target and whether the target is met.  Benchmarks
# never fail the build: targets are reported, not asserted (timing on a
# shared 2-core machine is not a test).
set -eu
BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP"
make -s --no-print-directory "$BUILD/tests/bench/bench_lib"
echo "== library ($(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
"$BUILD/tests/bench/bench_lib"
