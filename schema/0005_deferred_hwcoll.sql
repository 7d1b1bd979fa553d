-- 0005: Fabric Manager reserves deferred to the background.
--
-- A reserve calls the FM on the request's own thread, but only so many at
-- once (hwcoll.request_concurrency): past that bound the reservation is
-- answered at once with hwcoll state "pending" and marked deferred here,
-- and the release queue's workers, on any replica, claim it and make the
-- FM call.  The mark lives in the database, so a broker restart loses
-- nothing: whoever runs next claims it.
--
-- hwcoll_due is NULL for a reservation that is not deferred; otherwise it
-- is when a worker may claim it: now() when deferred, and a lease in the
-- future once claimed, so that a worker that died mid-call is replaced
-- when its lease ends.  hwcoll_attempts counts the claims: a claim after
-- the first asks the FM first whether an earlier one got through.

ALTER TABLE reservations ADD COLUMN hwcoll_due timestamptz;
ALTER TABLE reservations ADD COLUMN hwcoll_attempts integer NOT NULL DEFAULT 0;
CREATE INDEX reservations_hwcoll_deferred ON reservations (hwcoll_due)
    WHERE hwcoll_state = 'pending' AND hwcoll_due IS NOT NULL;

-- Mark pending reservation p_id deferred, with p_reason, and wake the
-- workers.  Outcome 'ok', or 'unchanged' when it is no longer pending.
CREATE FUNCTION vnib_hwcoll_defer(p_id bigint, p_reason text, p_actor text)
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
-- seconds; never waits on another claimer.
CREATE FUNCTION vnib_hwcoll_claim(p_limit integer, p_lease_s integer)
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
