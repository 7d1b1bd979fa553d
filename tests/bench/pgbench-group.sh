#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# pgbench-group.sh N: print a pgbench script of the broker's own SQL for
# the bench's "pairs" scenario (tests/bench/bench_api.c), as the broker
# sends it when its groups carry N requests (group commit, server/store/group.h
# and schema/0008): one vnib_reserve_batch call for N jobs, then one
# vnib_release_batch call for the same N, each its own transaction.  The
# parameters are those store_reserve and store_release in
# server/store/store_reservations.c send for {"job_id": ..., "uid": 1000, "user": "bench", "nodes": "n[1-4]",
# "vni_count": 1} with vni.pool "1024-65535" and hardware collectives off,
# then DELETE /v1/reservations/<job>.  One pgbench transaction is N pairs.
# Job ids are unique per client and draw:
#   pgbench -n -M prepared -c 8 -j 2 -T 10 -f <this output> vnibroker
# The database needs the schema (vnibrokerd --migrate) and the pool synced
# (a broker started once, or vnib_pool_sync('{1024}', '{65535}')).
set -eu
n=${1:?usage: pgbench-group.sh N}
case "$n" in '' | *[!0-9]* | 0) echo "pgbench-group.sh: N must be a positive integer" >&2; exit 2 ;; esac

# each VALUE: N copies of VALUE, comma-separated
each () {
    i=1 out=""
    while [ "$i" -le "$n" ]; do
        out="$out${out:+,}$1"
        i=$((i + 1))
    done
    printf '%s' "$out"
}

jobs="" items="" i=1
while [ "$i" -le "$n" ]; do
    jobs="$jobs${jobs:+, }'pgb-' || :client_id || '-' || :j || '-$i'"
    items="$items${items:+,}$i"
    i=$((i + 1))
done

cat <<SQL
\\set j random(1, 2000000000)
SELECT count(*) FROM vnib_reserve_batch(ARRAY[$jobs],
    '{$(each 1000)}'::bigint[], '{$(each bench)}'::text[],
    '{$(each '"n[1-4]"')}'::text[], '{$(each 4)}'::integer[],
    '{$(each 1)}'::integer[], '{$(each 10)}'::smallint[],
    '{$(each NULL)}'::text[], '{$(each bench)}'::text[],
    '{1024}'::integer[], '{65535}'::integer[], '{$items}'::integer[],
    '{$(each n)}'::text[], '{$(each '""')}'::text[], '{$(each 0)}'::smallint[],
    '{$(each 1)}'::bigint[], '{$(each 4)}'::bigint[],
    '{$(each auto)}'::text[], '{$(each disabled)}'::text[],
    '{$(each '"hardware collectives are not enabled on this broker"')}'::text[],
    '{$(each NULL)}'::text[], '{$(each NULL)}'::integer[], NULL, false);
SELECT count(*) FROM vnib_release_batch(ARRAY[$jobs],
    '{$(each NULL)}'::bigint[], 'bench', false, false);
SQL
