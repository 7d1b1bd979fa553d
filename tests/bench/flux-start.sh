#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job start overhead under Flux, for `make bench` (tests/bench/run.sh,
# scenario "fluxstart"): `flux run -N3 true` on the three-broker test
# instance of tests/integration/flux.sh (fx0-fx2, four simulated NICs
# each, a real broker), timed from the command's start to its exit, without
# vnibroker (flux-core's own start: no jobtap plugin, no per-rank prolog,
# no shell plugin) and with it (vnib-jobtap.so, vnib-flux-node as the
# per-rank prolog and housekeeping, vnib-shell.so), and, for the floor any
# node-side step pays, with a per-rank prolog that runs /bin/true and
# nothing else of vnibroker.  An instance runs one configuration, so the
# three alternate by rounds: each round starts an
# instance per path (the order turning every round) and times
# RUNS/ROUNDS jobs on it.  Prints "# none: MEDIAN MIN MAX", "# perilog:
# ..." and "# vnib: ..." in ms over RUNS jobs each (BENCH_FLUX_RUNS, default 20;
# BENCH_FLUX_ROUNDS, default 4).  Needs root and flux-core (flux.sh skips
# otherwise).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/agent.sh"
. "$(dirname "$0")/../integration/flux.sh"

RUNS=${BENCH_FLUX_RUNS:-20}
ROUNDS=${BENCH_FLUX_ROUNDS:-4}
PER=$(((RUNS + ROUNDS - 1) / ROUNDS))

flux_require
flux_cluster
flux_setup
# Without vnibroker: the same resources, flux-core's own start.
mkdir -p "$T/none.d"
sed -n '/^\[resource\]/,/^cores/p' "$T/flux.d/vnibroker.toml" >"$T/none.d/resource.toml"
head -n 3 "$T/initrc.lua" >"$T/none.lua"
# The floor of any node-side step: a per-rank prolog that does nothing.
mkdir -p "$T/perilog.d"
cp "$T/none.d/resource.toml" "$T/perilog.d/"
cat >"$T/perilog.d/perilog.toml" <<EOF2
[job-manager]
plugins = [ { load = "perilog.so" } ]

[job-manager.prolog]
per-rank = true
command = [ "/bin/true" ]
EOF2

: >"$T/none.ms"
: >"$T/perilog.ms"
: >"$T/vnib.ms"
order="none perilog vnib"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    r=$((r + 1))
    for path in $order; do
        if [ "$path" = none ]; then
            flux_start "$T/none.d" "$T/none.lua"
        elif [ "$path" = perilog ]; then
            flux_start "$T/perilog.d" "$T/none.lua"
        else
            flux_start
        fi || { echo "# $path: the instance did not start"; exit 1; }
        fluxc run -N3 true >/dev/null 2>&1 # the first job warms the shells
        i=0
        while [ "$i" -lt "$PER" ]; do
            i=$((i + 1))
            t0=$(date +%s%N)
            fluxc run -N3 true >/dev/null 2>>"$T/$path.err" ||
                echo "# $path: flux run failed: $(tail -n 1 "$T/$path.err")"
            t1=$(date +%s%N)
            echo $(((t1 - t0) / 1000)) >>"$T/$path.ms"
        done
        flux_stop
    done
    set -- $order
    order="$2 $3 $1"
done

for path in none perilog vnib; do
    sort -n "$T/$path.ms" | awk -v p="$path" -f "$(dirname "$0")/median.awk"
done
exit 0
