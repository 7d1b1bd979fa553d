-- SPDX-License-Identifier: GPL-2.0-or-later
-- 0021: presumed reservations, leases and the cool-down of their VNIs
-- (issue 43, docs/node-path.md).
--
-- A reservation made with a lease ("lease": true) is presumed: every node
-- of its node list counts as holding CXI services from its reserve on,
-- until that node reports destroyed, so that a node needs no report at
-- job start.  Its quarantine waits while destroyed_count < node_count:
-- destroyed_count is how many of its nodes' reports moved to destroyed
-- (vnib_report adds one when a node's report becomes destroyed, which is
-- final, so a repeat never counts twice), read with the row the report
-- locks anyway: one row, not a count over 11,136 reports.  Reservations
-- without a lease keep the old rule (only nodes that reported hold).
--
-- A lease names VNIs and travels with the scheduler's launch, where a
-- job's owner may keep it and replay it after a requeue.  So a VNI a
-- lease named is handed out again only once every such lease expired:
-- lease_until is the latest expiry of the leases signed for the
-- reservation (a retry that signs another moves it on; a step's lease,
-- which names its job's VNIs too, moves its job's), lease_skew_s the
-- clock difference the broker allowed the nodes (lease.max_skew_s), and
-- a VNI whose quarantine ends joins the free queue, in its place, with
-- usable_at = lease_until + lease_skew_s.  Reserves pass over queued
-- VNIs whose usable_at is still to come.  A VNI of a reservation without
-- a lease is usable at once ('-infinity').
--
-- destroyed_count is counted from this migration on; the live
-- reservations' are backfilled here from their reports.

ALTER TABLE reservations
    ADD COLUMN presumed boolean NOT NULL DEFAULT false,
    ADD COLUMN destroyed_count integer NOT NULL DEFAULT 0,
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN lease_skew_s integer NOT NULL DEFAULT 0;

UPDATE reservations r
   SET destroyed_count = d.n
  FROM (SELECT n.reservation_id, count(*) AS n FROM node_reports n
          JOIN reservations x ON x.id = n.reservation_id
         WHERE x.state <> 'released' AND n.cxi = 'destroyed'
         GROUP BY n.reservation_id) d
 WHERE r.id = d.reservation_id;

ALTER TABLE vni_free
    ADD COLUMN usable_at timestamptz NOT NULL DEFAULT '-infinity';

-- The cooling VNIs, for GET /v1/pool: only those a lease named are
-- indexed, so a reserve of a VNI no lease named pays nothing for it.
CREATE INDEX vni_free_cooling ON vni_free (usable_at)
    WHERE usable_at > '-infinity';

COMMENT ON COLUMN reservations.presumed IS
    'every node of the node list holds services until it reports destroyed (a lease was asked for)';
COMMENT ON COLUMN reservations.destroyed_count IS
    'nodes whose report moved to destroyed (each once)';
COMMENT ON COLUMN reservations.lease_until IS
    'the latest expiry of a lease naming its VNIs; NULL: no lease';
COMMENT ON COLUMN reservations.lease_skew_s IS
    'lease.max_skew_s when its leases were signed: added to lease_until for its VNIs';
COMMENT ON COLUMN vni_free.usable_at IS
    'not handed out before: its last lease expired, plus the clock skew allowed';
