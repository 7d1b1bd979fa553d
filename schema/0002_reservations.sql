-- 0002: VNI reservations, quarantine, node reports, and the audit trail.
--
-- Uniqueness is the database's job, not the broker's: a VNI is held by at
-- most one reservation at a time because vni_holds has it as primary key,
-- and a job has at most one active reservation because of a partial unique
-- index.  Several brokers may therefore serve one database concurrently.
--
-- The multi-step transitions (reserve, release, node report) are functions
-- so that each request is one statement, one round trip and one commit;
-- store.c calls them through prepared statements and renders the results.
-- They are the only writers, which is why the tables below carry few
-- foreign keys and CHECKs: on this path each costs a query or a parse per
-- row, and the broker validates every input before it gets here.  The
-- integration tests check the invariants (holds match live reservations)
-- after concurrent load.

-- The round-robin cursor.  Each VNI handed out takes nextval(); the value
-- modulo 65536 is where the search for a free VNI starts.  A sequence never
-- blocks concurrent allocators (a cursor row would serialise them through
-- every commit) and survives crashes (it may skip ahead a little).
CREATE SEQUENCE vni_cursor_seq MINVALUE 0 START WITH 0;

CREATE TABLE reservations (
    id                   bigserial   PRIMARY KEY,
    job_id               text        NOT NULL,
    state                text        NOT NULL DEFAULT 'active'
                         CHECK (state IN ('active', 'releasing', 'released')),
    uid                  bigint      NOT NULL,
    username             text        NOT NULL,
    nodes                text        NOT NULL,   -- compressed hostlist
    node_count           integer     NOT NULL,
    vni_count            smallint    NOT NULL CHECK (vni_count BETWEEN 0 AND 4),
    vnis                 integer[]   NOT NULL DEFAULT '{}',
    empty_reason         text,
    tcs_mask             smallint    NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    created_by           text        NOT NULL,
    release_requested_at timestamptz,
    released_at          timestamptz,
    released_by          text,
    forced               boolean     NOT NULL DEFAULT false,
    -- Hardware collectives: the Fabric Manager multicast reservation.
    hwcoll_mode          text        NOT NULL DEFAULT 'auto'
                         CHECK (hwcoll_mode IN ('auto', 'on', 'off')),
    hwcoll_state         text        NOT NULL DEFAULT 'disabled'
                         CHECK (hwcoll_state IN ('disabled', 'not_eligible',
                                'pending', 'reserved', 'unavailable',
                                'releasing', 'released', 'lost')),
    hwcoll_reason        text,
    fm_job_id            text,
    addrs_per_job        integer,
    session_token        bytea       -- sealed (AES-256-GCM), never clear text
);
-- A scheduler retry finds the job's one active reservation.
CREATE UNIQUE INDEX reservations_active_job ON reservations (job_id)
    WHERE state = 'active';
CREATE INDEX reservations_job ON reservations (job_id, id DESC);
CREATE INDEX reservations_live ON reservations (state, id) WHERE state <> 'released';
CREATE INDEX reservations_vnis ON reservations USING gin (vnis);

-- A VNI held by an active or quarantined (releasing) reservation.  The
-- primary key is what makes a VNI unique across the whole cluster.
CREATE TABLE vni_holds (
    vni            integer     PRIMARY KEY CHECK (vni BETWEEN 0 AND 65535),
    reservation_id bigint      NOT NULL,
    held_since     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vni_holds_reservation ON vni_holds (reservation_id);

-- A reservation's node list as ranges of a trailing number, so that "is
-- node X in job J" and "which jobs include node X" need no expansion of
-- hostlists.  A name splits into prefix, number and suffix at its last run
-- of digits; width is -1 for a name without digits, the digit count for a
-- zero-padded number, and 0 otherwise.
CREATE TABLE reservation_ranges (
    reservation_id bigint   NOT NULL,
    prefix         text     NOT NULL,
    suffix         text     NOT NULL,
    width          smallint NOT NULL,
    lo             bigint   NOT NULL,
    hi             bigint   NOT NULL
);
CREATE INDEX reservation_ranges_member
    ON reservation_ranges (reservation_id, prefix, suffix, width, lo);
CREATE INDEX reservation_ranges_span
    ON reservation_ranges USING gist (int8range(lo, hi, '[]'));

-- What each node's agent last said about a reservation's CXI services.
CREATE TABLE node_reports (
    reservation_id bigint      NOT NULL,
    node           text        NOT NULL,
    cxi            text        NOT NULL
                   CHECK (cxi IN ('creating', 'created', 'destroyed', 'failed')),
    services       jsonb       NOT NULL DEFAULT '[]',
    message        text,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reservation_id, node)
);
CREATE INDEX node_reports_holding ON node_reports (reservation_id)
    WHERE cxi <> 'destroyed';

-- Nodes the broker marked drained (a failed CXI operation).
CREATE TABLE nodes (
    name           text        PRIMARY KEY,
    drained        boolean     NOT NULL DEFAULT false,
    drained_reason text,
    drained_at     timestamptz,
    updated_by     text        NOT NULL
);

-- The audit trail: every state change, who made it, and when.
CREATE TABLE events (
    id             bigserial   PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    reservation_id bigint,
    job_id         text,
    node           text,
    actor          text        NOT NULL,
    action         text        NOT NULL,
    detail         jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX events_job ON events (job_id, id);

-- ---- the reservation as the API shows it ----------------------------------

-- One reservation as store.c reads it: times as UTC ISO 8601, VNIs as a
-- comma list, and (when asked) the nodes by their last report as
-- "creating,created,destroyed,failed".  Reads and the transition functions
-- return this same shape, so it is defined once.
CREATE TYPE vnib_row AS (
    outcome text, id bigint, job_id text, state text, uid bigint,
    username text, nodes text, node_count integer, vni_count smallint,
    vnis text, empty_reason text, tcs_mask smallint, created_at text,
    created_by text, release_requested_at text, released_at text,
    released_by text, forced boolean, counts text, hwcoll_mode text,
    hwcoll_state text, hwcoll_reason text, fm_job_id text,
    addrs_per_job integer, session_token text);

-- A SQL function, inlined into the queries that call it (which needs it
-- declared no less volatile than to_char, which is STABLE).
CREATE FUNCTION vnib_ts(t timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- PL/pgSQL rather than SQL: PL/pgSQL keeps its plans for the session,
-- while a SQL function called from PL/pgSQL is parsed again on every call.
CREATE FUNCTION vnib_row(p_outcome text, p_id bigint, p_counts boolean)
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

-- ---- allocation -------------------------------------------------------------

-- The first VNI of the pool (ranges p_lo[i]-p_hi[i], sorted) at or after
-- p_start, wrapping round, that no reservation holds; NULL when none.
CREATE FUNCTION vnib_first_free(p_start integer, p_lo integer[], p_hi integer[])
RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    n integer := coalesce(cardinality(p_lo), 0);
    st integer := p_start;
    first integer;
    s integer;
    h integer;
    f integer;
BEGIN
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    -- Start in the range that contains the cursor or follows it; past the
    -- last range, wrap to the first.
    first := 1;
    WHILE first <= n AND p_hi[first] < st LOOP
        first := first + 1;
    END LOOP;
    IF first > n THEN
        first := 1;
        st := p_lo[1];
    END IF;
    -- Visit n + 1 ranges: the wrap comes back to the first range's start.
    FOR k IN 0 .. n LOOP
        DECLARE i integer := ((first - 1 + k) % n) + 1;
        BEGIN
            IF k = 0 THEN
                s := greatest(p_lo[i], st);
                h := p_hi[i];
                IF s > h THEN CONTINUE; END IF;
            ELSIF k = n THEN
                s := p_lo[i];
                h := least(p_hi[i], st - 1);
                IF s > h THEN CONTINUE; END IF;
            ELSE
                s := p_lo[i];
                h := p_hi[i];
            END IF;
            -- The common case: the cursor's own VNI is free.
            IF NOT EXISTS (SELECT 1 FROM vni_holds WHERE vni = s) THEN
                RETURN s;
            END IF;
            -- Otherwise the first gap after a held VNI in [s, h].
            SELECT min(c.x) INTO f
              FROM (SELECT vni + 1 AS x FROM vni_holds
                     WHERE vni >= s AND vni < h) c
             WHERE NOT EXISTS (SELECT 1 FROM vni_holds WHERE vni = c.x);
            IF f IS NOT NULL THEN
                RETURN f;
            END IF;
        END;
    END LOOP;
    RETURN NULL;
END $$;

-- VNIs of the pool that no reservation holds.
CREATE FUNCTION vnib_free_count(p_lo integer[], p_hi integer[])
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT (SELECT coalesce(sum(hi - lo + 1), 0) FROM unnest(p_lo, p_hi) p(lo, hi))
         - (SELECT count(*) FROM vni_holds h, unnest(p_lo, p_hi) p(lo, hi)
             WHERE h.vni BETWEEN p.lo AND p.hi)
$$;

-- Take p_want VNIs for reservation p_res, round-robin from the cursor.
-- Raises SQLSTATE VN001 (with DETAIL "<wanted> <free>") when the pool has
-- too few free VNIs.
CREATE FUNCTION vnib_alloc(p_res bigint, p_want integer, p_lo integer[], p_hi integer[])
RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    got integer[] := '{}';
    c bigint;
    start integer;
    cand integer;
    newc bigint;
    tries integer := 0;
BEGIN
    WHILE cardinality(got) < p_want LOOP
        tries := tries + 1;
        c := nextval('vni_cursor_seq');
        start := (c % 65536)::integer;
        cand := vnib_first_free(start, p_lo, p_hi);
        IF cand IS NULL OR tries > 64 THEN
            RAISE EXCEPTION 'VNI pool exhausted'
                USING ERRCODE = 'VN001',
                      DETAIL = p_want || ' '
                               || vnib_free_count(p_lo, p_hi) + cardinality(got);
        END IF;
        INSERT INTO vni_holds (vni, reservation_id) VALUES (cand, p_res)
            ON CONFLICT DO NOTHING;
        IF FOUND THEN
            got := got || cand;
            IF cand <> start THEN
                -- Skipped held VNIs: move the cursor to what was handed
                -- out, so the next allocation starts after it.  Racing
                -- allocators may move it back; that costs a search, never
                -- a duplicate (the primary key sees to that).
                newc := c - start + cand + CASE WHEN cand < start THEN 65536 ELSE 0 END;
                IF newc > (SELECT last_value FROM vni_cursor_seq) THEN
                    PERFORM setval('vni_cursor_seq', newc);
                END IF;
            END IF;
        END IF;
    END LOOP;
    RETURN got;
END $$;

-- ---- transitions ------------------------------------------------------------

-- Reserve for a job.  outcome: created | exists (the job's active
-- reservation, same parameters) | conflict (different ones).  Pool
-- exhaustion raises VN001.  The VNIs are taken before the row is written,
-- so the reservation is one INSERT, never an INSERT and an UPDATE.
CREATE FUNCTION vnib_reserve(
    p_job text, p_uid bigint, p_user text, p_nodes text, p_node_count integer,
    p_vni_count integer, p_tcs smallint, p_empty_reason text, p_actor text,
    p_pool_lo integer[], p_pool_hi integer[],
    p_rprefix text[], p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[],
    p_rhi bigint[], p_hwcoll_mode text, p_hwcoll_state text,
    p_hwcoll_reason text, p_fm_job_id text, p_addrs integer)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v integer[] := '{}';
    new_id bigint;
    got bigint;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        SELECT id, uid, username, nodes, vni_count, hwcoll_mode INTO r
          FROM reservations WHERE job_id = p_job AND state = 'active';
        IF FOUND THEN
            RETURN vnib_row(CASE WHEN r.uid = p_uid AND r.username = p_user
                                      AND r.nodes = p_nodes
                                      AND r.vni_count = p_vni_count
                                      AND r.hwcoll_mode = p_hwcoll_mode
                                 THEN 'exists' ELSE 'conflict' END,
                            r.id, true);
        END IF;
        new_id := nextval('reservations_id_seq');
        IF p_vni_count > 0 THEN
            v := vnib_alloc(new_id, p_vni_count, p_pool_lo, p_pool_hi);
        END IF;
        -- A concurrent reserve for the same job makes this insert do
        -- nothing; the loop then finds that one.
        INSERT INTO reservations (id, job_id, uid, username, nodes, node_count,
                                  vni_count, vnis, tcs_mask, empty_reason,
                                  created_by, hwcoll_mode, hwcoll_state,
                                  hwcoll_reason, fm_job_id, addrs_per_job)
             VALUES (new_id, p_job, p_uid, p_user, p_nodes, p_node_count,
                     p_vni_count, v, p_tcs, p_empty_reason, p_actor,
                     p_hwcoll_mode, p_hwcoll_state, p_hwcoll_reason,
                     p_fm_job_id, p_addrs)
        ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
        RETURNING id INTO got;
        EXIT WHEN got IS NOT NULL;
        DELETE FROM vni_holds WHERE reservation_id = new_id;
    END LOOP;
    IF got IS NULL THEN
        RAISE EXCEPTION 'reservation for job % vanished while reserving', p_job
            USING ERRCODE = '40001';
    END IF;
    INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
         SELECT got, * FROM unnest(p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi);
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (got, p_job, p_actor, 'reserve',
                 jsonb_build_object('vnis', v, 'nodes', p_nodes, 'uid', p_uid));
    RETURN vnib_row('created', got, true);
END $$;

-- Free a reservation's VNIs and mark it released, with one audit event.
CREATE FUNCTION vnib_end_quarantine(p_id bigint, p_job text, p_actor text,
                                    p_action text, p_requested boolean,
                                    p_forced boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM vni_holds WHERE reservation_id = p_id;
    UPDATE reservations
       SET state = 'released', released_at = now(), released_by = p_actor,
           forced = p_forced,
           release_requested_at = CASE WHEN p_requested THEN now()
                                       ELSE release_requested_at END
     WHERE id = p_id;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (p_id, p_job, p_actor, p_action,
                 jsonb_build_object('quarantined', NOT p_requested,
                                    'forced', p_forced));
END $$;

-- True while some node may still hold a CXI service of reservation p_id.
CREATE FUNCTION vnib_nodes_holding(p_id bigint)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM node_reports
                    WHERE reservation_id = p_id AND cxi <> 'destroyed');
END $$;

-- Release a job's newest reservation.  outcome: not_found | releasing
-- (quarantined until its nodes confirm) | released (now) |
-- already_releasing | already_released.
CREATE FUNCTION vnib_release(p_job text, p_actor text, p_force boolean)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    r record;
    nothing vnib_row;
BEGIN
    SELECT id, state INTO r FROM reservations
     WHERE job_id = p_job ORDER BY id DESC LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
        nothing.outcome := 'not_found';
    RETURN nothing;
    END IF;
    IF r.state = 'released' THEN
        RETURN vnib_row('already_released', r.id, true);
    END IF;
    -- The job ended: its multicast reservation goes to the Fabric Manager
    -- queue whatever the quarantine of its VNIs does.
    IF r.state = 'active' THEN
        UPDATE reservations SET hwcoll_state = 'releasing'
         WHERE id = r.id AND hwcoll_state IN ('reserved', 'pending');
    END IF;
    -- Nodes that never reported hold nothing: with no holder left the
    -- quarantine has nothing to wait for.
    IF p_force OR NOT vnib_nodes_holding(r.id) THEN
        PERFORM vnib_end_quarantine(r.id, p_job, p_actor,
                                    CASE WHEN p_force THEN 'force'
                                         WHEN r.state = 'active' THEN 'release'
                                         ELSE 'quarantine_end' END,
                                    r.state = 'active', p_force);
        RETURN vnib_row('released', r.id, true);
    END IF;
    IF r.state = 'releasing' THEN
        RETURN vnib_row('already_releasing', r.id, true);
    END IF;
    UPDATE reservations SET state = 'releasing', release_requested_at = now()
     WHERE id = r.id;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (r.id, p_job, p_actor, 'release', '{"quarantined": true}');
    RETURN vnib_row('releasing', r.id, true);
END $$;

-- Record a node's report about a job's CXI services.  The reservation is
-- the job's newest where this node still holds something, for destroyed
-- and failed (a requeued job's old services are reported after the new
-- reservation exists), else the newest; p_res, when given, must be it.
-- outcome: ok | not_found | not_member | stale_reservation |
-- invalid_transition (previous state in counts) | job_not_active.
CREATE FUNCTION vnib_report(
    p_job text, p_node text, p_cxi text, p_services jsonb, p_message text,
    p_actor text, p_prefix text, p_suffix text, p_width smallint, p_num bigint,
    p_res bigint)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_state text;
    prev text;
    nothing vnib_row;
BEGIN
    IF p_cxi IN ('destroyed', 'failed') THEN
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
    IF NOT EXISTS (SELECT 1 FROM reservation_ranges g
                    WHERE g.reservation_id = v_id AND g.prefix = p_prefix
                      AND g.suffix = p_suffix AND g.width = p_width
                      AND p_num BETWEEN g.lo AND g.hi) THEN
        nothing.outcome := 'not_member';
        RETURN nothing;
    END IF;
    SELECT cxi INTO prev FROM node_reports
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
    INSERT INTO events (reservation_id, job_id, node, actor, action, detail)
         VALUES (v_id, p_job, p_node, p_actor, 'report',
                 jsonb_build_object('cxi', p_cxi, 'previous', prev,
                                    'services', p_services, 'message', p_message));
    IF p_cxi = 'failed' THEN
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

-- Close every quarantine whose nodes have all confirmed.  The broker runs
-- this periodically as a safety net; reservations locked by a running
-- transaction are skipped and caught next time.
CREATE FUNCTION vnib_sweep(p_actor text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer := 0;
    r record;
BEGIN
    FOR r IN SELECT id, job_id FROM reservations
              WHERE state = 'releasing' AND NOT vnib_nodes_holding(id)
              FOR UPDATE SKIP LOCKED LOOP
        PERFORM vnib_end_quarantine(r.id, r.job_id, p_actor, 'quarantine_end',
                                    false, false);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

-- Forget released reservations, and audit events, older than p_days, at
-- most p_batch reservations per call (the sweeper calls it on every run,
-- so a large backlog drains without one long transaction).  Returns the
-- number of reservations removed.
CREATE FUNCTION vnib_purge(p_days integer, p_batch integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    SELECT array_agg(id) INTO ids
      FROM (SELECT id FROM reservations
             WHERE state = 'released'
               AND released_at < now() - make_interval(days => p_days)
             ORDER BY id LIMIT p_batch) old;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM reservation_ranges WHERE reservation_id = ANY (ids);
    DELETE FROM node_reports WHERE reservation_id = ANY (ids);
    DELETE FROM reservations WHERE id = ANY (ids);
    DELETE FROM events
     WHERE id IN (SELECT id FROM events
                   WHERE at < now() - make_interval(days => p_days)
                   ORDER BY id LIMIT p_batch * 8);
    RETURN cardinality(ids);
END $$;

-- Record the Fabric Manager's answer for reservation p_id.  'reserved'
-- (with the sealed token) only while the job is active and the call was
-- pending: otherwise the outcome is 'not_active' and the caller deletes
-- the FM job it just made.  'unavailable' only replaces 'pending';
-- 'released' only 'releasing'.  outcome: ok | not_active | unchanged.
CREATE FUNCTION vnib_hwcoll_set(p_id bigint, p_state text, p_reason text,
                                p_token bytea, p_actor text)
RETURNS vnib_row LANGUAGE plpgsql AS $$
DECLARE
    j text;
BEGIN
    IF p_state = 'reserved' THEN
        UPDATE reservations
           SET hwcoll_state = 'reserved', hwcoll_reason = NULL,
               session_token = p_token
         WHERE id = p_id AND state = 'active'
           AND hwcoll_state IN ('pending', 'unavailable')
        RETURNING job_id INTO j;
        IF j IS NULL THEN
            RETURN vnib_row('not_active', p_id, false);
        END IF;
    ELSE
        UPDATE reservations
           SET hwcoll_state = p_state, hwcoll_reason = p_reason,
               session_token = CASE WHEN p_state IN ('released', 'lost')
                                    THEN NULL ELSE session_token END
         WHERE id = p_id
           AND CASE p_state
                   -- a pending call's failure, or a timed-out call's
                   -- follow-up refining its reason
                   WHEN 'unavailable' THEN hwcoll_state = 'pending'
                        OR (hwcoll_state = 'unavailable'
                            AND hwcoll_reason LIKE 'timed out%')
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
