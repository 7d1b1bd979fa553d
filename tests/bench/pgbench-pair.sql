-- One reserve+release pair per pgbench transaction, through the same
-- functions with the same parameters as the broker (server/store.c,
-- sql_reserve and sql_release) for what the `pairs` scenario of
-- bench_api sends: job <unique>, uid 1000, user "bench", nodes n[1-4],
-- 1 VNI from the pool 1024-65535, the default traffic classes
-- (LOW_LATENCY|BEST_EFFORT = 10), actor "bench", hwcoll disabled.  Each
-- statement is its own transaction (autocommit), as in the broker.
\set j random(1, 2000000000)
SELECT * FROM vnib_reserve('pgb' || :client_id || '-' || :j, 1000::bigint,
    'bench', 'n[1-4]', 4, 1, 10::smallint, NULL, 'bench',
    '{1024}'::integer[], '{65535}'::integer[],
    '{n}'::text[], '{""}'::text[], '{0}'::smallint[], '{1}'::bigint[],
    '{4}'::bigint[], 'auto', 'disabled', NULL, NULL, NULL::integer);
SELECT * FROM vnib_release('pgb' || :client_id || '-' || :j, 'bench', false,
    NULL::bigint);
