-- 0016: why a reservation has no multicast reservation is a code, not a
-- sentence.
--
-- A reserve that timed out was told apart from other failures by its
-- reason's text (hwcoll_reason LIKE 'timed out%'): vnib_hwcoll_set let a
-- follow-up refine only such a reason, vnib_purge kept such rows, and the
-- leader's follow-up query and its index (0008) looked for them.  Reworded,
-- the sentence would have silently stopped the recovery of reservations
-- the Fabric Manager completes late.  hwcoll_cause holds the cause as one
-- of a fixed set of codes (server/hwstate.c names the same set, and a unit
-- test checks the two lists agree); hwcoll_reason stays what clients read.
-- NULL: no failure (pending, reserved, released, lost, disabled,
-- not_eligible).
ALTER TABLE reservations
    ADD COLUMN hwcoll_cause text
        CONSTRAINT reservations_hwcoll_cause_check
        CHECK (hwcoll_cause IN ('timeout', 'unreachable', 'no_addresses',
                                'refused', 'timeout_no_reservation',
                                'timeout_late_deleted', 'job_ended'));

-- The cause of a reason written before this migration, or by a broker that
-- does not pass one (the five-argument vnib_hwcoll_set, kept for brokers of
-- schema 15 during a rolling upgrade): the fixed phrases those brokers
-- write.  Only for those; new brokers pass the cause.
CREATE FUNCTION vnib_hwcoll_cause_of(p_state text, p_reason text)
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

UPDATE reservations SET hwcoll_cause = vnib_hwcoll_cause_of(hwcoll_state,
                                                            hwcoll_reason)
 WHERE hwcoll_state = 'unavailable';

-- The leader's follow-up (0008), by the cause.
DROP INDEX reservations_hwcoll_followup;
CREATE INDEX reservations_hwcoll_followup ON reservations (id)
    WHERE (hwcoll_state = 'unavailable' AND hwcoll_cause = 'timeout')
       OR (hwcoll_state = 'pending' AND hwcoll_due IS NULL);

-- As vnib_hwcoll_set of 0003, with the cause: recorded with the reason,
-- and a follow-up may refine only a reserve whose cause is a timeout.
CREATE FUNCTION vnib_hwcoll_set(p_id bigint, p_state text, p_cause text,
                                p_reason text, p_token bytea, p_actor text)
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
CREATE OR REPLACE FUNCTION vnib_hwcoll_set(p_id bigint, p_state text,
                                           p_reason text, p_token bytea,
                                           p_actor text)
RETURNS vnib_row LANGUAGE sql AS $$
    SELECT vnib_hwcoll_set(p_id, p_state,
                           vnib_hwcoll_cause_of(p_state, p_reason), p_reason,
                           p_token, p_actor)
$$;

-- As vnib_hwcoll_set_many of 0012, with the causes.
CREATE FUNCTION vnib_hwcoll_set_many(p_ids bigint[], p_states text[],
                                     p_causes text[], p_reasons text[],
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

-- As in 0007, keeping the timed-out reserves by their cause.
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
