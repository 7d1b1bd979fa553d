-- SPDX-License-Identifier: GPL-2.0-or-later
-- Job steps' own VNIs (schema/0017): a step reservation is a row of
-- reservations keyed "<job>#<step>" under its job's (parent_id), so the
-- key's lock, the unique index of active reservations, vni_holds, the
-- node ranges, reports and quarantine apply to steps as they are.
--
-- Locks, always in this order, so that nothing waits in a cycle: the
-- job's key, then the step's (a step's reserve or release takes the
-- job's key shared and the step's exclusively); the job's reservation
-- row, then its steps' rows.

-- Step reservation p_id as the broker reads it: vnib_row's columns, the
-- outcome's detail, then the job's reservation as its steps show it.
CREATE OR REPLACE FUNCTION vnib_step_row(p_outcome text, p_id bigint,
                                         p_detail text)
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

-- Release the live steps of job reservations p_parents (whose rows the
-- caller has locked): each quarantined until its nodes confirm, or
-- released now when no node holds anything or p_force.  Active steps
-- only, unless p_force, which ends quarantined ones too.
CREATE OR REPLACE FUNCTION vnib_steps_release(p_parents bigint[], p_actor text,
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
                    (r.presumed AND r.destroyed_count < r.node_count)
                    OR EXISTS (SELECT 1 FROM node_reports n
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

-- Reserve for step p_step of job p_job, whose active reservation the
-- broker checked is p_parent (the step's nodes within the job's, the VNI
-- counts within a CXI service's four).  outcome: created | exists (the
-- step's active reservation, same nodes and count; detail 'lease' when
-- the request's lease differs) | conflict (different ones) | superseded
-- (a newer reservation of the step was made while this request waited) |
-- not_found (the job has no reservation) | job_not_active (the job's
-- newest is not active) | parent_changed (the job's active reservation
-- is no longer p_parent: check again).  Pool exhaustion raises VN001.
-- p_presumed, p_lease_until and p_lease_skew as vnib_reserve_batch's; the
-- step's lease names its job's VNIs too, so the job's lease_until moves
-- on with it.
CREATE OR REPLACE FUNCTION vnib_step_reserve(
    p_job text, p_step text, p_parent bigint, p_nodes text,
    p_node_count integer, p_vni_count integer, p_empty_reason text,
    p_actor text, p_pool_lo integer[], p_pool_hi integer[], p_rprefix text[],
    p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[], p_rhi bigint[],
    p_presumed boolean, p_lease_until timestamptz, p_lease_skew integer)
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
    SELECT id, nodes, vni_count, parent_id, presumed INTO r FROM reservations
     WHERE job_id = key AND state = 'active';
    IF FOUND AND r.nodes = p_nodes AND r.vni_count = p_vni_count
       AND r.parent_id = par.id THEN
        IF p_lease_until IS NOT NULL THEN
            -- The job's row before the step's (see the top of this file).
            PERFORM vnib_lease_extend(par.id, p_lease_until, p_lease_skew);
            PERFORM vnib_lease_extend(r.id, p_lease_until, p_lease_skew);
        END IF;
        -- A retry that asks a lease the step was made without (a plugin
        -- reloaded with other settings) gets the step, presumed from now
        -- on as its lease lets the nodes start without a report; one that
        -- asks none of a presumed step gets it as it is.  detail 'lease'
        -- says the request differed.
        IF coalesce(p_presumed, false) AND NOT r.presumed THEN
            UPDATE reservations SET presumed = true WHERE id = r.id;
        END IF;
        RETURN vnib_step_row('exists', r.id,
                             CASE WHEN r.presumed <> coalesce(p_presumed, false)
                                  THEN 'lease' END);
    ELSIF FOUND THEN
        RETURN vnib_step_row('conflict', r.id, NULL);
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
    IF p_lease_until IS NOT NULL THEN
        PERFORM vnib_lease_extend(par.id, p_lease_until, p_lease_skew);
    END IF;
    INSERT INTO reservations (id, job_id, uid, username, nodes, node_count,
                              vni_count, vnis, tcs_mask, empty_reason,
                              created_by, hwcoll_mode, hwcoll_state,
                              parent_id, step_id, presumed, lease_until,
                              lease_skew_s)
         VALUES (new_id, key, par.uid, par.username, p_nodes, p_node_count,
                 p_vni_count, v, par.tcs_mask, p_empty_reason, p_actor,
                 'off', 'disabled', par.id, p_step,
                 coalesce(p_presumed, false), p_lease_until,
                 coalesce(p_lease_skew, 0))
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
                                    'uid', par.uid, 'parent_id', par.id)
                 || CASE WHEN p_presumed THEN '{"presumed": true}'::jsonb
                         ELSE '{}'::jsonb END);
    RETURN vnib_step_row('created', got, NULL);
END $$;

-- The step reserve of brokers of schema 20 and older: no lease, nothing
-- presumed.
CREATE OR REPLACE FUNCTION vnib_step_reserve(
    p_job text, p_step text, p_parent bigint, p_nodes text,
    p_node_count integer, p_vni_count integer, p_empty_reason text,
    p_actor text, p_pool_lo integer[], p_pool_hi integer[], p_rprefix text[],
    p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[], p_rhi bigint[])
RETURNS vnib_step_row LANGUAGE plpgsql AS $$
BEGIN
    RETURN vnib_step_reserve(p_job, p_step, p_parent, p_nodes, p_node_count,
                             p_vni_count, p_empty_reason, p_actor, p_pool_lo,
                             p_pool_hi, p_rprefix, p_rsuffix, p_rwidth, p_rlo,
                             p_rhi, false, NULL::timestamptz, 0);
END $$;

-- Queue the release of one job step's multicast trees, of the job's
-- current reservation: outcome queued | no_hwcoll | not_found.
CREATE OR REPLACE FUNCTION vnib_step_release(p_job text, p_step text,
                                             p_actor text)
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

-- End step p_step of job p_job: queue the release of its multicast trees
-- (vnib_step_release: detail queued | no_hwcoll), and release its
-- reservation of the job's current one, if it has one.  outcome:
-- not_found (the job has none) | none (the step has no reservation) |
-- releasing | released | already_releasing | already_released, as a
-- job's release | not_current (p_parent is not NULL and not the job's
-- active reservation: a job token's caller, whose reservation the job
-- has left; nothing done).  p_parent is checked under the job's key,
-- which a release or reserve of the job holds exclusively, so the job's
-- active reservation cannot change between the check and the release.
CREATE OR REPLACE FUNCTION vnib_step_free(p_job text, p_step text,
                                          p_actor text, p_force boolean,
                                          p_parent bigint)
RETURNS vnib_step_row LANGUAGE plpgsql AS $$
DECLARE
    key text := p_job || '#' || p_step;
    fm text;
    r record;
    cur text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1986947426, hashtext(p_job));
    PERFORM vnib_job_lock(key);
    IF p_parent IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM reservations
                        WHERE id = p_parent AND job_id = p_job
                          AND state = 'active') THEN
        RETURN vnib_step_row('not_current', NULL, NULL);
    END IF;
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

-- vnib_step_free of any current reservation of the job (the brokers
-- before job tokens call this form).
CREATE OR REPLACE FUNCTION vnib_step_free(p_job text, p_step text,
                                          p_actor text, p_force boolean)
RETURNS vnib_step_row LANGUAGE plpgsql AS $$
BEGIN
    RETURN vnib_step_free(p_job, p_step, p_actor, p_force, NULL::bigint);
END $$;

-- A node's report on a step's services, as a group of one
-- (vnib_report_batch, nodes.sql: the step's reservation on its key, after
-- its job's row is locked, shared for creating and created, exclusive for
-- destroyed and failed, which may end the step's quarantine and then the
-- job's); kept for older brokers.
CREATE OR REPLACE FUNCTION vnib_step_report(
    p_job text, p_step text, p_node text, p_cxi text, p_services jsonb,
    p_message text, p_actor text, p_prefix text, p_suffix text,
    p_width smallint, p_num bigint, p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    o vnib_row;
BEGIN
    SELECT * INTO o FROM vnib_report_batch(
        ARRAY[p_job], ARRAY[p_step], ARRAY[p_node], ARRAY[p_cxi],
        ARRAY[p_services], ARRAY[p_message], ARRAY[p_actor], ARRAY[p_prefix],
        ARRAY[p_suffix], ARRAY[p_width], ARRAY[p_num], ARRAY[p_res]);
    RETURN o;
END $$;
