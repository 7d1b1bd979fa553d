-- One reserve+release pair per pgbench transaction: the broker's own SQL
-- for the bench's "pairs" scenario (tests/bench/bench_api.c), with the
-- parameters store_reserve and store_release in server/store.c send for
-- {"job_id": ..., "uid": 1000, "user": "bench", "nodes": "n[1-4]",
-- "vni_count": 1} with vni.pool "1024-65535" and hardware collectives
-- off, then DELETE /v1/reservations/<job>.  Each statement is its own
-- transaction, as in the broker.  Job ids are unique per client and draw:
--   pgbench -n -M prepared -c 8 -j 2 -T 10 -f pgbench-pair.sql vnibroker
-- The database needs the schema (vnibrokerd --migrate) and the pool
-- synced (a broker started once, or vnib_pool_sync('{1024}', '{65535}')).
\set j random(1, 2000000000)
SELECT * FROM vnib_reserve('pgb-' || :client_id || '-' || :j, 1000::bigint,
    'bench', 'n[1-4]', 4, 1, 10::smallint, NULL, 'bench',
    '{1024}'::integer[], '{65535}'::integer[], '{n}'::text[], '{""}'::text[],
    '{0}'::smallint[], '{1}'::bigint[], '{4}'::bigint[], 'auto', 'disabled',
    'hardware collectives are not enabled on this broker', NULL, NULL::integer);
SELECT * FROM vnib_release('pgb-' || :client_id || '-' || :j, 'bench', false,
    NULL::bigint);
