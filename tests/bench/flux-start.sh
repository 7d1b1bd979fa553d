#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job start overhead under Flux, for `make bench` (tests/bench/run.sh,
# scenario "fluxstart"): `flux run -N3 true` on three-broker test
# instances as tests/integration/flux.sh makes them (fx0-fx2, four
# simulated NICs each, a real broker), timed from the command's start to
# its exit, in three configurations:
#
#   none     flux-core's own start: no jobtap plugin, no per-rank prolog,
#            no shell plugin;
#   perilog  a per-rank prolog that runs /bin/true and nothing else of
#            vnibroker: the floor of any node-side step, and the target's
#            reference (vnibroker at most 10% over it);
#   vnib     vnibroker: vnib-jobtap.so (the reserve with a lease, the
#            events), vnib-flux-node as the per-rank prolog (the services
#            from the lease) and housekeeping, vnib-shell.so.
#
# The three instances run side by side (idle but for the job being
# timed), so the configurations alternate job by job, the order turning
# every round: on a shared machine a burst of load then falls on all
# three alike; after a vnibroker job its nodes' housekeeping (which runs
# on these same two cores) is waited for before the next job.  Prints "#
# none: MEDIAN MIN MAX", "# perilog: ..." and "# vnib: ..." in ms over RUNS
# jobs each (BENCH_FLUX_RUNS, default 30), then where a job's start goes,
# medians from the jobs' eventlogs and the vnib instance's log: "# where:
# ..." lines.  Needs root and flux-core (flux.sh skips otherwise).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/agent.sh"
. "$(dirname "$0")/../integration/flux.sh"

RUNS=${BENCH_FLUX_RUNS:-30}
FLUX_POISON=0 # Flux's own allocator: the tests' poisoning slows it
# The nodes' state directories on a tmpfs, as /run/vnibroker is on a
# node, and the simulated NICs with them (a NIC is no disk).
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    AGENT_RUN_ROOT=$(mktemp -d /dev/shm/vnib-fluxstart.XXXXXX)
    trap 'flux_stop; rm -rf "$AGENT_RUN_ROOT"; cleanup' EXIT
fi

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

# The three instances, each warmed by a first job (its shells, its
# caches), then left idle.
paths="none perilog vnib"
for path in $paths; do
    case $path in
        none) flux_start "$T/none.d" "$T/none.lua" none ;;
        perilog) flux_start "$T/perilog.d" "$T/none.lua" perilog ;;
        vnib) flux_start "$T/flux.d" "$T/initrc.lua" vnib ;;
    esac || { echo "# $path: the instance did not start"; exit 1; }
    eval "URI_$path=\$FLUX_URI PID_$path=\$FLUX_PID"
    fluxc run -N3 true >/dev/null 2>&1
    : >"$T/$path.ms"
    : >"$T/$path.ids"
done

order=$paths
i=0
while [ "$i" -lt "$RUNS" ]; do
    i=$((i + 1))
    for path in $order; do
        eval "FLUX_URI=\$URI_$path"
        export FLUX_URI
        t0=$(date +%s%N)
        fluxc run -N3 true >/dev/null 2>>"$T/$path.err" ||
            echo "# $path: flux run failed: $(tail -n 1 "$T/$path.err")"
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000)) >>"$T/$path.ms"
        id=$(fluxc job last 2>/dev/null)
        echo "$id" >>"$T/$path.ids"
        # The nodes' housekeeping runs after the job, on the nodes' cores:
        # here the next job's, whatever its configuration, so it is waited
        # for (and measured below).
        [ "$path" != vnib ] ||
            wait_for 20 grep -q "housekeeping: $id complete" "$T/vnib.log"
    done
    set -- $order
    order="$2 $3 $1"
done

for path in $paths; do
    eval "FLUX_PID=\$PID_$path"
    FLUX_NAME=$path
    eval "FLUX_URI=\$URI_$path"
    export FLUX_URI
    # Each job's eventlog: the times (ms) from its alloc to its start, of
    # the vnibroker hold (prolog-start to the vnibroker event: the
    # reserve), of the per-rank prolog (its prolog-start to prolog-finish),
    # and from its submission to its alloc (resources still in the previous
    # job's housekeeping show there).
    while read -r id; do
        fluxc job eventlog -f json "$id" 2>/dev/null | jq -s -r '
            def t(f): [.[] | select(f) | .timestamp][0];
            def d(a; b): if a == null or b == null then null else a - b end;
            [ d(t(.name == "start"); t(.name == "alloc")),
              d(t(.name == "vnibroker");
                t(.name == "prolog-start" and .context.description == "vnibroker")),
              d(t(.name == "prolog-finish" and .context.description == "job-manager.prolog");
                t(.name == "prolog-start" and .context.description == "job-manager.prolog")),
              d(t(.name == "alloc"); t(.name == "submit")),
              d(t(.name == "finish"); t(.name == "start")),
              d(t(.name == "clean"); t(.name == "finish")),
              d(t(.name == "clean"); t(.name == "submit")) ]
            | map(if . == null then "-" else (. * 1000 | tostring) end) | join(" ")'
    done <"$T/$path.ids" >"$T/$path.where"
    flux_stop
done

for path in $paths; do
    sort -n "$T/$path.ms" | awk -v p="$path" -f "$(dirname "$0")/median.awk"
done
# median COLUMN FILE: the median of a column's numbers ("-" left out).
median () {
    awk -v c="$1" '$c != "-" { print $c }' "$2" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else printf "-" }'
}
echo "# where: submit to alloc $(median 4 "$T/none.where") ms (none), $(median 4 "$T/perilog.where") (perilog), $(median 4 "$T/vnib.where") (vnib)"
echo "# where: start to finish $(median 5 "$T/none.where") ms (none), $(median 5 "$T/perilog.where") (perilog), $(median 5 "$T/vnib.where") (vnib)"
echo "# where: finish to clean $(median 6 "$T/none.where") ms (none), $(median 6 "$T/perilog.where") (perilog), $(median 6 "$T/vnib.where") (vnib)"
echo "# where: submit to clean $(median 7 "$T/none.where") ms (none), $(median 7 "$T/perilog.where") (perilog), $(median 7 "$T/vnib.where") (vnib)"
echo "# where: alloc to start $(median 1 "$T/none.where") ms (none), $(median 1 "$T/perilog.where") (perilog), $(median 1 "$T/vnib.where") (vnib)"
sed -n 's/.*vnibroker: job [0-9]* reserved in \([0-9]*\) ms.*/\1/p' "$T/vnib.log" >"$T/reserve.ms"
echo "# where: per-rank prolog $(median 3 "$T/perilog.where") ms (perilog), $(median 3 "$T/vnib.where") (vnib); in it, the reserve (the hold to the vnibroker event) $(median 2 "$T/vnib.where") ms, of which the broker's answer $(median 1 "$T/reserve.ms") ms"
# Housekeeping, from the vnib instance's log: "housekeeping: ID started"
# to "... complete", per job.
awk '/housekeeping: .* (started|complete)$/ {
        split($3, hms, ":"); t = hms[1] * 3600 + hms[2] * 60 + hms[3]
        if ($NF == "started") s[$(NF - 1)] = t; else if ($(NF - 1) in s) print (t - s[$(NF - 1)]) * 1000
    }' "$T/vnib.log" >"$T/hk.ms"
echo "# where: housekeeping $(median 1 "$T/hk.ms") ms (vnib, after each job, while the next one is submitted)"
exit 0
