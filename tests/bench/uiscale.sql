-- SPDX-License-Identifier: GPL-2.0-or-later
-- The event history of the `uiscale` bench scenario (tests/bench/run.sh,
-- tests/bench/uiscale.py): the audit trail of :jobs jobs that came and
-- went over the last week on 4 nodes each of an 11,136-node cluster
-- (nid000001 .. nid011136), written with INSERT ... SELECT rather than
-- through the API, in rows as the broker's functions leave them
-- (vnib_reserve, vnib_report of schema/0009, the release into quarantine
-- and vnib_end_quarantine): per job a reserve, then per node a report
-- creating and created (with the node and its services), the release
-- into quarantine, the reports destroyed, and the quarantine_end that the
-- last of them made; 15 events a job, in that id order.
-- Only events: their reservations were purged since (the broker keeps the
-- trail longer than the rows), and the scenario's live state (active,
-- quarantined, drained) is made through the API after this load, so
-- that its events are the newest, as on a broker running a while.
--
-- Loaded before the broker starts, into a fresh database, in one
-- transaction (psql -1); the caller runs VACUUM ANALYZE after.  Only this
-- file and uiscale.py know the columns: when a migration changes events,
-- adjust here.

SET synchronous_commit = off;

INSERT INTO events (at, reservation_id, job_id, node, actor, action, detail)
     SELECT e.at, 10000000 + s.j, 'old' || s.j, e.node, e.actor, e.action,
            e.detail
       FROM (SELECT j, (j * 37) % 11133 + 1 AS k,
                    now() - interval '7 days'
                    + (interval '7 days' - interval '1 hour') * j / :jobs AS t
               FROM generate_series(1, :jobs) j) s
      CROSS JOIN LATERAL (
             SELECT 0 AS ord, s.t AS at, NULL::text AS node,
                    'slurmctld' AS actor, 'reserve' AS action,
                    jsonb_build_object('vnis', ARRAY[1024 + s.j % 64512],
                                       'nodes', 'nid[' || lpad(s.k::text, 6, '0')
                                                || '-' || lpad((s.k + 3)::text, 6, '0')
                                                || ']',
                                       'uid', 1000 + s.j % 500) AS detail
             UNION ALL
             SELECT CASE c.step WHEN 2 THEN 10 + n.n ELSE 1 + 4 * c.step + n.n END,
                    s.t + interval '1 second' * (1 + c.step * 600),
                    'nid' || lpad((s.k + n.n)::text, 6, '0'),
                    'node:nid' || lpad((s.k + n.n)::text, 6, '0'), 'report',
                    jsonb_build_object('cxi', c.cxi, 'previous', c.prev,
                                       'services', CASE WHEN c.cxi = 'destroyed'
                                                        THEN '[]'::jsonb
                                                        ELSE jsonb_build_array(
                                                            jsonb_build_object('device', 'cxi0',
                                                                               'svc_id', 100 + n.n))
                                                   END,
                                       'message', NULL)
               FROM (VALUES (0, 'creating', NULL), (1, 'created', 'creating'),
                            (2, 'destroyed', 'created')) c(step, cxi, prev)
              CROSS JOIN generate_series(0, 3) n(n)
             UNION ALL
             SELECT 9, s.t + interval '1199 seconds', NULL, 'slurmctld', 'release',
                    '{"quarantined": true}'::jsonb
             UNION ALL
             SELECT 14, s.t + interval '1201 seconds', NULL, 'node:nid'
                    || lpad((s.k + 3)::text, 6, '0'), 'quarantine_end',
                    '{"quarantined": false, "forced": false}'::jsonb
             ) e
      ORDER BY s.j, e.ord;
