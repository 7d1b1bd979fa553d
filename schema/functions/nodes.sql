-- SPDX-License-Identifier: GPL-2.0-or-later
-- Node reports: what a node's agent says about the CXI services of a
-- job's reservation (or a step's), the drain of a node whose CXI
-- operation failed, and the end of a quarantine once its last holder
-- confirmed.  The broker writes the reports that arrive together in
-- groups (vnib_report_batch); vnib_report and vnib_step_report (steps.sql)
-- are groups of one, kept for older brokers.

-- Record a group of node reports, each as it would be recorded alone:
-- item k is node p_node[k]'s report p_cxi[k] (creating, created,
-- destroyed or failed) about job p_job[k]'s CXI services, or its step
-- p_step[k]'s when that is not NULL (the step's key "<job>#<step>",
-- schema/0017), with the k-th of each other array.  One vnib_row per
-- item, in item order.
--
-- Which reservation an item lands on: p_res[k] for destroyed and failed
-- when given (a spooled report lands there however late); else for those
-- the newest of the key that this node still holds (a requeued job's old
-- services are reported after the new reservation exists), else the
-- newest; p_res[k], when given, must be it.  The node (prefix, suffix,
-- width, number: its key split at its last digits) must be in the
-- reservation's ranges, probed backwards from its number through
-- reservation_ranges_member (schema/0019).  An event is recorded only when
-- the report changes something (schema/0006); a failed one drains its
-- node.  outcome: ok | not_found | not_member | stale_reservation |
-- invalid_transition (previous state in counts) | job_not_active.  A
-- refused item's row has only the outcome, the reservation's id and
-- counts.
--
-- Each reservation the group lands on, and the job of each step it lands
-- on, is locked once, in id order: shared while every item on it is
-- creating or created (thousands of nodes at a job's start proceed
-- together, still excluding a release), exclusive otherwise (destroyed
-- and failed may end its quarantine, and a step's end may end its job's).
-- Everything else that locks several reservations waits for them in id
-- order too (vnib_release_batch, vnib_hwcoll_set_many, a job's row before
-- its steps'), or skips those locked (the sweeper), so no two wait for
-- each other in a cycle.  A reservation's quarantine is checked once,
-- after all its items are filed: it ends when it is releasing, one of its
-- items was destroyed, and no node or step holds it any more.  A group
-- names each node of a key at most once (22023): two reports of one node
-- go to two groups, in order.
CREATE OR REPLACE FUNCTION vnib_report_batch(
    p_job text[], p_step text[], p_node text[], p_cxi text[],
    p_services jsonb[], p_message text[], p_actor text[], p_prefix text[],
    p_suffix text[], p_width smallint[], p_num bigint[], p_res bigint[])
RETURNS SETOF vnib_row LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
DECLARE
    n integer := coalesce(cardinality(p_node), 0);
    key text[];
    rid bigint[];    -- the reservation each item lands on
    par bigint[];    -- a step item's job reservation
    st text[];       -- each one's state, once locked
    member boolean[];
    prev text[];
    prev_svc jsonb[];
    prev_msg text[];
    outcome text[];
    changed boolean[];
    l record;
    q record;
    k integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    key := ARRAY(SELECT CASE WHEN u.s IS NULL THEN u.j ELSE u.j || '#' || u.s END
                   FROM unnest(p_job, p_step) WITH ORDINALITY u(j, s, k)
                  ORDER BY u.k);
    IF (SELECT count(*) FROM (SELECT DISTINCT x.key, x.node
                                FROM unnest(key, p_node) x(key, node)) d) <> n THEN
        RAISE EXCEPTION 'a group names one node of one reservation twice'
            USING ERRCODE = '22023';
    END IF;

    -- Where each item lands, and a step's job.
    SELECT array_agg(r.id ORDER BY x.k), array_agg(p.parent_id ORDER BY x.k)
      INTO rid, par
      FROM unnest(key, p_node, p_cxi, p_res, p_step)
           WITH ORDINALITY x(key, node, cxi, res, step, k)
      LEFT JOIN LATERAL (
          SELECT coalesce(
              CASE WHEN x.cxi IN ('destroyed', 'failed') AND x.res IS NOT NULL THEN
                       (SELECT c.id FROM reservations c
                         WHERE c.id = x.res AND c.job_id = x.key)
                   WHEN x.cxi IN ('destroyed', 'failed') THEN
                       (SELECT c.id FROM reservations c
                          JOIN node_reports nr ON nr.reservation_id = c.id
                         WHERE c.job_id = x.key AND nr.node = x.node
                           AND nr.cxi <> 'destroyed'
                         ORDER BY c.id DESC LIMIT 1)
              END,
              (SELECT c.id FROM reservations c WHERE c.job_id = x.key
                ORDER BY c.id DESC LIMIT 1)) AS id) r ON true
      LEFT JOIN LATERAL (
          SELECT c.parent_id FROM reservations c
           WHERE x.step IS NOT NULL AND c.job_id = x.key
             AND (x.res IS NULL OR c.id = x.res)
           ORDER BY c.id DESC LIMIT 1) p ON true;

    -- Lock each once, in id order.
    FOR l IN SELECT u.id, bool_or(u.excl) AS excl
               FROM (SELECT v.r, v.c IN ('destroyed', 'failed')
                       FROM unnest(rid, p_cxi) v(r, c)
                     UNION ALL
                     SELECT v.r, v.c IN ('destroyed', 'failed')
                       FROM unnest(par, p_cxi) v(r, c)) u(id, excl)
              WHERE u.id IS NOT NULL
              GROUP BY u.id ORDER BY u.id LOOP
        IF l.excl THEN
            PERFORM 1 FROM reservations WHERE id = l.id FOR UPDATE;
        ELSE
            PERFORM 1 FROM reservations WHERE id = l.id FOR SHARE;
        END IF;
    END LOOP;

    -- Their states now that they are locked (a reservation purged
    -- meanwhile is not found), and whether each node is in its ranges:
    -- the first range read backwards from the node's number.
    SELECT array_agg(c.state ORDER BY x.k), array_agg(c.id ORDER BY x.k),
           array_agg(g.hit IS NOT NULL ORDER BY x.k)
      INTO st, rid, member
      FROM unnest(rid, p_prefix, p_suffix, p_width, p_num)
           WITH ORDINALITY x(id, prefix, suffix, width, num, k)
      LEFT JOIN reservations c ON c.id = x.id
      LEFT JOIN LATERAL (
          SELECT true AS hit FROM reservation_ranges g
           WHERE g.reservation_id = c.id AND g.prefix = x.prefix
             AND g.suffix = x.suffix AND g.width = x.width
             AND g.lo <= x.num AND g.hi >= x.num
           ORDER BY g.lo DESC LIMIT 1) g ON true;

    -- The reports of the members, locked in key order, then read.
    PERFORM 1
       FROM unnest(rid, p_node, p_res, member) x(id, node, res, m)
       JOIN node_reports nr ON nr.reservation_id = x.id AND nr.node = x.node
      WHERE x.m AND (x.res IS NULL OR x.res = x.id)
      ORDER BY nr.reservation_id, nr.node
        FOR UPDATE OF nr;
    SELECT array_agg(nr.cxi ORDER BY x.k), array_agg(nr.services ORDER BY x.k),
           array_agg(nr.message ORDER BY x.k)
      INTO prev, prev_svc, prev_msg
      FROM unnest(rid, p_node) WITH ORDINALITY x(id, node, k)
      LEFT JOIN node_reports nr ON nr.reservation_id = x.id AND nr.node = x.node;

    SELECT array_agg(CASE WHEN x.id IS NULL THEN 'not_found'
                          WHEN x.res IS NOT NULL AND x.res <> x.id
                              THEN 'stale_reservation'
                          WHEN NOT x.m THEN 'not_member'
                          WHEN x.st <> 'active' AND x.cxi IN ('creating', 'created')
                              THEN 'job_not_active'
                          -- destroyed is final: anything else after it
                          -- would go backwards
                          WHEN x.pv = 'destroyed' AND x.cxi <> 'destroyed'
                              THEN 'invalid_transition'
                          ELSE 'ok' END ORDER BY x.k)
      INTO outcome
      FROM unnest(rid, p_res, member, st, p_cxi, prev)
           WITH ORDINALITY x(id, res, m, st, cxi, pv, k);
    SELECT array_agg(x.o = 'ok'
                     AND (x.pv IS NULL OR x.pv IS DISTINCT FROM x.cxi
                          OR x.psvc IS DISTINCT FROM x.svc
                          OR x.pmsg IS DISTINCT FROM x.msg) ORDER BY x.k)
      INTO changed
      FROM unnest(outcome, prev, p_cxi, prev_svc, p_services, prev_msg, p_message)
           WITH ORDINALITY x(o, pv, cxi, psvc, svc, pmsg, msg, k);

    INSERT INTO node_reports (reservation_id, node, cxi, services, message)
         SELECT x.id, x.node, x.cxi, x.svc, x.msg
           FROM unnest(rid, p_node, p_cxi, p_services, p_message, outcome)
                WITH ORDINALITY x(id, node, cxi, svc, msg, o, k)
          WHERE x.o = 'ok'
          ORDER BY x.k
    ON CONFLICT (reservation_id, node) DO UPDATE
       SET cxi = excluded.cxi, services = excluded.services,
           message = excluded.message, updated_at = now();
    INSERT INTO events (reservation_id, job_id, node, actor, action, detail)
         SELECT x.id, x.key, x.node, x.actor, 'report',
                jsonb_build_object('cxi', x.cxi, 'previous', x.pv,
                                   'services', x.svc, 'message', x.msg)
           FROM unnest(rid, key, p_node, p_actor, p_cxi, prev, p_services,
                       p_message, changed)
                WITH ORDINALITY x(id, key, node, actor, cxi, pv, svc, msg, ch, k)
          WHERE x.ch
          ORDER BY x.k;

    -- A failed operation drains its node: one at a time, in item order,
    -- since two of a group may name the same node (two of its jobs).
    FOR k IN SELECT x.k FROM unnest(outcome, p_cxi) WITH ORDINALITY x(o, cxi, k)
              WHERE x.o = 'ok' AND x.cxi = 'failed' ORDER BY x.k LOOP
        IF changed[k] OR NOT EXISTS (SELECT 1 FROM nodes
                                      WHERE name = p_node[k] AND drained) THEN
            INSERT INTO nodes (name, drained, drained_reason, drained_at,
                               updated_by)
                 VALUES (p_node[k], true,
                         coalesce(p_message[k], 'CXI operation failed'), now(),
                         p_actor[k])
            ON CONFLICT (name) DO UPDATE
               SET drained = true, drained_reason = excluded.drained_reason,
                   drained_at = now(), updated_by = excluded.updated_by;
            INSERT INTO events (reservation_id, job_id, node, actor, action,
                                detail)
                 VALUES (rid[k], key[k], p_node[k], p_actor[k], 'drain',
                         jsonb_build_object('reason',
                                            coalesce(p_message[k],
                                                     'CXI operation failed')));
        END IF;
    END LOOP;

    -- Each reservation with destroyed items, once, in id order (a job
    -- before its steps; a step's end ends its job's quarantine too, in
    -- vnib_end_quarantines): moved is how many of its nodes this group
    -- moved to destroyed, which its destroyed_count grows by (a group
    -- names a node once, and destroyed is final, so a node counts once:
    -- schema/0021) before the holders are counted; its quarantine ends
    -- with the last holder, the event naming the actor of its last item.
    FOR q IN SELECT x.id, (array_agg(x.actor ORDER BY x.k DESC))[1] AS actor,
                    count(*) FILTER (WHERE x.pv IS DISTINCT FROM 'destroyed')
                        AS moved
               FROM unnest(rid, p_cxi, p_actor, outcome, prev)
                    WITH ORDINALITY x(id, cxi, actor, o, pv, k)
              WHERE x.o = 'ok' AND x.cxi = 'destroyed'
              GROUP BY x.id ORDER BY x.id LOOP
        IF q.moved > 0 THEN
            UPDATE reservations SET destroyed_count = destroyed_count + q.moved
             WHERE id = q.id;
        END IF;
        SELECT id, job_id, state INTO l FROM reservations WHERE id = q.id;
        IF l.state = 'releasing' AND NOT vnib_nodes_holding(q.id) THEN
            PERFORM vnib_end_quarantine(q.id, l.job_id, q.actor,
                                        'quarantine_end', false, false);
        END IF;
    END LOOP;

    -- Nodes need no cleanup counts back, and for a large job computing
    -- them on each of thousands of reports would be quadratic.
    RETURN QUERY
    SELECT x.o, x.id, r.job_id, r.state, r.uid, r.username, r.nodes,
           r.node_count, r.vni_count, array_to_string(r.vnis, ','),
           r.empty_reason, r.tcs_mask, vnib_ts(r.created_at), r.created_by,
           vnib_ts(r.release_requested_at), vnib_ts(r.released_at),
           r.released_by, r.forced,
           CASE WHEN x.o = 'invalid_transition' THEN x.pv END,
           r.hwcoll_mode, r.hwcoll_state, r.hwcoll_reason, r.fm_job_id,
           r.addrs_per_job, encode(r.session_token, 'hex')
      FROM unnest(outcome, rid, prev) WITH ORDINALITY x(o, id, pv, k)
      LEFT JOIN reservations r ON x.o = 'ok' AND r.id = x.id
     ORDER BY x.k;
END $$;

-- Node p_node's report about job p_job's CXI services, as a group of one
-- (vnib_report_batch); kept for older brokers.
CREATE OR REPLACE FUNCTION vnib_report(
    p_job text, p_node text, p_cxi text, p_services jsonb, p_message text,
    p_actor text, p_prefix text, p_suffix text, p_width smallint, p_num bigint,
    p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    o vnib_row;
BEGIN
    SELECT * INTO o FROM vnib_report_batch(
        ARRAY[p_job], ARRAY[NULL::text], ARRAY[p_node], ARRAY[p_cxi],
        ARRAY[p_services], ARRAY[p_message], ARRAY[p_actor], ARRAY[p_prefix],
        ARRAY[p_suffix], ARRAY[p_width], ARRAY[p_num], ARRAY[p_res]);
    RETURN o;
END $$;
