-- 0015: the sweeper's pass costs what it finds, not a call per quarantine.
--
-- vnib_sweep asked vnib_nodes_holding, a PL/pgSQL function, about every
-- quarantined reservation, one call each: with 20,000 quarantines (the
-- bench's history scenario) a pass took 100-160 ms of database time every
-- vni.sweep_interval_s, on the same cores as the requests, to find that
-- none could end.  The same question as an anti-join on node_reports'
-- partial index of holders takes about 7 ms, and the quarantines that can
-- end now end in one vnib_end_quarantines call (their VNIs join the free
-- queue in reservation order, as before).
CREATE OR REPLACE FUNCTION vnib_sweep(p_actor text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    jobs text[];
BEGIN
    SELECT array_agg(q.id ORDER BY q.id), array_agg(q.job_id ORDER BY q.id)
      INTO ids, jobs
      FROM (SELECT r.id, r.job_id FROM reservations r
             WHERE r.state = 'releasing'
               AND NOT EXISTS (SELECT 1 FROM node_reports n
                                WHERE n.reservation_id = r.id
                                  AND n.cxi <> 'destroyed')
             ORDER BY r.id
               FOR UPDATE OF r SKIP LOCKED) q;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM vnib_end_quarantines(ids, jobs, p_actor,
                                 array_fill('quarantine_end'::text,
                                            ARRAY[cardinality(ids)]),
                                 array_fill(false, ARRAY[cardinality(ids)]),
                                 false);
    RETURN cardinality(ids);
END $$;
