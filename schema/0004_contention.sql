-- 0004: allocation that never waits, one live reservation per job, FM job
-- ids that cannot collide, reconciliation by ownership, and event times.
--
-- Allocation.  Until 0003, vnib_alloc probed a round-robin cursor and
-- claimed a VNI by inserting it into vni_holds.  Two reserves that had
-- each inserted one uncommitted hold could then wait on each other's next
-- insert (the primary key makes the second inserter wait for the first to
-- commit), which PostgreSQL breaks as a deadlock.  The cursor was a
-- sequence, so a refused reserve moved it too.
--
-- Now the free VNIs are a queue, vni_free, ordered by seq: the order in
-- which they became free.  A reserve deletes the first unlocked rows it
-- finds with FOR UPDATE SKIP LOCKED and holds them: it never waits on
-- another reserve (a row some other transaction is taking is skipped,
-- not waited for), so reserves cannot deadlock, on one replica or many.
-- A release appends the VNIs it frees at the tail, so the VNI that has
-- been free longest is handed out first: "reused as late as possible" in
-- its strongest form, which a cursor going round the pool only
-- approximated (a VNI freed just behind the cursor came back at once).
-- vni_holds keeps its primary key: uniqueness is still the database's.
-- A refused reserve rolls back: the queue, the holds and the events are
-- as they were, and the cursor that /v1/pool shows (the newest
-- reservation's last VNI) is derived from committed rows, not kept.
--
-- The queue holds the pool that vni_pool records; each broker writes its
-- vni.pool there at start (vnib_pool_sync), which also repairs the queue
-- from vni_holds.  Allocation still checks the caller's own pool, so a
-- replica started with a different vni.pool never hands out a VNI outside
-- the one it was given.
--
-- One live reservation per job.  Reserves and releases of one job take
-- turns on a transaction-scoped advisory lock keyed by the job id, so a
-- release can never miss a reserve still in flight, and a reserve takes
-- its id (its ticket) before it can wait for anything: a reserve that
-- finds a newer reservation of its job once it gets the lock is a stale
-- duplicate (its client gave up and the retry was answered, maybe already
-- released) and creates nothing.  Requests for different jobs never wait
-- on each other's locks (but for a hash collision, which costs one
-- request's duration).
--
-- Which reservation a job id means: the active one if there is one, else
-- the newest (for release: the newest still quarantined, else the
-- newest).  Ids alone do not say it: a requeued job's old reservation may
-- still be quarantined when the new one exists.

-- ---- the free queue ---------------------------------------------------------

CREATE TABLE vni_pool (
    lo integer NOT NULL CHECK (lo BETWEEN 0 AND 65535),
    hi integer NOT NULL CHECK (hi BETWEEN lo AND 65535)
);
-- Empty until a broker records its pool: until then every VNI may be
-- queued, and allocation checks the caller's pool anyway.

CREATE SEQUENCE vni_free_seq;
CREATE TABLE vni_free (
    vni integer PRIMARY KEY CHECK (vni BETWEEN 0 AND 65535),
    seq bigint  NOT NULL
);
CREATE INDEX vni_free_order ON vni_free (seq);
-- A queue: rows leave at the head and join at the tail, so dead index
-- entries gather where every reserve starts.  Vacuum it often.
ALTER TABLE vni_free SET (autovacuum_vacuum_scale_factor = 0,
                          autovacuum_vacuum_threshold = 2000,
                          autovacuum_analyze_scale_factor = 0,
                          autovacuum_analyze_threshold = 2000);

-- Fill it with every VNI not held, continuing where the old cursor was:
-- the VNIs after it first, then from the start, each range ascending.
INSERT INTO vni_free (vni, seq)
     SELECT v, nextval('vni_free_seq')
       FROM (SELECT v FROM generate_series(0, 65535) v
              WHERE NOT EXISTS (SELECT 1 FROM vni_holds h WHERE h.vni = v)
              ORDER BY v <= (SELECT CASE WHEN is_called THEN last_value % 65536
                                         ELSE -1 END
                               FROM vni_cursor_seq), v) ordered;

DROP FUNCTION vnib_first_free(integer, integer[], integer[]);
DROP FUNCTION vnib_free_count(integer[], integer[]);
DROP SEQUENCE vni_cursor_seq;

-- Record the pool in force (p_lo[i]-p_hi[i]) and make the queue match it:
-- VNIs outside it leave, VNIs of it neither held nor queued join at the
-- tail.  Returns what changed, for the broker's log.
CREATE FUNCTION vnib_pool_sync(p_lo integer[], p_hi integer[],
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
-- skipping rows other reserves are taking; only VNIs of the caller's pool
-- (ranges p_lo[i]-p_hi[i]).  Raises SQLSTATE VN001 with DETAIL
-- "<wanted> <free> <being taken>" when too few are free: the statement
-- then rolls back, leaving everything as it was.
CREATE OR REPLACE FUNCTION vnib_alloc(p_res bigint, p_want integer,
                                      p_lo integer[], p_hi integer[])
RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    got integer[];
    busy bigint;
BEGIN
    WITH taken AS (
        DELETE FROM vni_free f
         WHERE f.vni IN (SELECT q.vni FROM vni_free q
                          WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                                         WHERE q.vni BETWEEN p.lo AND p.hi)
                          ORDER BY q.seq LIMIT p_want
                            FOR UPDATE SKIP LOCKED)
        RETURNING f.vni, f.seq)
    SELECT array_agg(vni ORDER BY seq) INTO got FROM taken;
    IF coalesce(cardinality(got), 0) < p_want THEN
        -- What is still queued was skipped: other reserves are taking it.
        SELECT count(*) INTO busy FROM vni_free q
         WHERE EXISTS (SELECT 1 FROM unnest(p_lo, p_hi) p(lo, hi)
                        WHERE q.vni BETWEEN p.lo AND p.hi);
        RAISE EXCEPTION 'VNI pool exhausted'
            USING ERRCODE = 'VN001',
                  DETAIL = p_want || ' '
                           || busy + coalesce(cardinality(got), 0) || ' '
                           || busy;
    END IF;
    INSERT INTO vni_holds (vni, reservation_id) SELECT unnest(got), p_res;
    RETURN got;
END $$;

-- Free reservation p_id's VNIs: they leave vni_holds and join the tail of
-- the queue (those of the pool in force), lowest first.
CREATE FUNCTION vnib_unhold(p_id bigint)
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
END $$;

CREATE OR REPLACE FUNCTION vnib_end_quarantine(p_id bigint, p_job text,
                                               p_actor text, p_action text,
                                               p_requested boolean,
                                               p_forced boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM vnib_unhold(p_id);
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

-- ---- one job, one live reservation -------------------------------------------

-- Same-job reserves and releases take turns on this ("vnib" + the job).
CREATE FUNCTION vnib_job_lock(p_job text)
RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1986947426, hashtext(p_job))
$$;

-- The reservation a job id means: its active one, else its newest.
CREATE FUNCTION vnib_job_current(p_job text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT id FROM reservations WHERE job_id = p_job
     ORDER BY state = 'active' DESC, id DESC LIMIT 1
$$;

-- FM job ids are unique per reservation: p_fm_job_id is "<prefix>-<job>"
-- and the reservation's id is appended as "-r<id>", so that a requeued
-- job's new multicast reservation is never the old one, which the release
-- queue may still be deleting.
CREATE INDEX reservations_fm_job ON reservations (fm_job_id)
    WHERE fm_job_id IS NOT NULL;

-- Reserve for a job.  outcome: created | exists (the job's active
-- reservation, same parameters) | conflict (different ones) | superseded
-- (a newer reservation of the job was made while this request waited: a
-- retry was answered first; the newest is returned and nothing is made).
-- Pool exhaustion raises VN001.
CREATE OR REPLACE FUNCTION vnib_reserve(
    p_job text, p_uid bigint, p_user text, p_nodes text, p_node_count integer,
    p_vni_count integer, p_tcs smallint, p_empty_reason text, p_actor text,
    p_pool_lo integer[], p_pool_hi integer[],
    p_rprefix text[], p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[],
    p_rhi bigint[], p_hwcoll_mode text, p_hwcoll_state text,
    p_hwcoll_reason text, p_fm_job_id text, p_addrs integer)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    -- The ticket comes before any wait: a later request gets a higher one.
    new_id bigint := nextval('reservations_id_seq');
    r record;
    v integer[] := '{}';
    got bigint;
BEGIN
    PERFORM vnib_job_lock(p_job);
    SELECT id, uid, username, nodes, vni_count, hwcoll_mode INTO r
      FROM reservations WHERE job_id = p_job AND state = 'active';
    IF FOUND THEN
        RETURN vnib_row(CASE WHEN r.uid = p_uid AND r.username = p_user
                                  AND r.nodes = p_nodes
                                  AND r.vni_count = p_vni_count
                                  AND r.hwcoll_mode = p_hwcoll_mode
                             THEN 'exists' ELSE 'conflict' END,
                        r.id, true);
    END IF;
    SELECT id INTO got FROM reservations
     WHERE job_id = p_job AND id > new_id ORDER BY id DESC LIMIT 1;
    IF FOUND THEN
        RETURN vnib_row('superseded', got, true);
    END IF;
    IF p_vni_count > 0 THEN
        v := vnib_alloc(new_id, p_vni_count, p_pool_lo, p_pool_hi);
    END IF;
    INSERT INTO reservations (id, job_id, uid, username, nodes, node_count,
                              vni_count, vnis, tcs_mask, empty_reason,
                              created_by, hwcoll_mode, hwcoll_state,
                              hwcoll_reason, fm_job_id, addrs_per_job,
                              hwcoll_updated_at)
         VALUES (new_id, p_job, p_uid, p_user, p_nodes, p_node_count,
                 p_vni_count, v, p_tcs, p_empty_reason, p_actor,
                 p_hwcoll_mode, p_hwcoll_state, p_hwcoll_reason,
                 p_fm_job_id || '-r' || new_id, p_addrs, now())
    ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
    RETURNING id INTO got;
    IF got IS NULL THEN
        -- Only a writer that bypasses the job lock gets here; the whole
        -- statement rolls back and the caller may retry.
        RAISE EXCEPTION 'job % gained an active reservation while reserving',
                        p_job USING ERRCODE = '40001';
    END IF;
    INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
         SELECT got, * FROM unnest(p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi);
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (got, p_job, p_actor, 'reserve',
                 jsonb_build_object('vnis', v, 'nodes', p_nodes, 'uid', p_uid));
    RETURN vnib_row('created', got, true);
END $$;

-- Release a job: reservation p_res of it when given (a reconciler that
-- must not touch a requeued job's new reservation, an admin ending one
-- old quarantine), else its active reservation, else the newest still
-- quarantined, else the newest.  outcome: not_found | releasing
-- (quarantined until its nodes confirm) | released (now) |
-- already_releasing | already_released.
DROP FUNCTION vnib_release(text, text, boolean);
CREATE FUNCTION vnib_release(p_job text, p_actor text, p_force boolean,
                             p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    r record;
    nothing vnib_row;
BEGIN
    PERFORM vnib_job_lock(p_job);
    SELECT id, state INTO r FROM reservations
     WHERE job_id = p_job
       AND id = coalesce(p_res,
                         (SELECT id FROM reservations WHERE job_id = p_job
                           ORDER BY state = 'active' DESC,
                                    state = 'releasing' DESC, id DESC
                           LIMIT 1))
       FOR UPDATE;
    IF NOT FOUND THEN
        nothing.outcome := 'not_found';
        RETURN nothing;
    END IF;
    IF r.state = 'released' THEN
        RETURN vnib_row('already_released', r.id, true);
    END IF;
    -- The job ended: its multicast reservation goes to the Fabric Manager
    -- queue whatever the quarantine of its VNIs does.
    IF r.state = 'active' THEN
        UPDATE reservations
           SET hwcoll_state = 'releasing', hwcoll_updated_at = now()
         WHERE id = r.id AND hwcoll_state IN ('reserved', 'pending');
        IF FOUND THEN
            PERFORM vnib_fm_enqueue(r.id, p_job, 'delete_job', NULL);
        END IF;
    END IF;
    -- Nodes that never reported hold nothing: with no holder left the
    -- quarantine has nothing to wait for.
    IF p_force OR NOT vnib_nodes_holding(r.id) THEN
        PERFORM vnib_end_quarantine(r.id, p_job, p_actor,
                                    CASE WHEN p_force THEN 'force'
                                         WHEN r.state = 'active' THEN 'release'
                                         ELSE 'quarantine_end' END,
                                    r.state = 'active', p_force);
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

-- Release one job step's multicast trees, of the job's current
-- reservation: outcome queued | no_hwcoll | not_found.
CREATE OR REPLACE FUNCTION vnib_step_release(p_job text, p_step text, p_actor text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    SELECT id, hwcoll_state INTO r FROM reservations
     WHERE id = vnib_job_current(p_job);
    IF NOT FOUND THEN
        RETURN 'not_found';
    END IF;
    IF r.hwcoll_state <> 'reserved' THEN
        RETURN 'no_hwcoll';
    END IF;
    PERFORM vnib_fm_enqueue(r.id, p_job, 'release_step', p_step);
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (r.id, p_job, p_actor, 'step_release',
                 jsonb_build_object('step', p_step));
    RETURN 'queued';
END $$;

-- ---- reconciliation by ownership --------------------------------------------

-- Reconcile with the FM's list of job ids that carry our prefix (p_ids,
-- fetched at p_listed_at).  A prefix is not ownership: another cluster's
-- prefix may extend ours ("tux" and "tux-a"), so only FM jobs this
-- database created (a reservation records the id) are ours to act on:
--   - ours, and its reservation no longer active: queue for deletion
--     (kind 'release');
--   - an active reservation with hwcoll reserved before the list was taken
--     that the FM no longer has: mark lost (kind 'lost');
--   - not ours: left alone, counted (one row of kind 'foreign', the
--     count in fm_job_id).
-- Set-based, so that tens of thousands of FM jobs take one pass each.
CREATE OR REPLACE FUNCTION vnib_reconcile(p_ids text[], p_listed_at timestamptz,
                                          p_actor text)
RETURNS TABLE (kind text, job_id text, fm_job_id text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n_foreign bigint;
BEGIN
    IF to_regclass('pg_temp.vnib_listed') IS NULL THEN
        CREATE TEMPORARY TABLE vnib_listed (x text PRIMARY KEY)
            ON COMMIT DELETE ROWS;
    END IF;
    INSERT INTO vnib_listed SELECT DISTINCT unnest(p_ids);
    ANALYZE vnib_listed;
    SELECT count(*) INTO n_foreign FROM vnib_listed l
     WHERE NOT EXISTS (SELECT 1 FROM reservations res
                        WHERE res.fm_job_id = l.x);
    FOR r IN
        WITH ours AS (
            SELECT l.x, o.id, o.state
              FROM vnib_listed l
              CROSS JOIN LATERAL (SELECT res.id, res.state FROM reservations res
                                   WHERE res.fm_job_id = l.x
                                   ORDER BY res.id DESC LIMIT 1) o)
        INSERT INTO fm_queue (reservation_id, job_id, fm_job_id, op)
             SELECT ours.id, NULL, ours.x, 'delete_job' FROM ours
              WHERE ours.state <> 'active'
        ON CONFLICT DO NOTHING
        RETURNING fm_queue.fm_job_id AS x
    LOOP
        kind := 'release';
        job_id := NULL;
        fm_job_id := r.x;
        RETURN NEXT;
    END LOOP;
    FOR r IN SELECT res.id, res.job_id, res.fm_job_id FROM reservations res
              WHERE res.state = 'active' AND res.hwcoll_state = 'reserved'
                AND res.hwcoll_updated_at < p_listed_at
                AND NOT EXISTS (SELECT 1 FROM vnib_listed l
                                 WHERE l.x = res.fm_job_id)
              FOR UPDATE SKIP LOCKED LOOP
        UPDATE reservations
           SET hwcoll_state = 'lost', session_token = NULL,
               hwcoll_reason = 'the Fabric Manager no longer has this reservation',
               hwcoll_updated_at = now()
         WHERE id = r.id;
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             VALUES (r.id, r.job_id, p_actor, 'hwcoll',
                     jsonb_build_object('state', 'lost', 'fm_job_id', r.fm_job_id));
        kind := 'lost';
        job_id := r.job_id;
        fm_job_id := r.fm_job_id;
        RETURN NEXT;
    END LOOP;
    IF n_foreign > 0 THEN
        kind := 'foreign';
        job_id := NULL;
        fm_job_id := n_foreign::text;
        RETURN NEXT;
    END IF;
    TRUNCATE vnib_listed;
    IF EXISTS (SELECT 1 FROM fm_queue) THEN
        PERFORM pg_notify('vnib_fm', '');
    END IF;
END $$;

-- Released reservations are history, but one whose FM job may still
-- exist is also the proof that the FM job is ours: keep it until the FM
-- confirmed (hwcoll released) or the FM never had it.
CREATE OR REPLACE FUNCTION vnib_purge(p_days integer, p_batch integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    SELECT array_agg(id) INTO ids
      FROM (SELECT id FROM reservations
             WHERE state = 'released'
               AND released_at < now() - make_interval(days => p_days)
               AND hwcoll_state NOT IN ('pending', 'releasing', 'reserved')
               AND NOT (hwcoll_state = 'unavailable'
                        AND hwcoll_reason LIKE 'timed out%')
             ORDER BY id LIMIT p_batch) old;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM reservation_ranges WHERE reservation_id = ANY (ids);
    DELETE FROM node_reports WHERE reservation_id = ANY (ids);
    DELETE FROM reservations WHERE id = ANY (ids);
    DELETE FROM events
     WHERE id IN (SELECT id FROM events
                   WHERE at < now() - make_interval(days => p_days)
                   ORDER BY id LIMIT p_batch * 8);
    RETURN cardinality(ids);
END $$;

-- ---- events -------------------------------------------------------------------

-- An event's time is when it was recorded, not when its transaction began
-- (a transaction that waited would otherwise date its events before ones
-- numbered earlier).  Events are ordered by id; /v1/events also shows no
-- time earlier than an earlier-numbered event's (see store.c).
ALTER TABLE events ALTER COLUMN at SET DEFAULT clock_timestamp();
