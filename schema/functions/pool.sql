-- SPDX-License-Identifier: GPL-2.0-or-later
-- The VNI pool: the pool in force, the queue of free VNIs (vni_free, in
-- the order they became free, so that the VNI free longest is handed out
-- first), taking VNIs from its head without waiting on another reserve,
-- and which reservation holds or last held a VNI (schema/0004, 0007).

-- Record the pool in force (p_lo[i]-p_hi[i]) and make the queue match
-- it: VNIs outside it leave, VNIs of it neither held nor queued join at
-- the tail.  Returns what changed, for the broker's log.
CREATE OR REPLACE FUNCTION vnib_pool_sync(p_lo integer[], p_hi integer[],
                                          OUT previous text, OUT added bigint,
                                          OUT removed bigint)
LANGUAGE plpgsql AS $$
BEGIN
    -- Replicas starting together take turns ("vnibpool").
    PERFORM pg_advisory_xact_lock(8534447410148077420);
    SELECT string_agg(CASE WHEN lo = hi THEN lo::text ELSE lo || '-' || hi END,
                      ',' ORDER BY lo) INTO previous
      FROM vni_pool;
    DELETE FROM vni_pool;
    INSERT INTO vni_pool (lo, hi) SELECT * FROM unnest(p_lo, p_hi);
    DELETE FROM vni_free f
     WHERE NOT EXISTS (SELECT 1 FROM vni_pool p WHERE f.vni BETWEEN p.lo AND p.hi);
    GET DIAGNOSTICS removed = ROW_COUNT;
    INSERT INTO vni_free (vni, seq)
         SELECT v, nextval('vni_free_seq')
           FROM (SELECT v FROM vni_pool p, generate_series(p.lo, p.hi) v
                  WHERE NOT EXISTS (SELECT 1 FROM vni_holds h WHERE h.vni = v)
                    AND NOT EXISTS (SELECT 1 FROM vni_free f WHERE f.vni = v)
                  ORDER BY v) missing
    ON CONFLICT (vni) DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
END $$;

-- Take p_want VNIs for reservation p_res from the head of the queue,
-- skipping rows other reserves are taking and VNIs still cooling down
-- (usable_at to come, schema/0021); only VNIs of the caller's pool
-- (ranges p_lo[i]-p_hi[i]).  One VNI per statement (LIMIT 1, planned once
-- per connection).  Raises SQLSTATE VN001 with DETAIL "<wanted> <free>
-- <being taken> <cooling>" when too few are free: the statement then
-- rolls back, leaving everything as it was.
CREATE OR REPLACE FUNCTION vnib_alloc(p_res bigint, p_want integer,
                                      p_lo integer[], p_hi integer[])
RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    got integer[] := '{}';
    one integer;
    busy bigint;
    cooling bigint;
BEGIN
    FOR i IN 1 .. p_want LOOP
        DELETE FROM vni_free f
         WHERE f.vni = (SELECT q.vni FROM vni_free q
                         WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                                        WHERE q.vni BETWEEN p.lo AND p.hi)
                           AND q.usable_at <= now()
                         ORDER BY q.seq LIMIT 1
                           FOR UPDATE SKIP LOCKED)
        RETURNING f.vni INTO one;
        EXIT WHEN one IS NULL;
        got := got || one;
    END LOOP;
    IF cardinality(got) < p_want THEN
        -- What is still queued and usable was skipped: other reserves are
        -- taking it.  What is cooling waits for leases to expire.
        SELECT count(*) FILTER (WHERE q.usable_at <= now()),
               count(*) FILTER (WHERE q.usable_at > now())
          INTO busy, cooling FROM vni_free q
         WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                        WHERE q.vni BETWEEN p.lo AND p.hi);
        RAISE EXCEPTION 'VNI pool exhausted'
            USING ERRCODE = 'VN001',
                  DETAIL = p_want || ' ' || busy + cardinality(got) || ' '
                           || busy || ' ' || cooling;
    END IF;
    INSERT INTO vni_holds (vni, reservation_id) SELECT unnest(got), p_res;
    RETURN got;
END $$;

-- Free reservation p_id's VNIs: they leave vni_holds and join the tail of
-- the queue (those of the pool in force), lowest first, usable once its
-- last lease expired (vnib_end_quarantines_own).
CREATE OR REPLACE FUNCTION vnib_unhold(p_id bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH freed AS (DELETE FROM vni_holds WHERE reservation_id = p_id
                   RETURNING vni)
    INSERT INTO vni_free (vni, seq, usable_at)
         SELECT vni, nextval('vni_free_seq'),
                coalesce((SELECT r.lease_until
                                 + make_interval(secs => r.lease_skew_s)
                            FROM reservations r WHERE r.id = p_id),
                         '-infinity')
           FROM (SELECT vni FROM freed
                  WHERE NOT EXISTS (SELECT 1 FROM vni_pool)
                     OR EXISTS (SELECT 1 FROM vni_pool p
                                 WHERE freed.vni BETWEEN p.lo AND p.hi)
                  ORDER BY vni) f
    ON CONFLICT (vni) DO NOTHING;
END $$;

-- The reservation holding VNI p_vni, else the newest released one that
-- held it; NULL when none did (or when those were purged).  PL/pgSQL
-- rather than SQL: a SQL function with sub-SELECTs is not inlined, and
-- would be planned again on every call.  Its generic plan must not start
-- parallel workers for the few rows of one VNI.
CREATE OR REPLACE FUNCTION vnib_vni_reservation(p_vni integer)
RETURNS bigint LANGUAGE plpgsql STABLE
SET max_parallel_workers_per_gather = 0 AS $$
BEGIN
    RETURN coalesce(
        (SELECT reservation_id FROM vni_holds WHERE vni = p_vni),
        (SELECT max(id) FROM (
             SELECT id FROM reservations
              WHERE state = 'released' AND cardinality(vnis) >= 1
                AND vnis[1] = p_vni
             UNION ALL
             SELECT id FROM reservations
              WHERE state = 'released' AND cardinality(vnis) >= 2
                AND vnis[2] = p_vni
             UNION ALL
             SELECT id FROM reservations
              WHERE state = 'released' AND cardinality(vnis) >= 3
                AND vnis[3] = p_vni
             UNION ALL
             SELECT id FROM reservations
              WHERE state = 'released' AND cardinality(vnis) >= 4
                AND vnis[4] = p_vni) held));
END $$;

-- Reservation p_id's VNIs are named by a lease that expires at p_until
-- and was signed allowing p_skew_s seconds of clock difference: they
-- cool down until then (schema/0021).  Keeps the latest of each.
CREATE OR REPLACE FUNCTION vnib_lease_extend(p_id bigint, p_until timestamptz,
                                             p_skew_s integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE reservations
       SET lease_until = greatest(lease_until, p_until),
           lease_skew_s = greatest(lease_skew_s, coalesce(p_skew_s, 0))
     WHERE id = p_id
       AND (lease_until IS NULL OR lease_until < p_until
            OR lease_skew_s < coalesce(p_skew_s, 0));
END $$;
