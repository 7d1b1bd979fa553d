-- 0010: the release queue confirms a worker's pass in one transaction.
--
-- A worker claims up to a few due operations at once (vnib_fm_claim) but
-- confirmed each in a transaction of its own (vnib_fm_done), so a job
-- with hardware collectives cost its release queue one commit per FM
-- call on top of the claim.  vnib_fm_done_many forgets every operation a
-- pass completed and records the deleted jobs' reservations as hwcoll
-- released, in one call.  vnib_fm_done stays for brokers of schema 9
-- during a rolling upgrade.
CREATE FUNCTION vnib_fm_done_many(p_ids bigint[], p_actor text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    q record;
    n integer := 0;
BEGIN
    -- In id order, as claims take them, so that two passes that confirm
    -- overlapping sets (a lease ran out) lock the rows in one order.
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
