-- 0012: a job with hardware collectives costs fewer transactions and
-- fewer row versions.
--
-- Measured per eligible reserve+release pair before this step (8 clients,
-- fmsim answering at once): about 0.9 claim, 0.45 done and 1 hwcoll_set
-- transaction on top of the grouped reserve and release, and 3.8 updates
-- of the reservation's row (a plain pair makes 1), none of them HOT.
--
-- vnib_fm_next: a release-queue worker confirms what the FM did in its
-- last pass and claims its next operations in one call (both are the
-- queue's own bookkeeping, committed asynchronously as 0011 explains).
-- vnib_fm_claim and vnib_fm_done_many stay for brokers of schema 11
-- during a rolling upgrade.
-- A claim took "WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)",
-- and one was seen to lease more than n operations (tests/integration/
-- 0400, a database restart mid-queue, workers claiming side by side):
-- nothing stops the executor from running such a subquery more than once,
-- each run skipping what the last one locked.  The claimed ids are now
-- taken once, in a materialised CTE (and the worker never trusts the
-- count either).
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

CREATE FUNCTION vnib_fm_next(p_done bigint[], p_actor text, p_limit integer,
                             p_lease_s integer)
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

-- vnib_hwcoll_set_many: the FM outcomes of concurrent reserves recorded in
-- one transaction (the broker groups them as it groups reserves), one row
-- per item in the order given.  Items are applied in reservation-id order,
-- so that two groups never lock the same rows in opposite orders.  Tokens
-- are hex (NULL for none).  An item's outcome is vnib_hwcoll_set's: ok,
-- not_active or unchanged.
CREATE FUNCTION vnib_hwcoll_set_many(p_ids bigint[], p_states text[],
                                     p_reasons text[], p_tokens text[],
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

-- A release of a job with hardware collectives changed its reservation
-- twice in one transaction (hwcoll_state to releasing, then state), so it
-- wrote two row versions with a full set of index entries each.  The
-- release now sets both in one UPDATE: vnib_end_quarantines takes which
-- items' multicast reservations are released with them (p_hw_release);
-- its six-argument form stays for brokers of schema 11 and means none.
CREATE FUNCTION vnib_end_quarantines(p_id bigint[], p_job text[],
                                     p_actor text, p_action text[],
                                     p_requested boolean[], p_forced boolean,
                                     p_hw_release boolean[])
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

CREATE OR REPLACE FUNCTION vnib_end_quarantines(p_id bigint[], p_job text[],
                                                p_actor text, p_action text[],
                                                p_requested boolean[],
                                                p_forced boolean)
RETURNS void LANGUAGE sql AS $$
    SELECT vnib_end_quarantines(p_id, p_job, p_actor, p_action, p_requested,
                                p_forced,
                                array_fill(false, ARRAY[cardinality(p_id)]))
$$;

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
    RETURN QUERY SELECT * FROM vnib_batch_rows(outcome, rid,
                                               array_fill(NULL::text, ARRAY[n]));
END $$;
