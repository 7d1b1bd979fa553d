-- 0003: the durable Fabric Manager work queue and reconciliation.
--
-- A job's end must never wait on the Fabric Manager (FM), and nothing may
-- be lost on the way: releasing a reservation records the FM operation in
-- fm_queue in the same transaction, and workers (on any replica) claim
-- queued operations with a lease, call the FM, and delete the row once the
-- FM confirmed or retry later with back-off.  A worker that dies leaves
-- its lease to expire; the operation is then claimed again (deleting an FM
-- job twice is harmless: 404 counts as done).  NOTIFY vnib_fm wakes the
-- workers as soon as work arrives.

CREATE TABLE fm_queue (
    id             bigserial   PRIMARY KEY,
    reservation_id bigint,          -- NULL: an orphan found in the FM
    job_id         text,
    fm_job_id      text        NOT NULL,
    op             text        NOT NULL
                   CHECK (op IN ('delete_job', 'release_step')),
    step_id        text,
    attempts       integer     NOT NULL DEFAULT 0,
    not_before     timestamptz NOT NULL DEFAULT now(),
    last_error     text,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fm_queue_due ON fm_queue (not_before, id);
-- One pending deletion per FM job: reconciliation may find an orphan the
-- queue already holds.
CREATE UNIQUE INDEX fm_queue_one_delete ON fm_queue (fm_job_id)
    WHERE op = 'delete_job';

-- When the hwcoll state last changed, so that reconciliation does not
-- call "lost" a reservation the FM made after it listed the FM's jobs.
ALTER TABLE reservations ADD COLUMN hwcoll_updated_at timestamptz;

-- Which replica runs the duties that must be single (reconciliation).
CREATE TABLE fm_leader (
    id      integer     PRIMARY KEY CHECK (id = 1),
    replica text        NOT NULL,
    since   timestamptz NOT NULL DEFAULT now()
);

-- Queue an FM operation for reservation p_id and wake the workers.
CREATE FUNCTION vnib_fm_enqueue(p_id bigint, p_job text, p_op text, p_step text)
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

-- Releases recorded before this migration: queue them.
INSERT INTO fm_queue (reservation_id, job_id, fm_job_id, op)
     SELECT id, job_id, fm_job_id, 'delete_job' FROM reservations
      WHERE hwcoll_state = 'releasing' AND fm_job_id IS NOT NULL
ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION vnib_release(p_job text, p_actor text, p_force boolean)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    r record;
    nothing vnib_row;
BEGIN
    SELECT id, state INTO r FROM reservations
     WHERE job_id = p_job ORDER BY id DESC LIMIT 1 FOR UPDATE;
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

CREATE OR REPLACE FUNCTION vnib_hwcoll_set(p_id bigint, p_state text, p_reason text,
                                p_token bytea, p_actor text)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    j text;
BEGIN
    IF p_state = 'reserved' THEN
        UPDATE reservations
           SET hwcoll_state = 'reserved', hwcoll_reason = NULL,
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
               hwcoll_updated_at = now(),
               session_token = CASE WHEN p_state IN ('released', 'lost')
                                    THEN NULL ELSE session_token END
         WHERE id = p_id
           AND CASE p_state
                   -- a pending call's failure, or a timed-out call's
                   -- follow-up refining its reason
                   WHEN 'unavailable' THEN hwcoll_state = 'pending'
                        OR (hwcoll_state = 'unavailable'
                            AND hwcoll_reason LIKE 'timed out%')
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

-- Claim up to p_limit due operations for p_lease_s seconds.
CREATE FUNCTION vnib_fm_claim(p_limit integer, p_lease_s integer)
RETURNS TABLE (q_id bigint, q_reservation bigint, q_fm_job_id text, q_op text,
               q_step text, q_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE fm_queue q
       SET not_before = now() + make_interval(secs => p_lease_s)
     WHERE q.id IN (SELECT id FROM fm_queue WHERE not_before <= now()
                     ORDER BY id LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING q.id, q.reservation_id, q.fm_job_id, q.op, q.step_id, q.attempts;
END $$;

-- The FM confirmed operation p_id: forget it, and record a deleted job's
-- reservation as released.
CREATE FUNCTION vnib_fm_done(p_id bigint, p_actor text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    DELETE FROM fm_queue WHERE id = p_id RETURNING * INTO q;
    IF q.op = 'delete_job' AND q.reservation_id IS NOT NULL THEN
        PERFORM vnib_hwcoll_set(q.reservation_id, 'released', NULL, NULL, p_actor);
    END IF;
END $$;

-- Operation p_id failed: try again after p_delay_s.
CREATE FUNCTION vnib_fm_retry(p_id bigint, p_error text, p_delay_s double precision)
RETURNS void LANGUAGE sql AS $$
    UPDATE fm_queue
       SET attempts = attempts + 1, last_error = p_error,
           not_before = now() + make_interval(secs => p_delay_s)
     WHERE id = p_id
$$;

-- Release one job step's multicast trees: outcome queued | no_hwcoll |
-- not_found.
CREATE FUNCTION vnib_step_release(p_job text, p_step text, p_actor text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    SELECT id, hwcoll_state INTO r FROM reservations
     WHERE job_id = p_job ORDER BY id DESC LIMIT 1;
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

-- Reconcile with the FM's list of our job ids (p_ids, fetched at
-- p_listed_at):
--   - an FM job whose reservation is not active (released, or unknown) is
--     queued for deletion: kind 'release';
--   - an active reservation with hwcoll reserved before the list was taken
--     that the FM no longer has is marked lost: kind 'lost'.
-- Ids of other prefixes never reach this function.
CREATE FUNCTION vnib_reconcile(p_ids text[], p_listed_at timestamptz,
                               p_actor text)
RETURNS TABLE (kind text, job_id text, fm_job_id text)
LANGUAGE plpgsql AS $$
DECLARE
    x text;
    r record;
BEGIN
    FOREACH x IN ARRAY p_ids LOOP
        IF NOT EXISTS (SELECT 1 FROM reservations
                        WHERE reservations.fm_job_id = x AND state = 'active') THEN
            INSERT INTO fm_queue (reservation_id, job_id, fm_job_id, op)
                 SELECT (SELECT id FROM reservations
                          WHERE reservations.fm_job_id = x
                          ORDER BY id DESC LIMIT 1),
                        NULL, x, 'delete_job'
            ON CONFLICT DO NOTHING;
            IF FOUND THEN
                kind := 'release';
                job_id := NULL;
                fm_job_id := x;
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
    FOR r IN SELECT res.id, res.job_id, res.fm_job_id FROM reservations res
              WHERE res.state = 'active' AND res.hwcoll_state = 'reserved'
                AND res.hwcoll_updated_at < p_listed_at
                AND NOT (res.fm_job_id = ANY (p_ids))
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
    IF (SELECT count(*) FROM fm_queue) > 0 THEN
        PERFORM pg_notify('vnib_fm', '');
    END IF;
END $$;
