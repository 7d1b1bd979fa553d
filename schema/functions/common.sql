-- SPDX-License-Identifier: GPL-2.0-or-later
-- The SQL functions the other files share: how a reservation leaves the
-- database (vnib_row, a group's vnib_batch_row), times as the API writes
-- them, the per-job locks, the keys of a job's events, and the readiness
-- probe's write.
--
-- schema/functions/*.sql hold every function of the schema, each once, as
-- it is now; vnibrokerd --migrate applies them after the numbered
-- migrations, in file-name order (schema/README.md).  SQL-language
-- functions are checked when they are created, so one may call only
-- functions defined above it, in its file or in a file sorted before.

-- A time as UTC ISO 8601 with milliseconds.  SQL, so that it is inlined
-- into the queries that call it, which needs it declared no less volatile
-- than to_char (STABLE).
CREATE OR REPLACE FUNCTION vnib_ts(t timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Reservation p_id as the broker reads it (the type vnib_row, schema/0002),
-- with outcome p_outcome, and when p_counts its nodes by their last
-- report as "creating,created,destroyed,failed".  Reads and transitions
-- all answer in this shape.  PL/pgSQL rather than SQL: PL/pgSQL keeps its
-- plans for the session, while a SQL function called from PL/pgSQL is
-- parsed again on every call.
CREATE OR REPLACE FUNCTION vnib_row(p_outcome text, p_id bigint,
                                    p_counts boolean)
RETURNS vnib_row LANGUAGE plpgsql STABLE AS $$
DECLARE
    o vnib_row;
BEGIN
    SELECT p_outcome, r.id, r.job_id, r.state, r.uid, r.username, r.nodes,
           r.node_count, r.vni_count, array_to_string(r.vnis, ','),
           r.empty_reason, r.tcs_mask, vnib_ts(r.created_at), r.created_by,
           vnib_ts(r.release_requested_at), vnib_ts(r.released_at),
           r.released_by, r.forced, NULL, r.hwcoll_mode, r.hwcoll_state,
           r.hwcoll_reason, r.fm_job_id, r.addrs_per_job,
           encode(r.session_token, 'hex')
      INTO o FROM reservations r WHERE r.id = p_id;
    IF p_counts AND o.id IS NOT NULL THEN
        SELECT count(*) FILTER (WHERE cxi = 'creating') || ','
               || count(*) FILTER (WHERE cxi = 'created') || ','
               || count(*) FILTER (WHERE cxi = 'destroyed') || ','
               || count(*) FILTER (WHERE cxi = 'failed')
          INTO o.counts FROM node_reports WHERE reservation_id = p_id;
    END IF;
    RETURN o;
END $$;

-- The answer of a group (schema/0008): for item k, outcome p_outcome[k]
-- and reservation p_id[k] (none when NULL) with its node report counts
-- and detail p_detail[k], in item order.
CREATE OR REPLACE FUNCTION vnib_batch_rows(p_outcome text[], p_id bigint[],
                                           p_detail text[])
RETURNS SETOF vnib_batch_row LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT o.outcome, r.id, r.job_id, r.state, r.uid, r.username, r.nodes,
           r.node_count, r.vni_count, array_to_string(r.vnis, ','),
           r.empty_reason, r.tcs_mask, vnib_ts(r.created_at), r.created_by,
           vnib_ts(r.release_requested_at), vnib_ts(r.released_at),
           r.released_by, r.forced, c.counts, r.hwcoll_mode, r.hwcoll_state,
           r.hwcoll_reason, r.fm_job_id, r.addrs_per_job,
           encode(r.session_token, 'hex'), o.detail
      FROM unnest(p_outcome, p_id, p_detail) WITH ORDINALITY o(outcome, id, detail, k)
      LEFT JOIN LATERAL (SELECT * FROM reservations WHERE id = o.id LIMIT 1) r
        ON true
      LEFT JOIN LATERAL (
          SELECT count(*) FILTER (WHERE n.cxi = 'creating') || ','
                 || count(*) FILTER (WHERE n.cxi = 'created') || ','
                 || count(*) FILTER (WHERE n.cxi = 'destroyed') || ','
                 || count(*) FILTER (WHERE n.cxi = 'failed') AS counts
            FROM node_reports n WHERE n.reservation_id = o.id) c
        ON r.id IS NOT NULL
     ORDER BY o.k;
END $$;

-- One row of a group's answer as a vnib_row, for the single-job functions
-- that run as groups of one (vnib_reserve, vnib_release).
CREATE OR REPLACE FUNCTION vnib_batch_single(b vnib_batch_row)
RETURNS vnib_row LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW(b.outcome, b.id, b.job_id, b.state, b.uid, b.username, b.nodes,
               b.node_count, b.vni_count, b.vnis, b.empty_reason, b.tcs_mask,
               b.created_at, b.created_by, b.release_requested_at,
               b.released_at, b.released_by, b.forced, b.counts,
               b.hwcoll_mode, b.hwcoll_state, b.hwcoll_reason, b.fm_job_id,
               b.addrs_per_job, b.session_token)::vnib_row
$$;

-- Reserves and releases of one job (or step key) take turns on this
-- transaction-scoped advisory lock ("vnib" and the key's hash), so that a
-- release never misses a reserve still in flight (schema/0004).
CREATE OR REPLACE FUNCTION vnib_job_lock(p_job text)
RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1986947426, hashtext(p_job))
$$;

-- The job locks of a group (vnib_job_lock's keys): all of them, in key
-- order, when p_wait; else those free now, without waiting.  Returns,
-- for each job, whether its lock is held.  A group never names a job
-- twice (22023).
CREATE OR REPLACE FUNCTION vnib_jobs_lock(p_job text[], p_wait boolean)
RETURNS boolean[] LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(DISTINCT j) FROM unnest(p_job) j) <> cardinality(p_job) THEN
        RAISE EXCEPTION 'a group names one job twice' USING ERRCODE = '22023';
    END IF;
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(1986947426, s.h)
           FROM (SELECT DISTINCT hashtext(j) AS h FROM unnest(p_job) j
                  ORDER BY 1) s;
        RETURN array_fill(true, ARRAY[cardinality(p_job)]);
    END IF;
    RETURN ARRAY(SELECT pg_try_advisory_xact_lock(1986947426, hashtext(j.j))
                   FROM unnest(p_job) WITH ORDINALITY j(j, k) ORDER BY j.k);
END $$;

-- The reservation a job id means: its active one, else its newest.
CREATE OR REPLACE FUNCTION vnib_job_current(p_job text)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT id FROM reservations WHERE job_id = p_job
     ORDER BY state = 'active' DESC, id DESC LIMIT 1
$$;

-- The keys whose events are a job's: its own and its steps' (/v1/events
-- ?job_id=).
CREATE OR REPLACE FUNCTION vnib_job_keys(p_job text)
RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT p_job || ARRAY(SELECT DISTINCT s.job_id
                            FROM reservations j
                            JOIN reservations s ON s.parent_id = j.id
                           WHERE j.job_id = p_job)
$$;

-- The readiness probe's write after writes failed (schema/0014): remove
-- the older rows and add one, a heap insert, WAL and a commit as any
-- write of the broker needs.
CREATE OR REPLACE FUNCTION vnib_write_probe()
RETURNS void LANGUAGE sql AS $$
    DELETE FROM write_probe;
    INSERT INTO write_probe (at) VALUES (now());
$$;
