-- SPDX-License-Identifier: GPL-2.0-or-later
-- The history of the `history` bench scenario (tests/bench/run.sh): a
-- database that has seen :released jobs come and go and holds :quarantined
-- VNIs in quarantine, written with INSERT ... SELECT rather than through
-- the API, in rows as the broker's functions leave them (schema/0002,
-- 0004, and later migrations):
--
--   - :released reservations in state 'released', one VNI each, on nodes
--     n[k-(k+3)] spread over 11,136 nodes, created 400 to 100 days ago and
--     released an hour later, each with its reservation_ranges row and
--     its two events (reserve, release), as vnib_reserve and
--     vnib_end_quarantine write them; their VNIs are free again;
--   - :quarantined reservations in state 'releasing' (released by the
--     scheduler an hour ago, one node still reporting its CXI service
--     'created'), each holding one VNI in vni_holds, with their ranges,
--     node report and events (reserve, release {"quarantined": true}).
--
-- The VNIs they hold leave the free queue here; the broker's
-- vnib_pool_sync at its start adds whatever else is missing.  The
-- loaded tables' secondary indexes are dropped and built again after the
-- load (from pg_indexes, so whatever indexes the schema has): building an
-- index once is several times faster than maintaining it row by row.
-- Run in one transaction (psql -1), then VACUUM ANALYZE.
--
-- Only this file knows the tables' columns: when a migration changes them,
-- this is the one place to adjust.

SET maintenance_work_mem = '256MB';
SET synchronous_commit = off;

CREATE TEMPORARY TABLE bench_saved_indexes ON COMMIT DROP AS
    SELECT i.indexname, i.indexdef
      FROM pg_indexes i
     WHERE i.schemaname = 'public'
       AND i.tablename IN ('reservations', 'reservation_ranges', 'events',
                           'vni_holds', 'node_reports')
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                        WHERE c.conname = i.indexname);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT indexname FROM bench_saved_indexes LOOP
        EXECUTE format('DROP INDEX %I', r.indexname);
    END LOOP;
END $$;

-- The released history.
INSERT INTO reservations (id, job_id, state, uid, username, nodes, node_count,
                          vni_count, vnis, tcs_mask, created_at, created_by,
                          release_requested_at, released_at, released_by,
                          forced, hwcoll_mode, hwcoll_state, hwcoll_updated_at)
     SELECT i, 'h' || i, 'released', 1000 + i % 500, 'user' || i % 500,
            'n[' || k || '-' || k + 3 || ']', 4, 1, ARRAY[1024 + i % 64512],
            10, t, 'bench', t + interval '1 hour', t + interval '1 hour',
            'bench', false, 'auto', 'disabled', t
       FROM (SELECT i, (i * 37) % 11133 + 1 AS k,
                    now() - interval '400 days'
                    + (interval '300 days') * i / :released AS t
               FROM generate_series(1, :released) i) s;

INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
     SELECT i, 'n', '', 0, (i * 37) % 11133 + 1, (i * 37) % 11133 + 4
       FROM generate_series(1, :released) i;

INSERT INTO events (id, at, reservation_id, job_id, actor, action, detail)
     SELECT 2 * id - 1, created_at, id, job_id, 'bench', 'reserve',
            jsonb_build_object('vnis', vnis, 'nodes', nodes, 'uid', uid)
       FROM reservations WHERE id <= :released
     UNION ALL
     SELECT 2 * id, released_at, id, job_id, 'bench', 'release',
            '{"quarantined": false, "forced": false}'::jsonb
       FROM reservations WHERE id <= :released;

-- The quarantined ones: ids after the history, VNIs 1024 .. 1024+q-1.
INSERT INTO reservations (id, job_id, state, uid, username, nodes, node_count,
                          vni_count, vnis, tcs_mask, created_at, created_by,
                          release_requested_at, hwcoll_mode, hwcoll_state,
                          hwcoll_updated_at)
     SELECT :released + j, 'q' || j, 'releasing', 1000, 'bench',
            'n[' || k || '-' || k + 3 || ']', 4, 1, ARRAY[1024 + j - 1], 10,
            now() - interval '2 hours', 'bench', now() - interval '1 hour',
            'auto', 'disabled', now() - interval '2 hours'
       FROM (SELECT j, (j * 37) % 11133 + 1 AS k
               FROM generate_series(1, :quarantined) j) s;

INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
     SELECT :released + j, 'n', '', 0, (j * 37) % 11133 + 1, (j * 37) % 11133 + 4
       FROM generate_series(1, :quarantined) j;

INSERT INTO vni_holds (vni, reservation_id, held_since)
     SELECT 1024 + j - 1, :released + j, now() - interval '2 hours'
       FROM generate_series(1, :quarantined) j;

INSERT INTO node_reports (reservation_id, node, cxi, services, updated_at)
     SELECT :released + j, 'n' || (j * 37) % 11133 + 1, 'created', '[]',
            now() - interval '2 hours'
       FROM generate_series(1, :quarantined) j;

INSERT INTO events (id, at, reservation_id, job_id, actor, action, detail)
     SELECT 2 * :released + 2 * j - 1, now() - interval '2 hours', :released + j,
            'q' || j, 'bench', 'reserve',
            jsonb_build_object('vnis', ARRAY[1024 + j - 1],
                               'nodes', 'n[' || (j * 37) % 11133 + 1 || '-'
                                        || (j * 37) % 11133 + 4 || ']',
                               'uid', 1000)
       FROM generate_series(1, :quarantined) j
     UNION ALL
     SELECT 2 * :released + 2 * j, now() - interval '1 hour', :released + j,
            'q' || j, 'bench', 'release', '{"quarantined": true}'::jsonb
       FROM generate_series(1, :quarantined) j;

DELETE FROM vni_free f WHERE EXISTS (SELECT 1 FROM vni_holds h WHERE h.vni = f.vni);

SELECT setval('reservations_id_seq', (SELECT max(id) FROM reservations));
SELECT setval('events_id_seq', (SELECT max(id) FROM events));

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT indexdef FROM bench_saved_indexes LOOP
        EXECUTE r.indexdef;
    END LOOP;
END $$;
