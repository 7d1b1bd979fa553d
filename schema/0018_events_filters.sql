-- 0018: GET /v1/events filters by node and by action (issue 16).
--
-- The status page asks for a node's events newest first.  Without an
-- index the id-ordered scan reads back through the whole trail for a node
-- with few events (the trail keeps purge.history_days of every report).
-- events_node serves "node = $5 ORDER BY id".  For actions, the frequent
-- ones (reserve, release, report) are found within a few rows of the
-- id-ordered scan; the rarer ones get a partial index, which keeps the
-- reports, the bulk of the writes, out of it.
CREATE INDEX events_node ON events (node, id) WHERE node IS NOT NULL;
CREATE INDEX events_rare_action ON events (action, id)
    WHERE action NOT IN ('reserve', 'release', 'report');
