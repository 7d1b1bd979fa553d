-- 0011: the release queue's claims scan only due operations, and its own
-- bookkeeping commits without waiting for the WAL flush.
--
-- A claim took the due operations in id order, so with a backlog every
-- claim walked past the operations other workers had leased (their
-- not_before in the future, their ids the oldest) before it found a due
-- one: the cost of a claim grew with the queue (9 ms a claim measured
-- with a few thousand queued).  It now takes them in (not_before, id)
-- order, a range of the fm_queue_due index that leased operations are
-- outside of.  A retried operation (not_before pushed back) now also
-- waits behind the fresh ones due before it, instead of ahead of them.
--
-- A release-queue worker's claim (a lease on a few operations) and its
-- confirmation of what the FM did are bookkeeping that nobody was told
-- about: if a crash loses either, the operation comes due again and is
-- repeated, which the FM answers harmlessly (a deleted job's 404 counts
-- as done).  So these transactions set synchronous_commit off for
-- themselves (set_config(..., true) lasts to the end of the transaction,
-- which is where it counts) and do not each wait for a disk flush.  What a
-- client is told (a reservation, its release, its hwcoll state) still
-- commits durably before the reply.  The deferred-reserve claim is the
-- same kind of lease.
CREATE OR REPLACE FUNCTION vnib_fm_claim(p_limit integer, p_lease_s integer)
RETURNS TABLE (q_id bigint, q_reservation bigint, q_fm_job_id text, q_op text,
               q_step text, q_attempts integer)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN QUERY
    UPDATE fm_queue q
       SET not_before = now() + make_interval(secs => p_lease_s)
     WHERE q.id IN (SELECT id FROM fm_queue WHERE not_before <= now()
                     ORDER BY not_before, id LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
    RETURNING q.id, q.reservation_id, q.fm_job_id, q.op, q.step_id, q.attempts;
END $$;

CREATE OR REPLACE FUNCTION vnib_fm_done_many(p_ids bigint[], p_actor text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    q record;
    n integer := 0;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR q IN DELETE FROM fm_queue
              WHERE id IN (SELECT id FROM fm_queue
                            WHERE id = ANY (p_ids) ORDER BY id FOR UPDATE)
             RETURNING reservation_id, op LOOP
        n := n + 1;
        IF q.op = 'delete_job' AND q.reservation_id IS NOT NULL THEN
            PERFORM vnib_hwcoll_set(q.reservation_id, 'released', NULL, NULL,
                                    p_actor);
        END IF;
    END LOOP;
    RETURN n;
END $$;
