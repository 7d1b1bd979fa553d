-- SPDX-License-Identifier: GPL-2.0-or-later
-- Node reports: what a node's agent says about the CXI services of a
-- job's reservation, the drain of a node whose CXI operation failed, and
-- the end of a quarantine once its last holder confirmed.

-- Record node p_node's report about job p_job's CXI services.  Which
-- reservation: p_res for destroyed and failed when given (a spooled
-- report lands there however late); else for those the job's newest that
-- this node still holds (a requeued job's old services are reported
-- after the new reservation exists), else the newest; p_res, when given,
-- must be it.  The node (prefix, suffix, width, number: its key split at
-- its last digits) must be in the reservation's ranges, probed backwards
-- from its number through reservation_ranges_member (schema/0019).  An
-- event is recorded only when the report changes something (schema/0006).
-- A node's first destroyed adds one to the reservation's destroyed_count,
-- which ends a presumed reservation's quarantine (schema/0021).
-- outcome: ok | not_found | not_member | stale_reservation |
-- invalid_transition (previous state in counts) | job_not_active.
CREATE OR REPLACE FUNCTION vnib_report(
    p_job text, p_node text, p_cxi text, p_services jsonb, p_message text,
    p_actor text, p_prefix text, p_suffix text, p_width smallint, p_num bigint,
    p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_state text;
    prev text;
    prev_services jsonb;
    prev_message text;
    changed boolean;
    nothing vnib_row;
BEGIN
    IF p_cxi IN ('destroyed', 'failed') AND p_res IS NOT NULL THEN
        -- The agent names the reservation whose services it destroyed:
        -- the report lands there, however late (a spooled report arrives
        -- after the job was requeued and reserved again).
        SELECT id, state INTO v_id, v_state FROM reservations
         WHERE id = p_res AND job_id = p_job FOR UPDATE;
    ELSIF p_cxi IN ('destroyed', 'failed') THEN
        SELECT res.id, res.state INTO v_id, v_state
          FROM reservations res JOIN node_reports nr ON nr.reservation_id = res.id
         WHERE res.job_id = p_job AND nr.node = p_node AND nr.cxi <> 'destroyed'
         ORDER BY res.id DESC LIMIT 1 FOR UPDATE OF res;
    END IF;
    IF v_id IS NULL AND p_cxi IN ('creating', 'created') THEN
        -- Job start: thousands of nodes report at once.  A share lock lets
        -- them proceed together while still excluding a concurrent release.
        SELECT id, state INTO v_id, v_state FROM reservations
         WHERE job_id = p_job ORDER BY id DESC LIMIT 1 FOR SHARE;
    ELSIF v_id IS NULL THEN
        SELECT id, state INTO v_id, v_state FROM reservations
         WHERE job_id = p_job ORDER BY id DESC LIMIT 1 FOR UPDATE;
    END IF;
    nothing.outcome := 'not_found';
    IF v_id IS NULL THEN
        RETURN nothing;
    END IF;
    nothing.id := v_id;
    IF p_res IS NOT NULL AND p_res <> v_id THEN
        -- The agent acted on another reservation of this job than the one
        -- its report would land on (a requeue in between): it must look
        -- again rather than record services the broker would misfile.
        nothing.outcome := 'stale_reservation';
        RETURN nothing;
    END IF;
    -- The node's range, read backwards through reservation_ranges_member
    -- from the node's number: the first entry read, for a member.  Not an
    -- EXISTS, which would drop the ORDER BY and read upwards again.
    PERFORM 1 FROM reservation_ranges g
      WHERE g.reservation_id = v_id AND g.prefix = p_prefix
        AND g.suffix = p_suffix AND g.width = p_width
        AND g.lo <= p_num AND g.hi >= p_num
      ORDER BY g.lo DESC LIMIT 1;
    IF NOT FOUND THEN
        nothing.outcome := 'not_member';
        RETURN nothing;
    END IF;
    SELECT cxi, services, message INTO prev, prev_services, prev_message
      FROM node_reports
     WHERE reservation_id = v_id AND node = p_node FOR UPDATE;
    IF v_state <> 'active' AND p_cxi IN ('creating', 'created') THEN
        nothing.outcome := 'job_not_active';
        RETURN nothing;
    END IF;
    -- Destroyed is final: a later "created" would be a report going
    -- backwards (or an agent acting on a job that ended).
    IF prev = 'destroyed' AND p_cxi <> 'destroyed' THEN
        nothing.outcome := 'invalid_transition';
        nothing.counts := prev;
        RETURN nothing;
    END IF;
    INSERT INTO node_reports (reservation_id, node, cxi, services, message)
         VALUES (v_id, p_node, p_cxi, p_services, p_message)
    ON CONFLICT (reservation_id, node) DO UPDATE
       SET cxi = excluded.cxi, services = excluded.services,
           message = excluded.message, updated_at = now();
    -- destroyed is final, so a node counts once (schema/0021); its row is
    -- locked (FOR UPDATE above), so two reports of one node take turns
    -- and the second reads the first's.
    IF p_cxi = 'destroyed' AND prev IS DISTINCT FROM 'destroyed' THEN
        UPDATE reservations SET destroyed_count = destroyed_count + 1
         WHERE id = v_id;
    END IF;
    changed := prev IS NULL OR prev IS DISTINCT FROM p_cxi
               OR prev_services IS DISTINCT FROM p_services
               OR prev_message IS DISTINCT FROM p_message;
    IF changed THEN
        INSERT INTO events (reservation_id, job_id, node, actor, action, detail)
             VALUES (v_id, p_job, p_node, p_actor, 'report',
                     jsonb_build_object('cxi', p_cxi, 'previous', prev,
                                        'services', p_services, 'message', p_message));
    END IF;
    IF p_cxi = 'failed'
       AND (changed OR NOT EXISTS (SELECT 1 FROM nodes
                                    WHERE name = p_node AND drained)) THEN
        INSERT INTO nodes (name, drained, drained_reason, drained_at, updated_by)
             VALUES (p_node, true, coalesce(p_message, 'CXI operation failed'), now(),
                     p_actor)
        ON CONFLICT (name) DO UPDATE
           SET drained = true, drained_reason = excluded.drained_reason,
               drained_at = now(), updated_by = excluded.updated_by;
        INSERT INTO events (reservation_id, job_id, node, actor, action, detail)
             VALUES (v_id, p_job, p_node, p_actor, 'drain',
                     jsonb_build_object('reason', coalesce(p_message, 'CXI operation failed')));
    END IF;
    IF v_state = 'releasing' AND p_cxi = 'destroyed'
       AND NOT vnib_nodes_holding(v_id) THEN
        PERFORM vnib_end_quarantine(v_id, p_job, p_actor, 'quarantine_end',
                                    false, false);
    END IF;
    -- Nodes need no cleanup counts back, and for a large job computing
    -- them on each of thousands of reports would be quadratic.
    RETURN vnib_row('ok', v_id, false);
END $$;
