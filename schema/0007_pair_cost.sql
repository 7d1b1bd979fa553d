-- 0007: a cheaper reserve+release pair, and a purge that no longer scans
-- every reservation and event.
--
-- Allocation.  vnib_alloc took its VNIs with one statement whose LIMIT
-- was the number wanted, a parameter: PL/pgSQL's generic plan for it
-- looked so dear to the planner that every call planned the statement
-- again, the largest single cost of a reserve.  It now takes one VNI per
-- statement (LIMIT 1, planned once per connection), in the same order and
-- with the same skipping of rows other reserves are taking.
--
-- The free queue.  A reserve takes the queue's head and a release appends
-- at its tail, so the entries of taken VNIs gather in vni_free_order in
-- front of the first free one, and every reserve steps over them until a
-- vacuum removes them.  Autovacuum visits a database at most once per
-- autovacuum_naptime (one minute by default): deploy/README.md asks for
-- a shorter one.
--
-- Which reservation last held a VNI (GET /v1/vnis/{vni}).  A GIN index on
-- reservations.vnis answered it, at the price of an entry for every row
-- version (the reserve's insert and the release's update, which cannot
-- be HOT since it changes state) and of its pending list, which the
-- inserting request itself merges into the index once it is full.  A
-- held VNI's reservation is vni_holds' (its primary key); a VNI no longer
-- held was last held by a released reservation, and released ones are
-- indexed by each of their VNIs (at most 4, by the CHECK on vni_count)
-- in plain B-trees: one entry per pair, made by the release.
--
-- Purge.  vnib_purge looked for old released reservations and old events
-- by reading both tables whole (no index had released_at or at), every
-- vni.sweep_interval_s, on one of the broker's pool connections: a pause
-- for the requests waiting for that connection, growing with the
-- retained history.  Released reservations are now indexed by
-- released_at; events are ordered by id and recorded with the clock, so
-- the old ones are the first ids: the purge looks at those only.

DROP INDEX reservations_vnis;
CREATE INDEX reservations_released_vni1 ON reservations ((vnis[1]))
    WHERE state = 'released' AND cardinality(vnis) >= 1;
CREATE INDEX reservations_released_vni2 ON reservations ((vnis[2]))
    WHERE state = 'released' AND cardinality(vnis) >= 2;
CREATE INDEX reservations_released_vni3 ON reservations ((vnis[3]))
    WHERE state = 'released' AND cardinality(vnis) >= 3;
CREATE INDEX reservations_released_vni4 ON reservations ((vnis[4]))
    WHERE state = 'released' AND cardinality(vnis) >= 4;
CREATE INDEX reservations_released ON reservations (released_at)
    WHERE state = 'released';

-- The reservation holding VNI p_vni, else the newest released one that
-- held it; NULL when none did (or when those were purged).  PL/pgSQL
-- rather than SQL: a SQL function with sub-SELECTs is not inlined, and
-- would be planned again on every call.  Its generic plan must not start
-- parallel workers for the few rows of one VNI (that costs tens of ms).
CREATE FUNCTION vnib_vni_reservation(p_vni integer)
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

-- Take p_want VNIs for reservation p_res from the head of the queue,
-- skipping rows other reserves are taking; only VNIs of the caller's pool
-- (ranges p_lo[i]-p_hi[i]).  Raises SQLSTATE VN001 with DETAIL
-- "<wanted> <free> <being taken>" when too few are free: the statement
-- then rolls back, leaving everything as it was.
CREATE OR REPLACE FUNCTION vnib_alloc(p_res bigint, p_want integer,
                                      p_lo integer[], p_hi integer[])
RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    got integer[] := '{}';
    one integer;
    busy bigint;
BEGIN
    FOR i IN 1 .. p_want LOOP
        DELETE FROM vni_free f
         WHERE f.vni = (SELECT q.vni FROM vni_free q
                         WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                                        WHERE q.vni BETWEEN p.lo AND p.hi)
                         ORDER BY q.seq LIMIT 1
                           FOR UPDATE SKIP LOCKED)
        RETURNING f.vni INTO one;
        EXIT WHEN one IS NULL;
        got := got || one;
    END LOOP;
    IF cardinality(got) < p_want THEN
        -- What is still queued was skipped: other reserves are taking it.
        SELECT count(*) INTO busy FROM vni_free q
         WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                        WHERE q.vni BETWEEN p.lo AND p.hi);
        RAISE EXCEPTION 'VNI pool exhausted'
            USING ERRCODE = 'VN001',
                  DETAIL = p_want || ' ' || busy + cardinality(got) || ' '
                           || busy;
    END IF;
    INSERT INTO vni_holds (vni, reservation_id) SELECT unnest(got), p_res;
    RETURN got;
END $$;

-- As in 0004, with vnib_unhold's statement written in place: one
-- function call fewer per release.
CREATE OR REPLACE FUNCTION vnib_end_quarantine(p_id bigint, p_job text,
                                               p_actor text, p_action text,
                                               p_requested boolean,
                                               p_forced boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH freed AS (DELETE FROM vni_holds WHERE reservation_id = p_id
                   RETURNING vni)
    INSERT INTO vni_free (vni, seq)
         SELECT vni, nextval('vni_free_seq')
           FROM (SELECT vni FROM freed
                  WHERE NOT EXISTS (SELECT 1 FROM vni_pool)
                     OR EXISTS (SELECT 1 FROM vni_pool p
                                 WHERE freed.vni BETWEEN p.lo AND p.hi)
                  ORDER BY vni) f
    ON CONFLICT (vni) DO NOTHING;
    UPDATE reservations
       SET state = 'released', released_at = now(), released_by = p_actor,
           forced = p_forced,
           release_requested_at = CASE WHEN p_requested THEN now()
                                       ELSE release_requested_at END
     WHERE id = p_id;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (p_id, p_job, p_actor, p_action,
                 jsonb_build_object('quarantined', NOT p_requested,
                                    'forced', p_forced));
END $$;

-- As in 0004, found through indexes.  Events: the first p_batch * 8 by
-- id, those of them older than p_days (an event recorded within the same
-- instant as an older-numbered one may wait for the next call).
CREATE OR REPLACE FUNCTION vnib_purge(p_days integer, p_batch integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := now() - make_interval(days => p_days);
    ids bigint[];
BEGIN
    SELECT array_agg(id) INTO ids
      FROM (SELECT id FROM reservations
             WHERE state = 'released' AND released_at < cutoff
               AND hwcoll_state NOT IN ('pending', 'releasing', 'reserved')
               AND NOT (hwcoll_state = 'unavailable'
                        AND hwcoll_reason LIKE 'timed out%')
             ORDER BY released_at LIMIT p_batch) old;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM reservation_ranges WHERE reservation_id = ANY (ids);
    DELETE FROM node_reports WHERE reservation_id = ANY (ids);
    DELETE FROM reservations WHERE id = ANY (ids);
    DELETE FROM events
     WHERE id IN (SELECT e.id
                    FROM (SELECT id, at FROM events
                           ORDER BY id LIMIT p_batch * 8) e
                   WHERE e.at < cutoff);
    RETURN cardinality(ids);
END $$;

-- As in 0004, with fewer statements on the way of a plain release, each
-- planned once per connection: the multicast state is read with the row (no UPDATE unless there is a
-- multicast reservation to release), and the end of the quarantine is
-- vnib_end_quarantine's statements written in place.
CREATE OR REPLACE FUNCTION vnib_release(p_job text, p_actor text,
                                        p_force boolean, p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    r record;
    nothing vnib_row;
    requested boolean;
BEGIN
    PERFORM vnib_job_lock(p_job);
    -- Two statements rather than coalesce(p_res, ...): each has one plan
    -- that fits every call, so neither is planned again per call.
    IF p_res IS NULL THEN
        SELECT id, state, hwcoll_state INTO r FROM reservations
         WHERE job_id = p_job
           AND id = (SELECT id FROM reservations WHERE job_id = p_job
                      ORDER BY state = 'active' DESC,
                               state = 'releasing' DESC, id DESC
                      LIMIT 1)
           FOR UPDATE;
    ELSE
        SELECT id, state, hwcoll_state INTO r FROM reservations
         WHERE job_id = p_job AND id = p_res
           FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        nothing.outcome := 'not_found';
        RETURN nothing;
    END IF;
    IF r.state = 'released' THEN
        RETURN vnib_row('already_released', r.id, true);
    END IF;
    -- The job ended: its multicast reservation goes to the Fabric Manager
    -- queue whatever the quarantine of its VNIs does.  The row is locked:
    -- its hwcoll_state is current.
    IF r.state = 'active' AND r.hwcoll_state IN ('reserved', 'pending') THEN
        UPDATE reservations
           SET hwcoll_state = 'releasing', hwcoll_updated_at = now()
         WHERE id = r.id AND hwcoll_state IN ('reserved', 'pending');
        IF FOUND THEN
            PERFORM vnib_fm_enqueue(r.id, p_job, 'delete_job', NULL);
        END IF;
    END IF;
    -- Nodes that never reported hold nothing: with no holder left the
    -- quarantine has nothing to wait for.
    IF p_force OR NOT EXISTS (SELECT 1 FROM node_reports
                               WHERE reservation_id = r.id
                                 AND cxi <> 'destroyed') THEN
        -- vnib_end_quarantine(r.id, p_job, p_actor, <action>,
        -- r.state = 'active', p_force), in place.
        requested := r.state = 'active';
        WITH freed AS (DELETE FROM vni_holds WHERE reservation_id = r.id
                       RETURNING vni)
        INSERT INTO vni_free (vni, seq)
             SELECT vni, nextval('vni_free_seq')
               FROM (SELECT vni FROM freed
                      WHERE NOT EXISTS (SELECT 1 FROM vni_pool)
                         OR EXISTS (SELECT 1 FROM vni_pool p
                                     WHERE freed.vni BETWEEN p.lo AND p.hi)
                      ORDER BY vni) f
        ON CONFLICT (vni) DO NOTHING;
        UPDATE reservations
           SET state = 'released', released_at = now(),
               released_by = p_actor, forced = p_force,
               release_requested_at = CASE WHEN requested THEN now()
                                           ELSE release_requested_at END
         WHERE id = r.id;
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             VALUES (r.id, p_job, p_actor,
                     CASE WHEN p_force THEN 'force'
                          WHEN requested THEN 'release'
                          ELSE 'quarantine_end' END,
                     jsonb_build_object('quarantined', NOT requested,
                                        'forced', p_force));
        RETURN vnib_row('released', r.id, true);
    END IF;
    IF r.state = 'releasing' THEN
        RETURN vnib_row('already_releasing', r.id, true);
    END IF;
    UPDATE reservations SET state = 'releasing', release_requested_at = now()
     WHERE id = r.id;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (r.id, p_job, p_actor, 'release', '{"quarantined": true}');
    RETURN vnib_row('releasing', r.id, true);
END $$;
