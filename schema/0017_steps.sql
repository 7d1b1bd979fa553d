-- 0017: per-step VNIs.
--
-- A job step may have VNIs of its own (the Slurm switch plugin asks for
-- them): a node's CXI service for the step holds the step's VNIs first and
-- the job's after them, so the job's VNIs stay quarantined until every
-- step's services are gone as well as the job's own.
--
-- A step reservation is a row of reservations whose job_id is the
-- internal key "<job>#<step>" ('#' is never in a client's job id, so no
-- key of a step is a job's), with parent_id the job's reservation and
-- step_id the step.  So the per-key advisory lock, the unique index of
-- active reservations, vni_holds (a VNI is held at most once, across jobs
-- and steps), the node ranges, node reports and quarantine all apply to
-- steps as they are.  A step's row has no multicast reservation of its
-- own (hwcoll 'off', 'disabled'): the job's serves its steps.
--
-- Locks, always in this order, so that nothing waits in a cycle:
--   - the job's key (vnib_job_lock), then the step's: a step reserve or
--     release takes the job's key shared (steps of one job do not wait on
--     each other) and the step's exclusively; a job's reserve or release
--     takes the job's key exclusively, so no step of a job is made or
--     freed while the job is being released;
--   - the job's reservation row, then its steps' rows: a job release
--     locks its row and then releases its steps; a step's report or
--     release locks the job's row first (vnib_step_report,
--     vnib_step_free); the sweeper never waits (SKIP LOCKED).
--
-- Quarantine.  Releasing a job releases its active steps in the same
-- transaction (force forces them).  A job's quarantine also waits for its
-- steps: vnib_nodes_holding counts a step not yet released as a holder,
-- and when a step's quarantine ends and its job is releasing with nothing
-- else held, the job's ends too (vnib_end_quarantines).

ALTER TABLE reservations ADD COLUMN parent_id bigint, ADD COLUMN step_id text;

-- A job's steps, by its reservation (all of them: the events of a job
-- include its steps'); and its live ones, which hold its quarantine.
CREATE INDEX reservations_parent ON reservations (parent_id, id)
    WHERE parent_id IS NOT NULL;
CREATE INDEX reservations_live_steps ON reservations (parent_id)
    WHERE parent_id IS NOT NULL AND state <> 'released';

-- ---- a step reservation as the API shows it -----------------------------------

-- vnib_row's columns in vnib_row's order (store.c reads both alike), the
-- outcome's detail, then the job's reservation as its steps show it.
CREATE TYPE vnib_step_row AS (
    outcome text, id bigint, job_id text, state text, uid bigint,
    username text, nodes text, node_count integer, vni_count smallint,
    vnis text, empty_reason text, tcs_mask smallint, created_at text,
    created_by text, release_requested_at text, released_at text,
    released_by text, forced boolean, counts text, hwcoll_mode text,
    hwcoll_state text, hwcoll_reason text, fm_job_id text,
    addrs_per_job integer, session_token text, detail text,
    parent_id bigint, parent_vnis text, parent_hwcoll_mode text,
    parent_hwcoll_state text, parent_hwcoll_reason text,
    parent_fm_job_id text, parent_addrs_per_job integer,
    parent_session_token text);

CREATE FUNCTION vnib_step_row(p_outcome text, p_id bigint, p_detail text)
RETURNS vnib_step_row LANGUAGE plpgsql STABLE AS $$
DECLARE
    o vnib_step_row;
BEGIN
    SELECT v.*, p_detail, p.id, array_to_string(p.vnis, ','), p.hwcoll_mode,
           p.hwcoll_state, p.hwcoll_reason, p.fm_job_id, p.addrs_per_job,
           encode(p.session_token, 'hex')
      INTO o
      FROM vnib_row(p_outcome, p_id, true) v
      LEFT JOIN reservations s ON s.id = v.id
      LEFT JOIN reservations p ON p.id = s.parent_id;
    -- vnib_row of no reservation has no outcome either.
    o.outcome := p_outcome;
    o.detail := p_detail;
    RETURN o;
END $$;

-- ---- holders -------------------------------------------------------------------

-- A reservation is held while a node may still have services of it, and
-- a job's also while one of its steps is not released.
CREATE OR REPLACE FUNCTION vnib_nodes_holding(p_id bigint)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM node_reports
                    WHERE reservation_id = p_id AND cxi <> 'destroyed')
        OR EXISTS (SELECT 1 FROM reservations
                    WHERE parent_id = p_id AND state <> 'released');
END $$;

-- vnib_end_quarantines of 0012, and then the jobs whose last held step
-- this ended: a job releasing with no node holding and no step left ends
-- its quarantine too.  SKIP LOCKED: the sweeper must not wait on a job's
-- row while holding its steps'; a report or release of a step holds the
-- job's row already (vnib_step_report, vnib_step_free), so it always gets
-- it.  A job skipped here is ended by its holder or by the next sweep.
ALTER FUNCTION vnib_end_quarantines(bigint[], text[], text, text[],
                                    boolean[], boolean, boolean[])
    RENAME TO vnib_end_quarantines_own;
CREATE FUNCTION vnib_end_quarantines(p_id bigint[], p_job text[],
                                     p_actor text, p_action text[],
                                     p_requested boolean[], p_forced boolean,
                                     p_hw_release boolean[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    pids bigint[];
    pjobs text[];
BEGIN
    PERFORM vnib_end_quarantines_own(p_id, p_job, p_actor, p_action,
                                     p_requested, p_forced, p_hw_release);
    SELECT array_agg(q.id ORDER BY q.id), array_agg(q.job_id ORDER BY q.id)
      INTO pids, pjobs
      FROM (SELECT j.id, j.job_id FROM reservations j
             WHERE j.id IN (SELECT s.parent_id FROM reservations s
                             WHERE s.id = ANY (p_id)
                               AND s.parent_id IS NOT NULL)
               AND j.state = 'releasing'
               AND NOT j.id = ANY (p_id)
               AND NOT vnib_nodes_holding(j.id)
             ORDER BY j.id
               FOR UPDATE OF j SKIP LOCKED) q;
    IF pids IS NOT NULL THEN
        PERFORM vnib_end_quarantines(pids, pjobs, p_actor,
                                     array_fill('quarantine_end'::text,
                                                ARRAY[cardinality(pids)]),
                                     array_fill(false, ARRAY[cardinality(pids)]),
                                     false,
                                     array_fill(false, ARRAY[cardinality(pids)]));
    END IF;
END $$;

-- Release the live steps of job reservations p_parents (whose rows the
-- caller has locked): each quarantined until its nodes confirm, or
-- released now when no node holds anything or p_force.  Active steps
-- only, unless p_force, which ends quarantined ones too.
CREATE FUNCTION vnib_steps_release(p_parents bigint[], p_actor text,
                                   p_force boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s record;
    ends bigint[] := '{}';
    keys text[] := '{}';
    acts text[] := '{}';
    reqs boolean[] := '{}';
    quar bigint[] := '{}';
BEGIN
    IF coalesce(cardinality(p_parents), 0) = 0 THEN
        RETURN;
    END IF;
    FOR s IN SELECT r.id, r.job_id, r.state,
                    EXISTS (SELECT 1 FROM node_reports n
                             WHERE n.reservation_id = r.id
                               AND n.cxi <> 'destroyed') AS holding
               FROM reservations r
              WHERE r.parent_id = ANY (p_parents) AND r.state <> 'released'
                AND (p_force OR r.state = 'active')
              ORDER BY r.id
                FOR UPDATE OF r LOOP
        IF p_force OR NOT s.holding THEN
            ends := ends || s.id;
            keys := keys || s.job_id;
            acts := acts || CASE WHEN p_force THEN 'force'
                                 WHEN s.state = 'active' THEN 'release'
                                 ELSE 'quarantine_end' END;
            reqs := reqs || (s.state = 'active');
        ELSE
            quar := quar || s.id;
        END IF;
    END LOOP;
    IF cardinality(ends) > 0 THEN
        PERFORM vnib_end_quarantines(ends, keys, p_actor, acts, reqs, p_force,
                                     array_fill(false, ARRAY[cardinality(ends)]));
    END IF;
    IF cardinality(quar) > 0 THEN
        WITH up AS (
            UPDATE reservations SET state = 'releasing',
                                    release_requested_at = now()
             WHERE id = ANY (quar)
            RETURNING id, job_id)
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             SELECT up.id, up.job_id, p_actor, 'release', '{"quarantined": true}'
               FROM up ORDER BY up.id;
    END IF;
END $$;

-- As in 0012, releasing each job's steps with it, and holding a job's
-- quarantine while one of its steps is held.
CREATE OR REPLACE FUNCTION vnib_release_batch(p_job text[], p_res bigint[],
                                   p_actor text, p_force boolean,
                                   p_wait boolean)
RETURNS SETOF vnib_batch_row LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
DECLARE
    n integer := cardinality(p_job);
    rid bigint[];
    st text[];
    hw text[];
    holding boolean[];
    outcome text[] := array_fill('not_found'::text, ARRAY[n]);
    end_k integer[] := '{}';
    quar bigint[] := '{}';
    quar_hw bigint[] := '{}';
    got boolean[] := vnib_jobs_lock(p_job, p_wait);
    hw_rel boolean[] := array_fill(false, ARRAY[n]);
BEGIN
    -- Which reservation each job means: p_res, else its active one, else
    -- the newest still quarantined, else the newest; locked.
    SELECT array_agg(r.id ORDER BY x.k), array_agg(r.state ORDER BY x.k),
           array_agg(r.hwcoll_state ORDER BY x.k)
      INTO rid, st, hw
      FROM unnest(p_job, p_res, got) WITH ORDINALITY x(job, res, got, k)
      LEFT JOIN LATERAL (
          SELECT c.id, c.state, c.hwcoll_state FROM reservations c
           WHERE x.got AND c.job_id = x.job
             AND c.id = coalesce(x.res,
                                 (SELECT id FROM reservations
                                   WHERE job_id = x.job
                                   ORDER BY state = 'active' DESC,
                                            state = 'releasing' DESC, id DESC
                                   LIMIT 1))
             FOR UPDATE) r ON true;
    -- The steps go with their job, before the job's own holders are
    -- counted; forced ones after their job is (so that it is the job's
    -- force, not its last step's end, that ends the job's quarantine).
    IF NOT p_force THEN
        PERFORM vnib_steps_release(
            ARRAY(SELECT rid[k] FROM generate_subscripts(p_job, 1) k
                   WHERE got[k] AND st[k] = 'active'),
            p_actor, false);
    END IF;
    SELECT array_agg(EXISTS (SELECT 1 FROM node_reports nr
                              WHERE nr.reservation_id = x.id
                                AND nr.cxi <> 'destroyed')
                     OR EXISTS (SELECT 1 FROM reservations s
                                 WHERE s.parent_id = x.id
                                   AND s.state <> 'released') ORDER BY x.k)
      INTO holding
      FROM unnest(rid) WITH ORDINALITY x(id, k);
    FOR k IN 1 .. n LOOP
        IF NOT got[k] THEN
            outcome[k] := 'busy';
            CONTINUE;
        END IF;
        CONTINUE WHEN rid[k] IS NULL;
        IF st[k] = 'released' THEN
            outcome[k] := 'already_released';
            CONTINUE;
        END IF;
        -- The job ended: its multicast reservation goes to the Fabric
        -- Manager queue whatever the quarantine of its VNIs does; the
        -- reservation's hwcoll state changes in the UPDATE below that
        -- ends or starts its quarantine (one new row version, not two).
        hw_rel[k] := st[k] = 'active' AND hw[k] IN ('reserved', 'pending');
        IF hw_rel[k] THEN
            PERFORM vnib_fm_enqueue(rid[k], p_job[k], 'delete_job', NULL);
        END IF;
        -- Nodes that never reported hold nothing: with no holder left the
        -- quarantine has nothing to wait for.
        IF p_force OR NOT holding[k] THEN
            outcome[k] := 'released';
            end_k := end_k || k;
        ELSIF st[k] = 'releasing' THEN
            outcome[k] := 'already_releasing';
        ELSE
            outcome[k] := 'releasing';
            quar := quar || rid[k];
            IF hw_rel[k] THEN
                quar_hw := quar_hw || rid[k];
            END IF;
        END IF;
    END LOOP;
    IF cardinality(end_k) > 0 THEN
        PERFORM vnib_end_quarantines(
            ARRAY(SELECT rid[k] FROM unnest(end_k) k),
            ARRAY(SELECT p_job[k] FROM unnest(end_k) k),
            p_actor,
            ARRAY(SELECT CASE WHEN p_force THEN 'force'
                              WHEN st[k] = 'active' THEN 'release'
                              ELSE 'quarantine_end' END FROM unnest(end_k) k),
            ARRAY(SELECT st[k] = 'active' FROM unnest(end_k) k),
            p_force,
            ARRAY(SELECT hw_rel[k] FROM unnest(end_k) k));
    END IF;
    IF cardinality(quar) > 0 THEN
        WITH up AS (
            UPDATE reservations SET state = 'releasing',
                                    release_requested_at = now(),
                                    hwcoll_state = CASE WHEN id = ANY (quar_hw)
                                        THEN 'releasing' ELSE hwcoll_state END,
                                    hwcoll_updated_at = CASE WHEN id = ANY (quar_hw)
                                        THEN now() ELSE hwcoll_updated_at END
             WHERE id = ANY (quar)
            RETURNING id, job_id)
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             SELECT up.id, up.job_id, p_actor, 'release', '{"quarantined": true}'
               FROM up ORDER BY up.id;
    END IF;
    IF p_force THEN
        PERFORM vnib_steps_release(
            ARRAY(SELECT rid[k] FROM generate_subscripts(p_job, 1) k
                   WHERE got[k] AND st[k] IN ('active', 'releasing')),
            p_actor, true);
    END IF;
    RETURN QUERY SELECT * FROM vnib_batch_rows(outcome, rid,
                                               array_fill(NULL::text, ARRAY[n]));
END $$;

-- As in 0015, a job's quarantine waiting for its steps too.  A step this
-- pass ends may end its job's (vnib_end_quarantines).
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
               AND NOT EXISTS (SELECT 1 FROM reservations s
                                WHERE s.parent_id = r.id
                                  AND s.state <> 'released')
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

-- ---- step transitions --------------------------------------------------------

-- Reserve for step p_step of job p_job, whose active reservation the
-- broker checked is p_parent (the step's nodes within the job's, the VNI
-- counts within a CXI service's four).  outcome: created | exists (the
-- step's active reservation, same nodes and count) | conflict (different
-- ones) | superseded (a newer reservation of the step was made while this
-- request waited) | not_found (the job has no reservation) |
-- job_not_active (the job's newest is not active) | parent_changed (the
-- job's active reservation is no longer p_parent: check again).  Pool
-- exhaustion raises VN001.
CREATE FUNCTION vnib_step_reserve(
    p_job text, p_step text, p_parent bigint, p_nodes text,
    p_node_count integer, p_vni_count integer, p_empty_reason text,
    p_actor text, p_pool_lo integer[], p_pool_hi integer[],
    p_rprefix text[], p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[],
    p_rhi bigint[])
RETURNS vnib_step_row LANGUAGE plpgsql AS $$
DECLARE
    key text := p_job || '#' || p_step;
    -- The ticket comes before any wait: a later request gets a higher one.
    new_id bigint := nextval('reservations_id_seq');
    par record;
    r record;
    v integer[] := '{}';
    got bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1986947426, hashtext(p_job));
    PERFORM vnib_job_lock(key);
    SELECT id, state, uid, username, tcs_mask INTO par FROM reservations
     WHERE id = vnib_job_current(p_job);
    IF NOT FOUND THEN
        RETURN vnib_step_row('not_found', NULL, NULL);
    END IF;
    IF par.state <> 'active' THEN
        RETURN vnib_step_row('job_not_active', NULL, par.state);
    END IF;
    IF par.id <> p_parent THEN
        RETURN vnib_step_row('parent_changed', NULL, NULL);
    END IF;
    SELECT id, nodes, vni_count, parent_id INTO r FROM reservations
     WHERE job_id = key AND state = 'active';
    IF FOUND THEN
        RETURN vnib_step_row(CASE WHEN r.nodes = p_nodes
                                       AND r.vni_count = p_vni_count
                                       AND r.parent_id = par.id
                                  THEN 'exists' ELSE 'conflict' END,
                             r.id, NULL);
    END IF;
    SELECT id INTO got FROM reservations
     WHERE job_id = key AND id > new_id AND parent_id = par.id
     ORDER BY id DESC LIMIT 1;
    IF FOUND THEN
        RETURN vnib_step_row('superseded', got, NULL);
    END IF;
    IF p_vni_count > 0 THEN
        v := vnib_alloc(new_id, p_vni_count, p_pool_lo, p_pool_hi);
    END IF;
    INSERT INTO reservations (id, job_id, uid, username, nodes, node_count,
                              vni_count, vnis, tcs_mask, empty_reason,
                              created_by, hwcoll_mode, hwcoll_state,
                              parent_id, step_id)
         VALUES (new_id, key, par.uid, par.username, p_nodes, p_node_count,
                 p_vni_count, v, par.tcs_mask, p_empty_reason, p_actor,
                 'off', 'disabled', par.id, p_step)
    ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
    RETURNING id INTO got;
    IF got IS NULL THEN
        RAISE EXCEPTION 'step % gained an active reservation while reserving',
                        key USING ERRCODE = '40001';
    END IF;
    INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
         SELECT got, * FROM unnest(p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi);
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (got, key, p_actor, 'reserve',
                 jsonb_build_object('vnis', v, 'nodes', p_nodes,
                                    'uid', par.uid, 'parent_id', par.id));
    RETURN vnib_step_row('created', got, NULL);
END $$;

-- End step p_step of job p_job: queue the release of its multicast trees
-- (vnib_step_release of 0004: detail queued | no_hwcoll), and release its
-- reservation of the job's current one, if it has one.  outcome:
-- not_found (the job has none) | none (the step has no reservation) |
-- releasing | released | already_releasing | already_released, as a
-- job's release.
CREATE FUNCTION vnib_step_free(p_job text, p_step text, p_actor text,
                               p_force boolean)
RETURNS vnib_step_row LANGUAGE plpgsql AS $$
DECLARE
    key text := p_job || '#' || p_step;
    fm text;
    r record;
    cur text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1986947426, hashtext(p_job));
    PERFORM vnib_job_lock(key);
    fm := vnib_step_release(p_job, p_step, p_actor);
    IF fm = 'not_found' THEN
        RETURN vnib_step_row('not_found', NULL, fm);
    END IF;
    SELECT id, parent_id INTO r FROM reservations
     WHERE job_id = key AND parent_id = vnib_job_current(p_job)
     ORDER BY state = 'active' DESC, state = 'releasing' DESC, id DESC
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN vnib_step_row('none', NULL, fm);
    END IF;
    -- The job's row before the step's (see the top of this file).
    PERFORM 1 FROM reservations WHERE id = r.parent_id FOR UPDATE;
    SELECT state INTO cur FROM reservations WHERE id = r.id FOR UPDATE;
    IF cur = 'released' THEN
        RETURN vnib_step_row('already_released', r.id, fm);
    END IF;
    IF p_force OR NOT vnib_nodes_holding(r.id) THEN
        PERFORM vnib_end_quarantine(r.id, key, p_actor,
                                    CASE WHEN p_force THEN 'force'
                                         WHEN cur = 'active' THEN 'release'
                                         ELSE 'quarantine_end' END,
                                    cur = 'active', p_force);
        RETURN vnib_step_row('released', r.id, fm);
    END IF;
    IF cur = 'releasing' THEN
        RETURN vnib_step_row('already_releasing', r.id, fm);
    END IF;
    UPDATE reservations SET state = 'releasing', release_requested_at = now()
     WHERE id = r.id;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (r.id, key, p_actor, 'release', '{"quarantined": true}');
    RETURN vnib_step_row('releasing', r.id, fm);
END $$;

-- A node's report on a step's services: vnib_report (0009) on the step's
-- key, after locking the job's row (see the top of this file): shared for
-- creating and created (thousands of nodes at a step's start), exclusive
-- for destroyed and failed, which may end the step's quarantine and then
-- the job's.
CREATE FUNCTION vnib_step_report(
    p_job text, p_step text, p_node text, p_cxi text, p_services jsonb,
    p_message text, p_actor text, p_prefix text, p_suffix text,
    p_width smallint, p_num bigint, p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    key text := p_job || '#' || p_step;
    par bigint;
BEGIN
    SELECT parent_id INTO par FROM reservations
     WHERE job_id = key AND (p_res IS NULL OR id = p_res)
     ORDER BY id DESC LIMIT 1;
    IF par IS NOT NULL AND p_cxi IN ('creating', 'created') THEN
        PERFORM 1 FROM reservations WHERE id = par FOR SHARE;
    ELSIF par IS NOT NULL THEN
        PERFORM 1 FROM reservations WHERE id = par FOR UPDATE;
    END IF;
    RETURN vnib_report(key, p_node, p_cxi, p_services, p_message, p_actor,
                       p_prefix, p_suffix, p_width, p_num, p_res);
END $$;

-- ---- events -------------------------------------------------------------------

-- The keys whose events are a job's: its own and its steps' (/v1/events
-- ?job_id=).
CREATE FUNCTION vnib_job_keys(p_job text)
RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT p_job || ARRAY(SELECT DISTINCT s.job_id
                            FROM reservations j
                            JOIN reservations s ON s.parent_id = j.id
                           WHERE j.job_id = p_job)
$$;
