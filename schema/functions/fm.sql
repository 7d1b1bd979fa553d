-- SPDX-License-Identifier: GPL-2.0-or-later
-- Hardware collectives: the Fabric Manager's multicast reservations as
-- the database records them, the durable queue of FM operations (releases
-- of FM jobs and of steps' trees) that workers on any replica claim with
-- a lease, the reserves deferred to those workers, and the leader's
-- reconciliation with the FM's list of jobs (schema/0003, 0005, 0016).

-- Queue FM operation p_op for reservation p_id, when it has an FM job,
-- and wake the workers (NOTIFY vnib_fm).  One pending deletion per FM
-- job.  Returns whether anything was queued.
CREATE OR REPLACE FUNCTION vnib_fm_enqueue(p_id bigint, p_job text, p_op text,
                                           p_step text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    fm text;
BEGIN
    SELECT fm_job_id INTO fm FROM reservations WHERE id = p_id;
    IF fm IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO fm_queue (reservation_id, job_id, fm_job_id, op, step_id)
         VALUES (p_id, p_job, fm, p_op, p_step)
    ON CONFLICT (fm_job_id) WHERE op = 'delete_job' DO NOTHING;
    PERFORM pg_notify('vnib_fm', '');
    RETURN true;
END $$;

-- Claim up to p_limit due operations for p_lease_s seconds, in
-- (not_before, id) order, a range of fm_queue_due that leased operations
-- are outside of.  The ids are taken once, in a materialised CTE: a
-- subquery with LIMIT and SKIP LOCKED may run more than once and lease
-- more than p_limit.  The queue's own bookkeeping commits without waiting
-- for the WAL flush: a claim a crash loses comes due again (schema/0011).
CREATE OR REPLACE FUNCTION vnib_fm_claim(p_limit integer, p_lease_s integer)
RETURNS TABLE (q_id bigint, q_reservation bigint, q_fm_job_id text, q_op text,
               q_step text, q_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT d.id FROM fm_queue d WHERE d.not_before <= now()
         ORDER BY d.not_before, d.id LIMIT p_limit
         FOR UPDATE SKIP LOCKED)
    UPDATE fm_queue q
       SET not_before = now() + make_interval(secs => p_lease_s)
      FROM c
     WHERE q.id = c.id
    RETURNING q.id, q.reservation_id, q.fm_job_id, q.op, q.step_id, q.attempts;
END $$;

-- The FM confirmed operation p_id: forget it, and record a deleted job's
-- reservation as hwcoll released.  Kept for brokers of schema 9 and
-- older; newer ones confirm a pass at once (vnib_fm_done_many).
CREATE OR REPLACE FUNCTION vnib_fm_done(p_id bigint, p_actor text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    DELETE FROM fm_queue WHERE id = p_id RETURNING * INTO q;
    IF q.op = 'delete_job' AND q.reservation_id IS NOT NULL THEN
        PERFORM vnib_hwcoll_set(q.reservation_id, 'released', NULL, NULL, p_actor);
    END IF;
END $$;

-- The FM confirmed operations p_ids: forget them, in id order (as claims
-- take them, so that two passes confirming overlapping sets lock rows in
-- one order), and record the deleted jobs' reservations as hwcoll
-- released.  Returns how many were forgotten.
CREATE OR REPLACE FUNCTION vnib_fm_done_many(p_ids bigint[], p_actor text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    q record;
    n integer := 0;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR q IN DELETE FROM fm_queue
              WHERE id IN (SELECT id FROM fm_queue
                            WHERE id = ANY (p_ids) ORDER BY id FOR UPDATE)
             RETURNING reservation_id, op LOOP
        n := n + 1;
        IF q.op = 'delete_job' AND q.reservation_id IS NOT NULL THEN
            PERFORM vnib_hwcoll_set(q.reservation_id, 'released', NULL, NULL,
                                    p_actor);
        END IF;
    END LOOP;
    RETURN n;
END $$;

-- A worker's pass: confirm what the FM did in its last one (p_done) and
-- claim the next operations, in one transaction committed without waiting
-- for the flush.
CREATE OR REPLACE FUNCTION vnib_fm_next(p_done bigint[], p_actor text,
                                        p_limit integer, p_lease_s integer)
RETURNS TABLE (q_id bigint, q_reservation bigint, q_fm_job_id text, q_op text,
               q_step text, q_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_done) > 0 THEN
        PERFORM vnib_fm_done_many(p_done, p_actor);
    END IF;
    IF p_limit > 0 THEN
        RETURN QUERY SELECT * FROM vnib_fm_claim(p_limit, p_lease_s);
    ELSE
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
END $$;

-- Operation p_id failed: try again after p_delay_s.
CREATE OR REPLACE FUNCTION vnib_fm_retry(p_id bigint, p_error text,
                                         p_delay_s double precision)
RETURNS void LANGUAGE sql AS $$
    UPDATE fm_queue
       SET attempts = attempts + 1, last_error = p_error,
           not_before = now() + make_interval(secs => p_delay_s)
     WHERE id = p_id
$$;

-- The cause code (reservations.hwcoll_cause) of a reason in the fixed
-- phrases brokers of schema 15 and older wrote, for the five-argument
-- vnib_hwcoll_set; NULL for no failure.  Newer brokers pass the cause.
CREATE OR REPLACE FUNCTION vnib_hwcoll_cause_of(p_state text, p_reason text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_state <> 'unavailable' OR p_reason IS NULL THEN NULL
                WHEN p_reason LIKE 'timed out%' THEN 'timeout'
                WHEN p_reason = 'Fabric Manager unreachable'
                    THEN 'unreachable'
                WHEN p_reason = 'Fabric Manager out of multicast addresses'
                    THEN 'no_addresses'
                WHEN p_reason = 'Fabric Manager refused' THEN 'refused'
                WHEN p_reason = 'timeout; the Fabric Manager made no reservation'
                    THEN 'timeout_no_reservation'
                WHEN p_reason = 'timeout; the late Fabric Manager reservation was deleted'
                    THEN 'timeout_late_deleted'
                WHEN p_reason = 'the job ended before the Fabric Manager was asked'
                    THEN 'job_ended'
                ELSE 'refused' END
$$;

-- Record the Fabric Manager's answer for reservation p_id, with its
-- cause code and reason.  'reserved' (with the sealed token) only while
-- the job is active and the call was pending or had failed: otherwise
-- the outcome is 'not_active' and the caller deletes the FM job it just
-- made.  'unavailable' replaces 'pending', or refines a failure whose
-- cause is a timeout (a late follow-up); 'released' only 'releasing';
-- 'lost' only 'reserved'.  outcome: ok | not_active | unchanged.
CREATE OR REPLACE FUNCTION vnib_hwcoll_set(p_id bigint, p_state text,
                                           p_cause text, p_reason text,
                                           p_token bytea, p_actor text)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    j text;
BEGIN
    IF p_state = 'reserved' THEN
        UPDATE reservations
           SET hwcoll_state = 'reserved', hwcoll_reason = NULL,
               hwcoll_cause = NULL,
               session_token = p_token, hwcoll_updated_at = now()
         WHERE id = p_id AND state = 'active'
           AND hwcoll_state IN ('pending', 'unavailable')
        RETURNING job_id INTO j;
        IF j IS NULL THEN
            RETURN vnib_row('not_active', p_id, false);
        END IF;
    ELSE
        UPDATE reservations
           SET hwcoll_state = p_state, hwcoll_reason = p_reason,
               hwcoll_cause = p_cause,
               hwcoll_updated_at = now(),
               session_token = CASE WHEN p_state IN ('released', 'lost')
                                    THEN NULL ELSE session_token END
         WHERE id = p_id
           AND CASE p_state
                   -- a pending call's failure, or a timed-out call's
                   -- follow-up refining its reason
                   WHEN 'unavailable' THEN hwcoll_state = 'pending'
                        OR (hwcoll_state = 'unavailable'
                            AND hwcoll_cause = 'timeout')
                   WHEN 'released' THEN hwcoll_state = 'releasing'
                   WHEN 'lost' THEN hwcoll_state = 'reserved'
                   ELSE false END
        RETURNING job_id INTO j;
        IF j IS NULL THEN
            RETURN vnib_row('unchanged', p_id, false);
        END IF;
    END IF;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (p_id, j, p_actor, 'hwcoll',
                 jsonb_build_object('state', p_state, 'reason', p_reason));
    RETURN vnib_row('ok', p_id, false);
END $$;

-- The five-argument form (the release queue's 'released', and brokers of
-- schema 15): the cause from the reason's fixed phrases.
CREATE OR REPLACE FUNCTION vnib_hwcoll_set(
    p_id bigint, p_state text, p_reason text, p_token bytea, p_actor text)
RETURNS vnib_row LANGUAGE sql AS $$
    SELECT vnib_hwcoll_set(p_id, p_state,
                           vnib_hwcoll_cause_of(p_state, p_reason), p_reason,
                           p_token, p_actor)
$$;

-- The FM outcomes of concurrent reserves in one transaction (the broker
-- groups them as it groups reserves), one vnib_row per item in the order
-- given.  Items are applied in reservation-id order, so that two groups
-- never lock rows in opposite orders.  Tokens are hex (NULL for none).
CREATE OR REPLACE FUNCTION vnib_hwcoll_set_many(
    p_ids bigint[], p_states text[], p_causes text[], p_reasons text[],
    p_tokens text[], p_actors text[])
RETURNS SETOF vnib_row LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(p_ids), 0);
    res vnib_row[];
    k bigint;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    res := array_fill(NULL::vnib_row, ARRAY[n]);
    FOR k IN SELECT u.o FROM unnest(p_ids) WITH ORDINALITY AS u(id, o)
              ORDER BY u.id, u.o LOOP
        res[k] := vnib_hwcoll_set(p_ids[k], p_states[k], p_causes[k],
                                  p_reasons[k], decode(p_tokens[k], 'hex'),
                                  p_actors[k]);
    END LOOP;
    FOR k IN 1 .. n LOOP
        RETURN NEXT res[k];
    END LOOP;
END $$;

-- The same without causes, for brokers of schema 15.
CREATE OR REPLACE FUNCTION vnib_hwcoll_set_many(
    p_ids bigint[], p_states text[], p_reasons text[], p_tokens text[],
    p_actors text[])
RETURNS SETOF vnib_row LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(p_ids), 0);
    res vnib_row[];
    k bigint;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    res := array_fill(NULL::vnib_row, ARRAY[n]);
    FOR k IN SELECT u.o FROM unnest(p_ids) WITH ORDINALITY AS u(id, o)
              ORDER BY u.id, u.o LOOP
        res[k] := vnib_hwcoll_set(p_ids[k], p_states[k], p_reasons[k],
                                  decode(p_tokens[k], 'hex'), p_actors[k]);
    END LOOP;
    FOR k IN 1 .. n LOOP
        RETURN NEXT res[k];
    END LOOP;
END $$;

-- Mark pending reservation p_id deferred (schema/0005), with p_reason,
-- and wake the workers.  outcome: ok, or unchanged when it is no longer
-- pending.
CREATE OR REPLACE FUNCTION vnib_hwcoll_defer(p_id bigint, p_reason text,
                                             p_actor text)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    j text;
BEGIN
    UPDATE reservations
       SET hwcoll_reason = p_reason, hwcoll_due = now(),
           hwcoll_updated_at = now()
     WHERE id = p_id AND hwcoll_state = 'pending'
    RETURNING job_id INTO j;
    IF j IS NULL THEN
        RETURN vnib_row('unchanged', p_id, false);
    END IF;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (p_id, j, p_actor, 'hwcoll',
                 jsonb_build_object('state', 'pending', 'reason', p_reason));
    PERFORM pg_notify('vnib_fm', '');
    RETURN vnib_row('ok', p_id, false);
END $$;

-- Claim up to p_limit deferred reserves that are due, for p_lease_s
-- seconds; never waits on another claimer.  attempts: the claims before
-- this one (a later claim first asks the FM whether an earlier got
-- through).
CREATE OR REPLACE FUNCTION vnib_hwcoll_claim(p_limit integer,
                                             p_lease_s integer)
RETURNS TABLE (id bigint, fm_job_id text, active boolean, attempts integer)
LANGUAGE sql AS $$
    UPDATE reservations r
       SET hwcoll_due = now() + make_interval(secs => p_lease_s),
           hwcoll_attempts = r.hwcoll_attempts + 1
     WHERE r.id IN (SELECT d.id FROM reservations d
                     WHERE d.hwcoll_state = 'pending'
                       AND d.hwcoll_due IS NOT NULL AND d.hwcoll_due <= now()
                     ORDER BY d.hwcoll_due, d.id
                     LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING r.id, r.fm_job_id, r.state = 'active', r.hwcoll_attempts - 1;
$$;

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
CREATE OR REPLACE FUNCTION vnib_reconcile(
    p_ids text[], p_listed_at timestamptz, p_actor text)
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
