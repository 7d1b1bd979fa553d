-- SPDX-License-Identifier: GPL-2.0-or-later
-- Jobs' reservations: reserve and release, in groups (schema/0008) and
-- one at a time, the end of quarantines, the sweeper's safety net and the
-- purge of old history.  A job's steps (steps.sql) are released with it,
-- and hold its quarantine while they are held.
--
-- The functions a caller calls from the broker's hot paths carry SET
-- clauses for their plans (generic, no sequential scans, no hash or merge
-- joins, no JIT): see schema/0008 for why.

-- Reserve for each job of a group: item k is p_job[k] with the k-th of
-- each per-job array (as vnib_reserve's parameters), the pool shared, and
-- the node ranges flat, range i belonging to item p_ritem[i].  outcome:
-- created | exists (the job's active reservation, made by the same actor
-- for the same uid and nodes: whatever else differs, the request is a
-- retry of it, or its scheduler's recovery, and gets it as it is; detail
-- names what differs, "user,vni_count,hwcoll,lease,tcs_mask" or fewer, or
-- is NULL) | conflict (its actor, uid or nodes differ: another job, or
-- another scheduler's; detail names which, "created_by,uid,nodes" or
-- fewer; nothing done) | superseded (a newer reservation of the job
-- was made while this request waited) | exhausted (detail "<wanted>
-- <free> <being taken> <cooling>", nothing made for that job) | busy (its
-- lock is held elsewhere and not p_wait: nothing done; detail is its
-- ticket, to pass again as p_ticket[k], which may be NULL for a new one).
-- p_presumed[k]: the reservation is presumed (schema/0021); an existing
-- one that is not becomes presumed when a retry asks (a lease is signed
-- for it: its nodes may start from the lease alone), and one that is
-- stays so when a retry does not; p_lease_until[k] (NULL: none)
-- and p_lease_skew[k]: the expiry of the lease the broker signs for it
-- and the clock skew it allows, kept as the latest for an existing one.
-- Queued VNIs whose usable_at is to come are passed over (and counted as
-- cooling).
CREATE OR REPLACE FUNCTION vnib_reserve_batch(
    p_job text[], p_uid bigint[], p_user text[], p_nodes text[],
    p_node_count integer[], p_vni_count integer[], p_tcs smallint[],
    p_empty_reason text[], p_actor text[], p_pool_lo integer[],
    p_pool_hi integer[], p_ritem integer[], p_rprefix text[], p_rsuffix text[],
    p_rwidth smallint[], p_rlo bigint[], p_rhi bigint[], p_hwcoll_mode text[],
    p_hwcoll_state text[], p_hwcoll_reason text[], p_fm_job_id text[],
    p_addrs integer[], p_ticket bigint[], p_wait boolean,
    p_presumed boolean[], p_lease_until timestamptz[], p_lease_skew integer[])
RETURNS SETOF vnib_batch_row LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
DECLARE
    n integer := cardinality(p_job);
    -- The tickets come before any wait: a later request gets a higher one.
    ticket bigint[] := ARRAY(SELECT coalesce(t, nextval('reservations_id_seq'))
                               FROM unnest(coalesce(p_ticket, array_fill(NULL::bigint, ARRAY[n])))
                                    WITH ORDINALITY u(t, k) ORDER BY u.k);
    got boolean[];
    outcome text[];
    rid bigint[];
    detail text[];
    want integer;
    cand integer[];
    avail integer;
    used integer := 0;
    vitem integer[] := '{}';  -- the item of each VNI handed out
    vnum integer[] := '{}';   -- and the VNI
    busy bigint;
    cooling bigint;
    made bigint;
BEGIN
    got := vnib_jobs_lock(p_job, p_wait);
    SELECT array_agg(CASE WHEN NOT x.got THEN 'busy'
                          WHEN a.id IS NOT NULL THEN
                              CASE WHEN a.created_by = x.actor
                                        AND a.uid = x.uid
                                        AND a.nodes = x.nodes
                                   THEN 'exists' ELSE 'conflict' END
                          WHEN s.id IS NOT NULL THEN 'superseded'
                          ELSE 'created' END ORDER BY x.k),
           array_agg(CASE WHEN x.got THEN coalesce(a.id, s.id, x.t) END
                     ORDER BY x.k),
           array_agg(CASE WHEN NOT x.got THEN x.t::text
                          WHEN a.id IS NULL THEN NULL
                          WHEN a.created_by = x.actor AND a.uid = x.uid
                               AND a.nodes = x.nodes THEN
                              nullif(concat_ws(',',
                                  CASE WHEN a.username <> x.usr THEN 'user' END,
                                  CASE WHEN a.vni_count <> x.vc
                                       THEN 'vni_count' END,
                                  CASE WHEN a.hwcoll_mode <> x.hm
                                       THEN 'hwcoll' END,
                                  CASE WHEN a.presumed <> coalesce(x.pr, false)
                                       THEN 'lease' END,
                                  CASE WHEN a.tcs_mask <> x.tcs
                                       THEN 'tcs_mask' END), '')
                          ELSE concat_ws(',',
                                  CASE WHEN a.created_by IS DISTINCT FROM x.actor
                                       THEN 'created_by' END,
                                  CASE WHEN a.uid <> x.uid THEN 'uid' END,
                                  CASE WHEN a.nodes <> x.nodes
                                       THEN 'nodes' END) END
                     ORDER BY x.k)
      INTO outcome, rid, detail
      FROM unnest(p_job, p_uid, p_user, p_nodes, p_vni_count, p_hwcoll_mode,
                  ticket, got, p_presumed, p_actor, p_tcs)
           WITH ORDINALITY x(job, uid, usr, nodes, vc, hm, t, got, pr, actor,
                             tcs, k)
      LEFT JOIN LATERAL (SELECT * FROM reservations
                          WHERE x.got AND job_id = x.job
                            AND state = 'active' LIMIT 1) a ON true
      LEFT JOIN LATERAL (SELECT id FROM reservations
                          WHERE x.got AND job_id = x.job AND id > x.t
                          ORDER BY id DESC LIMIT 1) s ON a.id IS NULL;

    -- VNIs for the jobs to create, in item order; a job that does not fit
    -- in what is free gets none, and a later smaller one may still fit.
    SELECT coalesce(sum(vc), 0) INTO want
      FROM unnest(p_vni_count, outcome) u(vc, o) WHERE o = 'created';
    IF want > 0 THEN
        SELECT array_agg(q.vni ORDER BY q.seq) INTO cand
          FROM (SELECT f.vni, f.seq FROM vni_free f
                 WHERE EXISTS (SELECT 1 FROM unnest(p_pool_lo, p_pool_hi) p(lo, hi)
                                WHERE f.vni BETWEEN p.lo AND p.hi)
                   AND f.usable_at <= now()
                 ORDER BY f.seq LIMIT want
                   FOR UPDATE SKIP LOCKED) q;
        avail := coalesce(cardinality(cand), 0);
        FOR k IN 1 .. n LOOP
            CONTINUE WHEN outcome[k] <> 'created' OR p_vni_count[k] = 0;
            IF used + p_vni_count[k] <= avail THEN
                vitem := vitem || array_fill(k, ARRAY[p_vni_count[k]]);
                vnum := vnum || cand[used + 1 : used + p_vni_count[k]];
                used := used + p_vni_count[k];
            ELSE
                outcome[k] := 'exhausted';
                rid[k] := NULL;
            END IF;
        END LOOP;
        IF avail < want THEN
            -- What is queued, usable and not ours was skipped: other
            -- reserves are taking it.  What is cooling waits for leases.
            SELECT count(*) FILTER (WHERE f.usable_at <= now()
                                      AND f.vni <> ALL (coalesce(cand, '{}'))),
                   count(*) FILTER (WHERE f.usable_at > now())
              INTO busy, cooling FROM vni_free f
             WHERE EXISTS (SELECT 1 FROM unnest(p_pool_lo, p_pool_hi) p(lo, hi)
                            WHERE f.vni BETWEEN p.lo AND p.hi);
            FOR k IN 1 .. n LOOP
                CONTINUE WHEN outcome[k] <> 'exhausted';
                detail[k] := p_vni_count[k] || ' ' || busy + avail - used
                             || ' ' || busy || ' ' || cooling;
            END LOOP;
        END IF;
        DELETE FROM vni_free WHERE vni = ANY (vnum);
    END IF;

    WITH ins AS (
        INSERT INTO reservations (id, job_id, uid, username, nodes,
                                  node_count, vni_count, vnis, tcs_mask,
                                  empty_reason, created_by, hwcoll_mode,
                                  hwcoll_state, hwcoll_reason, fm_job_id,
                                  addrs_per_job, hwcoll_updated_at, presumed,
                                  lease_until, lease_skew_s)
             SELECT x.t, x.job, x.uid, x.usr, x.nodes, x.nc, x.vc,
                    coalesce((SELECT array_agg(v.num ORDER BY v.i)
                                FROM unnest(vitem, vnum) WITH ORDINALITY v(item, num, i)
                               WHERE v.item = x.k), '{}'),
                    x.tcs, x.er, x.actor, x.hm, x.hs, x.hr,
                    x.fm || '-r' || x.t, x.ad, now(), coalesce(x.pr, false),
                    x.lu, coalesce(x.ls, 0)
               FROM unnest(p_job, p_uid, p_user, p_nodes, p_node_count,
                           p_vni_count, p_tcs, p_empty_reason, p_actor,
                           p_hwcoll_mode, p_hwcoll_state, p_hwcoll_reason,
                           p_fm_job_id, p_addrs, ticket, outcome, p_presumed,
                           p_lease_until, p_lease_skew)
                    WITH ORDINALITY x(job, uid, usr, nodes, nc, vc, tcs, er,
                                      actor, hm, hs, hr, fm, ad, t, o, pr,
                                      lu, ls, k)
              WHERE x.o = 'created'
              ORDER BY x.k
        ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
        RETURNING id, job_id, vnis, nodes, uid, created_by, presumed),
    holds AS (
        INSERT INTO vni_holds (vni, reservation_id)
             SELECT v.num, ticket[v.item] FROM unnest(vitem, vnum) v(item, num)),
    ranges AS (
        INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width,
                                        lo, hi)
             SELECT ticket[g.item], g.prefix, g.suffix, g.width, g.lo, g.hi
               FROM unnest(p_ritem, p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi)
                    g(item, prefix, suffix, width, lo, hi)
              WHERE outcome[g.item] = 'created'),
    ev AS (
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             SELECT ins.id, ins.job_id, ins.created_by, 'reserve',
                    jsonb_build_object('vnis', ins.vnis, 'nodes', ins.nodes,
                                       'uid', ins.uid)
                    || CASE WHEN ins.presumed THEN '{"presumed": true}'::jsonb
                            ELSE '{}'::jsonb END
               FROM ins ORDER BY ins.id)
    SELECT count(*) INTO made FROM ins;
    IF made <> (SELECT count(*) FROM unnest(outcome) o WHERE o = 'created') THEN
        -- Only a writer that bypasses the job locks gets here; the whole
        -- group rolls back and the caller may retry.
        RAISE EXCEPTION 'a job gained an active reservation while reserving'
            USING ERRCODE = '40001';
    END IF;
    -- A retry signs a lease of its own: the VNIs cool down until the
    -- latest one expired, and a reservation made without one is presumed
    -- from now on (the lease lets its nodes start without a report).
    UPDATE reservations r
       SET lease_until = greatest(r.lease_until, x.lu),
           lease_skew_s = greatest(r.lease_skew_s, x.ls),
           presumed = r.presumed OR coalesce(x.pr, false)
      FROM unnest(outcome, rid, p_lease_until, p_lease_skew, p_presumed)
           x(o, id, lu, ls, pr)
     WHERE x.o = 'exists' AND r.id = x.id
       AND ((x.lu IS NOT NULL
             AND (r.lease_until IS NULL OR r.lease_until < x.lu
                  OR r.lease_skew_s < x.ls))
            OR (coalesce(x.pr, false) AND NOT r.presumed));
    RETURN QUERY SELECT * FROM vnib_batch_rows(outcome, rid, detail);
END $$;

-- The group reserve of brokers of schema 20 and older: no lease, nothing
-- presumed.
CREATE OR REPLACE FUNCTION vnib_reserve_batch(
    p_job text[], p_uid bigint[], p_user text[], p_nodes text[],
    p_node_count integer[], p_vni_count integer[], p_tcs smallint[],
    p_empty_reason text[], p_actor text[], p_pool_lo integer[],
    p_pool_hi integer[], p_ritem integer[], p_rprefix text[], p_rsuffix text[],
    p_rwidth smallint[], p_rlo bigint[], p_rhi bigint[], p_hwcoll_mode text[],
    p_hwcoll_state text[], p_hwcoll_reason text[], p_fm_job_id text[],
    p_addrs integer[], p_ticket bigint[], p_wait boolean)
RETURNS SETOF vnib_batch_row LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM vnib_reserve_batch(
        p_job, p_uid, p_user, p_nodes, p_node_count, p_vni_count, p_tcs,
        p_empty_reason, p_actor, p_pool_lo, p_pool_hi, p_ritem, p_rprefix,
        p_rsuffix, p_rwidth, p_rlo, p_rhi, p_hwcoll_mode, p_hwcoll_state,
        p_hwcoll_reason, p_fm_job_id, p_addrs, p_ticket, p_wait,
        array_fill(false, ARRAY[cardinality(p_job)]),
        array_fill(NULL::timestamptz, ARRAY[cardinality(p_job)]),
        array_fill(0, ARRAY[cardinality(p_job)]));
END $$;

-- One job's reserve, as a group of one; pool exhaustion raises VN001.
-- Kept for brokers of schema 7 and older.
CREATE OR REPLACE FUNCTION vnib_reserve(
    p_job text, p_uid bigint, p_user text, p_nodes text, p_node_count integer,
    p_vni_count integer, p_tcs smallint, p_empty_reason text, p_actor text,
    p_pool_lo integer[], p_pool_hi integer[], p_rprefix text[],
    p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[], p_rhi bigint[],
    p_hwcoll_mode text, p_hwcoll_state text, p_hwcoll_reason text,
    p_fm_job_id text, p_addrs integer)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    b vnib_batch_row;
BEGIN
    SELECT * INTO b FROM vnib_reserve_batch(
        ARRAY[p_job], ARRAY[p_uid], ARRAY[p_user], ARRAY[p_nodes],
        ARRAY[p_node_count], ARRAY[p_vni_count], ARRAY[p_tcs],
        ARRAY[p_empty_reason], ARRAY[p_actor], p_pool_lo, p_pool_hi,
        array_fill(1, ARRAY[coalesce(cardinality(p_rprefix), 0)]),
        p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi,
        ARRAY[p_hwcoll_mode], ARRAY[p_hwcoll_state], ARRAY[p_hwcoll_reason],
        ARRAY[p_fm_job_id], ARRAY[p_addrs], NULL, true);
    IF b.outcome = 'exhausted' THEN
        RAISE EXCEPTION 'VNI pool exhausted'
            USING ERRCODE = 'VN001', DETAIL = b.detail;
    END IF;
    RETURN vnib_batch_single(b);
END $$;

-- Reservation p_id is held while a node may still have services of it:
-- a node whose last report is not destroyed, and for a presumed one
-- (schema/0021) any node of its list that has not reported destroyed
-- (its row's count, not a count of its reports); a job's also while one
-- of its steps is not released.
CREATE OR REPLACE FUNCTION vnib_nodes_holding(p_id bigint)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM reservations
                    WHERE id = p_id AND presumed
                      AND destroyed_count < node_count)
        OR EXISTS (SELECT 1 FROM node_reports
                    WHERE reservation_id = p_id AND cxi <> 'destroyed')
        OR EXISTS (SELECT 1 FROM reservations
                    WHERE parent_id = p_id AND state <> 'released');
END $$;

-- End the quarantine of reservations p_id[k] (of job p_job[k]) at once:
-- their VNIs leave vni_holds and join the tail of the free queue (those
-- of the pool in force), lowest first within each, in item order, each
-- usable once the reservation's last lease expired, plus the clock skew
-- it allowed (schema/0021; at once without a lease); each is released,
-- with event p_action[k].  p_requested[k]: the release was
-- requested now (the reservation was active).  p_hw_release[k]: its
-- multicast reservation is released with it, in the same row version.
-- vnib_end_quarantines adds what this ends for the jobs of steps.
CREATE OR REPLACE FUNCTION vnib_end_quarantines_own(
    p_id bigint[], p_job text[], p_actor text, p_action text[],
    p_requested boolean[], p_forced boolean, p_hw_release boolean[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH freed AS (DELETE FROM vni_holds WHERE reservation_id = ANY (p_id)
                   RETURNING vni, reservation_id),
    queued AS (
        INSERT INTO vni_free (vni, seq, usable_at)
             SELECT f.vni, nextval('vni_free_seq'), f.usable_at
               FROM (SELECT freed.vni, array_position(p_id, freed.reservation_id) AS k,
                            coalesce((SELECT r.lease_until
                                             + make_interval(secs => r.lease_skew_s)
                                        FROM reservations r
                                       WHERE r.id = freed.reservation_id),
                                     '-infinity') AS usable_at
                       FROM freed
                      WHERE NOT EXISTS (SELECT 1 FROM vni_pool)
                         OR EXISTS (SELECT 1 FROM vni_pool p
                                     WHERE freed.vni BETWEEN p.lo AND p.hi)
                      ORDER BY 2, 1) f
        ON CONFLICT (vni) DO NOTHING),
    up AS (
        UPDATE reservations r
           SET state = 'released', released_at = now(), released_by = p_actor,
               forced = p_forced,
               release_requested_at =
                   CASE WHEN p_requested[array_position(p_id, r.id)] THEN now()
                        ELSE r.release_requested_at END,
               hwcoll_state =
                   CASE WHEN p_hw_release[array_position(p_id, r.id)]
                        THEN 'releasing' ELSE r.hwcoll_state END,
               hwcoll_updated_at =
                   CASE WHEN p_hw_release[array_position(p_id, r.id)]
                        THEN now() ELSE r.hwcoll_updated_at END
         WHERE r.id = ANY (p_id)
        RETURNING r.id)
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         SELECT x.id, x.job, p_actor, x.action,
                jsonb_build_object('quarantined', NOT x.req, 'forced', p_forced)
           FROM unnest(p_id, p_job, p_action, p_requested)
                WITH ORDINALITY x(id, job, action, req, k)
          ORDER BY x.k;
END $$;

-- vnib_end_quarantines_own, and then the jobs whose last held step this
-- ended: a job releasing with no node holding and no step left ends its
-- quarantine too.  SKIP LOCKED: the sweeper must not wait on a job's row
-- while holding its steps'; a report or release of a step holds the
-- job's row already (vnib_step_report, vnib_step_free), so it always gets
-- it.  A job skipped here is ended by its holder or by the next sweep.
CREATE OR REPLACE FUNCTION vnib_end_quarantines(
    p_id bigint[], p_job text[], p_actor text, p_action text[],
    p_requested boolean[], p_forced boolean, p_hw_release boolean[])
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

-- The six-argument form: no multicast reservation released with them
-- (the sweeper, and brokers of schema 11).
CREATE OR REPLACE FUNCTION vnib_end_quarantines(
    p_id bigint[], p_job text[], p_actor text, p_action text[],
    p_requested boolean[], p_forced boolean)
RETURNS void LANGUAGE sql AS $$
    SELECT vnib_end_quarantines(p_id, p_job, p_actor, p_action, p_requested,
                                p_forced,
                                array_fill(false, ARRAY[cardinality(p_id)]))
$$;

-- vnib_end_quarantines for one reservation.
CREATE OR REPLACE FUNCTION vnib_end_quarantine(
    p_id bigint, p_job text, p_actor text, p_action text, p_requested boolean,
    p_forced boolean)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    PERFORM vnib_end_quarantines(ARRAY[p_id], ARRAY[p_job], p_actor,
                                 ARRAY[p_action], ARRAY[p_requested], p_forced);
END $$;

-- Release each job of a group: item k is job p_job[k], reservation
-- p_res[k] of it when not NULL, else its active reservation, else the
-- newest still quarantined, else the newest.  p_actor and p_force are the
-- group's (the broker groups only releases that share them).  The job's
-- multicast reservation goes to the Fabric Manager queue, and its steps
-- are released with it (forced ones after it).  outcome: not_found |
-- releasing (quarantined until its nodes and steps confirm) | released
-- (now) | already_releasing | already_released | busy (as in
-- vnib_reserve_batch; nothing done).
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
    -- the newest still quarantined, else the newest (the job's lock keeps
    -- that from changing); locked in id order, as a group of node reports
    -- locks its reservations (vnib_report_batch), so that the two never
    -- wait for each other in a cycle; then read.
    SELECT array_agg(r.id ORDER BY x.k)
      INTO rid
      FROM unnest(p_job, p_res, got) WITH ORDINALITY x(job, res, got, k)
      LEFT JOIN LATERAL (
          SELECT c.id FROM reservations c
           WHERE x.got AND c.job_id = x.job
             AND c.id = coalesce(x.res,
                                 (SELECT id FROM reservations
                                   WHERE job_id = x.job
                                   ORDER BY state = 'active' DESC,
                                            state = 'releasing' DESC, id DESC
                                   LIMIT 1))) r ON true;
    PERFORM 1 FROM reservations WHERE id = ANY (rid) ORDER BY id FOR UPDATE;
    SELECT array_agg(c.id ORDER BY x.k), array_agg(c.state ORDER BY x.k),
           array_agg(c.hwcoll_state ORDER BY x.k)
      INTO rid, st, hw
      FROM unnest(rid) WITH ORDINALITY x(id, k)
      LEFT JOIN reservations c ON c.id = x.id;
    -- The steps go with their job, before the job's own holders are
    -- counted; forced ones after their job is (so that it is the job's
    -- force, not its last step's end, that ends the job's quarantine).
    IF NOT p_force THEN
        PERFORM vnib_steps_release(
            ARRAY(SELECT rid[k] FROM generate_subscripts(p_job, 1) k
                   WHERE got[k] AND st[k] = 'active'),
            p_actor, false);
    END IF;
    SELECT array_agg(EXISTS (SELECT 1 FROM reservations c
                              WHERE c.id = x.id AND c.presumed
                                AND c.destroyed_count < c.node_count)
                     OR EXISTS (SELECT 1 FROM node_reports nr
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
        -- Nodes that never reported hold nothing, unless the reservation
        -- is presumed: with no holder left the quarantine has nothing to
        -- wait for.
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

-- One job's release, as a group of one.  Kept for brokers of schema 7
-- and older.
CREATE OR REPLACE FUNCTION vnib_release(p_job text, p_actor text,
                                        p_force boolean, p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    b vnib_batch_row;
BEGIN
    SELECT * INTO b FROM vnib_release_batch(ARRAY[p_job], ARRAY[p_res],
                                            p_actor, p_force, true);
    RETURN vnib_batch_single(b);
END $$;

-- Close every quarantine that nothing holds any more (no node's services,
-- no presumed node short of destroyed, no live step), in one
-- vnib_end_quarantines call; the broker runs this periodically as a
-- safety net.  Reservations a running transaction has
-- locked are skipped and caught next time.  Returns how many ended.
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
               AND NOT (r.presumed AND r.destroyed_count < r.node_count)
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

-- Forget released reservations and audit events older than p_days, at
-- most p_batch reservations per call (the sweeper calls it on every run,
-- so that a backlog drains without one long transaction), found through
-- indexes: reservations by released_at, events as the first p_batch * 8
-- by id (an event recorded within the same instant as an older-numbered
-- one may wait for the next call).  A reservation whose FM job may still
-- exist is kept (it is the proof that the FM job is ours), as is one
-- whose reserve timed out.  Returns the number of reservations removed.
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
                        AND hwcoll_cause IS NOT DISTINCT FROM 'timeout')
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
