-- 0008: reserves and releases in groups, one transaction and one pass
-- of each statement for many jobs.
--
-- Measured on 2 cores (tests/bench, BENCH_ONLY=compare): a reserve+release
-- pair costs about ten plain one-row INSERT commits, and commits are not
-- what it pays for: four pairs in one transaction run only 10-15% faster
-- than four transactions.  The price is per statement (executor start,
-- index and constraint set-up, PL/pgSQL's hand-over), about 15 statements
-- a pair.  A statement that writes the rows of eight jobs costs little
-- more than one that writes the rows of one.  So the broker gathers the
-- reserves (and the releases) that arrive while one is running into one
-- call of the functions below (server/store.c, "group commit"); a request
-- that arrives alone goes alone, at once.
--
-- A group keeps every promise a single request made:
--   - each job's ticket (its reservation id) is taken before any wait;
--   - each job's lock (vnib_job_lock's key) is taken before its rows are
--     read.  A group never waits for one: a job whose lock another
--     transaction holds is answered 'busy' (nothing read or written for
--     it), and the broker runs that job alone, waiting, outside the group,
--     so that one job held up does not hold up the jobs grouped with it.
--     A reserve keeps its ticket for that second call (p_ticket);
--   - VNIs come from the head of the free queue with SKIP LOCKED, in item
--     order, so a group never waits on another reserve either;
--   - each item gets its own outcome; a job whose VNIs do not fit is
--     refused ('exhausted', with the single function's DETAIL numbers in
--     `detail`) and the others go on.  Nothing half-made is left: a group
--     is one statement's transaction, committed or rolled back whole.
-- The caller never puts one job in a group twice (it is refused, 22023).
--
-- Plans.  Each statement is planned once per connection (a generic plan,
-- plan_cache_mode), as a re-plan per call cost more than the statement
-- itself; and a generic plan must not depend on the statistics of the
-- moment (a table empty when the plan was made may hold millions of rows
-- later).  So every function here forbids what a plan for a few items
-- never needs: sequential scans, hash and merge joins (every join is a
-- few items against an index), and JIT (which the disabled paths' costs
-- would otherwise trigger); and each per-item lookup is a LATERAL
-- subquery with LIMIT, which the planner cannot flatten into a join over
-- the whole table.  The settings are on the functions a caller calls
-- (SET clauses cost each call); the helpers they call run within them.
--
-- The single-job functions vnib_reserve and vnib_release stay, for
-- brokers of schema 7 during a rolling upgrade; they take the same locks
-- and tables, so both kinds can run side by side.

-- One row of a group's answer: vnib_row's columns in vnib_row's order (so
-- store.c reads both alike), then the item's detail.
CREATE TYPE vnib_batch_row AS (
    outcome text, id bigint, job_id text, state text, uid bigint,
    username text, nodes text, node_count integer, vni_count smallint,
    vnis text, empty_reason text, tcs_mask smallint, created_at text,
    created_by text, release_requested_at text, released_at text,
    released_by text, forced boolean, counts text, hwcoll_mode text,
    hwcoll_state text, hwcoll_reason text, fm_job_id text,
    addrs_per_job integer, session_token text, detail text);

-- The answer of a group: for item k, outcome p_outcome[k] and reservation
-- p_id[k] (none when NULL) with its node report counts, in item order.
CREATE FUNCTION vnib_batch_rows(p_outcome text[], p_id bigint[],
                                p_detail text[])
RETURNS SETOF vnib_batch_row LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT o.outcome, r.id, r.job_id, r.state, r.uid, r.username, r.nodes,
           r.node_count, r.vni_count, array_to_string(r.vnis, ','),
           r.empty_reason, r.tcs_mask, vnib_ts(r.created_at), r.created_by,
           vnib_ts(r.release_requested_at), vnib_ts(r.released_at),
           r.released_by, r.forced, c.counts, r.hwcoll_mode, r.hwcoll_state,
           r.hwcoll_reason, r.fm_job_id, r.addrs_per_job,
           encode(r.session_token, 'hex'), o.detail
      FROM unnest(p_outcome, p_id, p_detail) WITH ORDINALITY o(outcome, id, detail, k)
      LEFT JOIN LATERAL (SELECT * FROM reservations WHERE id = o.id LIMIT 1) r
        ON true
      LEFT JOIN LATERAL (
          SELECT count(*) FILTER (WHERE n.cxi = 'creating') || ','
                 || count(*) FILTER (WHERE n.cxi = 'created') || ','
                 || count(*) FILTER (WHERE n.cxi = 'destroyed') || ','
                 || count(*) FILTER (WHERE n.cxi = 'failed') AS counts
            FROM node_reports n WHERE n.reservation_id = o.id) c
        ON r.id IS NOT NULL
     ORDER BY o.k;
END $$;

-- Take the job locks of p_job (vnib_job_lock's keys): all of them, in key
-- order, when p_wait; else those free now, without waiting.  Returns,
-- for each job, whether its lock is held.
CREATE FUNCTION vnib_jobs_lock(p_job text[], p_wait boolean)
RETURNS boolean[] LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(DISTINCT j) FROM unnest(p_job) j) <> cardinality(p_job) THEN
        RAISE EXCEPTION 'a group names one job twice' USING ERRCODE = '22023';
    END IF;
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(1986947426, s.h)
           FROM (SELECT DISTINCT hashtext(j) AS h FROM unnest(p_job) j
                  ORDER BY 1) s;
        RETURN array_fill(true, ARRAY[cardinality(p_job)]);
    END IF;
    RETURN ARRAY(SELECT pg_try_advisory_xact_lock(1986947426, hashtext(j.j))
                   FROM unnest(p_job) WITH ORDINALITY j(j, k) ORDER BY j.k);
END $$;

-- Reserve for each job of a group: item k is p_job[k] with the k-th of
-- each per-job array (as vnib_reserve's parameters), the pool shared, and
-- the node ranges flat, range i belonging to item p_ritem[i].  outcome:
-- created | exists | conflict | superseded (as vnib_reserve) | exhausted
-- (detail "<wanted> <free> <being taken>", nothing made for that job) |
-- busy (its lock is held elsewhere and not p_wait: nothing done; detail
-- is its ticket, to pass again as p_ticket[k], which may be NULL for a
-- new one).
CREATE FUNCTION vnib_reserve_batch(
    p_job text[], p_uid bigint[], p_user text[], p_nodes text[],
    p_node_count integer[], p_vni_count integer[], p_tcs smallint[],
    p_empty_reason text[], p_actor text[],
    p_pool_lo integer[], p_pool_hi integer[],
    p_ritem integer[], p_rprefix text[], p_rsuffix text[], p_rwidth smallint[],
    p_rlo bigint[], p_rhi bigint[], p_hwcoll_mode text[], p_hwcoll_state text[],
    p_hwcoll_reason text[], p_fm_job_id text[], p_addrs integer[],
    p_ticket bigint[], p_wait boolean)
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
    made bigint;
BEGIN
    got := vnib_jobs_lock(p_job, p_wait);
    SELECT array_agg(CASE WHEN NOT x.got THEN 'busy'
                          WHEN a.id IS NOT NULL THEN
                              CASE WHEN a.uid = x.uid AND a.username = x.usr
                                        AND a.nodes = x.nodes
                                        AND a.vni_count = x.vc
                                        AND a.hwcoll_mode = x.hm
                                   THEN 'exists' ELSE 'conflict' END
                          WHEN s.id IS NOT NULL THEN 'superseded'
                          ELSE 'created' END ORDER BY x.k),
           array_agg(CASE WHEN x.got THEN coalesce(a.id, s.id, x.t) END
                     ORDER BY x.k),
           array_agg(CASE WHEN NOT x.got THEN x.t::text END ORDER BY x.k)
      INTO outcome, rid, detail
      FROM unnest(p_job, p_uid, p_user, p_nodes, p_vni_count, p_hwcoll_mode,
                  ticket, got)
           WITH ORDINALITY x(job, uid, usr, nodes, vc, hm, t, got, k)
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
            -- What is queued and not ours was skipped: other reserves are
            -- taking it.
            SELECT count(*) INTO busy FROM vni_free f
             WHERE EXISTS (SELECT 1 FROM unnest(p_pool_lo, p_pool_hi) p(lo, hi)
                            WHERE f.vni BETWEEN p.lo AND p.hi)
               AND f.vni <> ALL (coalesce(cand, '{}'));
            FOR k IN 1 .. n LOOP
                CONTINUE WHEN outcome[k] <> 'exhausted';
                detail[k] := p_vni_count[k] || ' ' || busy + avail - used
                             || ' ' || busy;
            END LOOP;
        END IF;
        DELETE FROM vni_free WHERE vni = ANY (vnum);
    END IF;

    WITH ins AS (
        INSERT INTO reservations (id, job_id, uid, username, nodes,
                                  node_count, vni_count, vnis, tcs_mask,
                                  empty_reason, created_by, hwcoll_mode,
                                  hwcoll_state, hwcoll_reason, fm_job_id,
                                  addrs_per_job, hwcoll_updated_at)
             SELECT x.t, x.job, x.uid, x.usr, x.nodes, x.nc, x.vc,
                    coalesce((SELECT array_agg(v.num ORDER BY v.i)
                                FROM unnest(vitem, vnum) WITH ORDINALITY v(item, num, i)
                               WHERE v.item = x.k), '{}'),
                    x.tcs, x.er, x.actor, x.hm, x.hs, x.hr,
                    x.fm || '-r' || x.t, x.ad, now()
               FROM unnest(p_job, p_uid, p_user, p_nodes, p_node_count,
                           p_vni_count, p_tcs, p_empty_reason, p_actor,
                           p_hwcoll_mode, p_hwcoll_state, p_hwcoll_reason,
                           p_fm_job_id, p_addrs, ticket, outcome)
                    WITH ORDINALITY x(job, uid, usr, nodes, nc, vc, tcs, er,
                                      actor, hm, hs, hr, fm, ad, t, o, k)
              WHERE x.o = 'created'
              ORDER BY x.k
        ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
        RETURNING id, job_id, vnis, nodes, uid, created_by),
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
               FROM ins ORDER BY ins.id)
    SELECT count(*) INTO made FROM ins;
    IF made <> (SELECT count(*) FROM unnest(outcome) o WHERE o = 'created') THEN
        -- Only a writer that bypasses the job locks gets here; the whole
        -- group rolls back and the caller may retry.
        RAISE EXCEPTION 'a job gained an active reservation while reserving'
            USING ERRCODE = '40001';
    END IF;
    RETURN QUERY SELECT * FROM vnib_batch_rows(outcome, rid, detail);
END $$;

-- End the quarantine of reservations p_id[k] (of job p_job[k]) at once:
-- their VNIs leave vni_holds and join the tail of the free queue (those
-- of the pool in force), lowest first within each, in item order; each
-- is released, with event p_action[k].  p_requested[k]: the release was
-- requested now (the reservation was active).  vnib_end_quarantine is
-- this for one reservation.
CREATE FUNCTION vnib_end_quarantines(p_id bigint[], p_job text[],
                                     p_actor text, p_action text[],
                                     p_requested boolean[], p_forced boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH freed AS (DELETE FROM vni_holds WHERE reservation_id = ANY (p_id)
                   RETURNING vni, reservation_id),
    queued AS (
        INSERT INTO vni_free (vni, seq)
             SELECT f.vni, nextval('vni_free_seq')
               FROM (SELECT freed.vni, array_position(p_id, freed.reservation_id) AS k
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
                        ELSE r.release_requested_at END
         WHERE r.id = ANY (p_id)
        RETURNING r.id)
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         SELECT x.id, x.job, p_actor, x.action,
                jsonb_build_object('quarantined', NOT x.req, 'forced', p_forced)
           FROM unnest(p_id, p_job, p_action, p_requested)
                WITH ORDINALITY x(id, job, action, req, k)
          ORDER BY x.k;
END $$;

CREATE OR REPLACE FUNCTION vnib_end_quarantine(p_id bigint, p_job text,
                                               p_actor text, p_action text,
                                               p_requested boolean,
                                               p_forced boolean)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    PERFORM vnib_end_quarantines(ARRAY[p_id], ARRAY[p_job], p_actor,
                                 ARRAY[p_action], ARRAY[p_requested], p_forced);
END $$;

-- Release each job of a group, as vnib_release does one: item k is job
-- p_job[k], reservation p_res[k] of it when not NULL.  p_actor and
-- p_force are the group's (the broker groups only releases that share
-- them).  outcome: not_found | releasing | released | already_releasing |
-- already_released | busy (as in vnib_reserve_batch; nothing done).
CREATE FUNCTION vnib_release_batch(p_job text[], p_res bigint[],
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
    got boolean[] := vnib_jobs_lock(p_job, p_wait);
BEGIN
    -- Which reservation each job means: p_res, else its active one, else
    -- the newest still quarantined, else the newest; locked.
    SELECT array_agg(r.id ORDER BY x.k), array_agg(r.state ORDER BY x.k),
           array_agg(r.hwcoll_state ORDER BY x.k),
           array_agg(EXISTS (SELECT 1 FROM node_reports nr
                              WHERE nr.reservation_id = r.id
                                AND nr.cxi <> 'destroyed') ORDER BY x.k)
      INTO rid, st, hw, holding
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
        -- Manager queue whatever the quarantine of its VNIs does.
        IF st[k] = 'active' AND hw[k] IN ('reserved', 'pending') THEN
            UPDATE reservations
               SET hwcoll_state = 'releasing', hwcoll_updated_at = now()
             WHERE id = rid[k] AND hwcoll_state IN ('reserved', 'pending');
            IF FOUND THEN
                PERFORM vnib_fm_enqueue(rid[k], p_job[k], 'delete_job', NULL);
            END IF;
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
            p_force);
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
    RETURN QUERY SELECT * FROM vnib_batch_rows(outcome, rid,
                                               array_fill(NULL::text, ARRAY[n]));
END $$;

-- ---- the single-job functions, as groups of one -----------------------------

CREATE FUNCTION vnib_batch_single(b vnib_batch_row)
RETURNS vnib_row LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW(b.outcome, b.id, b.job_id, b.state, b.uid, b.username, b.nodes,
               b.node_count, b.vni_count, b.vnis, b.empty_reason, b.tcs_mask,
               b.created_at, b.created_by, b.release_requested_at,
               b.released_at, b.released_by, b.forced, b.counts,
               b.hwcoll_mode, b.hwcoll_state, b.hwcoll_reason, b.fm_job_id,
               b.addrs_per_job, b.session_token)::vnib_row
$$;

CREATE OR REPLACE FUNCTION vnib_reserve(
    p_job text, p_uid bigint, p_user text, p_nodes text, p_node_count integer,
    p_vni_count integer, p_tcs smallint, p_empty_reason text, p_actor text,
    p_pool_lo integer[], p_pool_hi integer[],
    p_rprefix text[], p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[],
    p_rhi bigint[], p_hwcoll_mode text, p_hwcoll_state text,
    p_hwcoll_reason text, p_fm_job_id text, p_addrs integer)
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

-- ---- the leader's follow-up ---------------------------------------------------

-- The leader looks every few seconds for reserves that timed out (the FM
-- may have completed them late) and for pending ones nobody completed
-- (store.c, sql_hwcoll_work).  Without an index that read every
-- reservation, the history included; this one holds only the few rows it
-- looks for, in the order it takes them.
CREATE INDEX reservations_hwcoll_followup ON reservations (id)
    WHERE (hwcoll_state = 'unavailable' AND hwcoll_reason LIKE 'timed out%')
       OR (hwcoll_state = 'pending' AND hwcoll_due IS NULL);
