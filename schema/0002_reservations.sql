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

-- The round-robin cursor.  Each VNI handed out takes nextval(); the value
-- modulo 65536 is where the search for a free VNI starts.  A sequence never
-- blocks concurrent allocators (a cursor row would serialise them through
-- every commit) and survives crashes (it may skip ahead a little).
CREATE SEQUENCE vni_cursor_seq MINVALUE 0 START WITH 0;

CREATE TABLE reservations (
    id                   bigserial   PRIMARY KEY,
    job_id               text        NOT NULL
                         CHECK (job_id ~ '^[A-Za-z0-9._:@+-]{1,128}$'),
    state                text        NOT NULL DEFAULT 'active'
                         CHECK (state IN ('active', 'releasing', 'released')),
    uid                  bigint      NOT NULL CHECK (uid BETWEEN 0 AND 4294967294),
    username             text        NOT NULL CHECK (length(username) BETWEEN 1 AND 64),
    nodes                text        NOT NULL,   -- compressed hostlist
    node_count           integer     NOT NULL CHECK (node_count >= 0),
    vni_count            smallint    NOT NULL CHECK (vni_count BETWEEN 0 AND 4),
    vnis                 integer[]   NOT NULL DEFAULT '{}',
    empty_reason         text,
    tcs_mask             smallint    NOT NULL CHECK (tcs_mask BETWEEN 0 AND 15),
    created_at           timestamptz NOT NULL DEFAULT now(),
    created_by           text        NOT NULL,
    release_requested_at timestamptz,
    released_at          timestamptz,
    released_by          text,
    forced               boolean     NOT NULL DEFAULT false,
    CHECK ((state = 'released') = (released_at IS NOT NULL)),
    CHECK ((state = 'active') = (release_requested_at IS NULL))
);
-- A scheduler retry finds the job's one active reservation.
CREATE UNIQUE INDEX reservations_active_job ON reservations (job_id)
    WHERE state = 'active';
CREATE INDEX reservations_job ON reservations (job_id, id DESC);
CREATE INDEX reservations_live ON reservations (state, id) WHERE state <> 'released';
CREATE INDEX reservations_uid ON reservations (uid, id);
CREATE INDEX reservations_vnis ON reservations USING gin (vnis);

-- A VNI held by an active or quarantined (releasing) reservation.  The
-- primary key is what makes a VNI unique across the whole cluster.
CREATE TABLE vni_holds (
    vni            integer     PRIMARY KEY CHECK (vni BETWEEN 0 AND 65535),
    reservation_id bigint      NOT NULL REFERENCES reservations ON DELETE CASCADE,
    held_since     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vni_holds_reservation ON vni_holds (reservation_id);

-- A reservation's node list as ranges of a trailing number, so that "is
-- node X in job J" and "which jobs include node X" need no expansion of
-- hostlists.  A name splits into prefix, number and suffix at its last run
-- of digits; width is -1 for a name without digits, the digit count for a
-- zero-padded number, and 0 otherwise.
CREATE TABLE reservation_ranges (
    reservation_id bigint   NOT NULL REFERENCES reservations ON DELETE CASCADE,
    prefix         text     NOT NULL,
    suffix         text     NOT NULL,
    width          smallint NOT NULL CHECK (width >= -1),
    lo             bigint   NOT NULL,
    hi             bigint   NOT NULL,
    CHECK (lo <= hi)
);
CREATE INDEX reservation_ranges_member
    ON reservation_ranges (reservation_id, prefix, suffix, width, lo);
CREATE INDEX reservation_ranges_span
    ON reservation_ranges USING gist (int8range(lo, hi, '[]'));

-- What each node's agent last said about a reservation's CXI services.
CREATE TABLE node_reports (
    reservation_id bigint      NOT NULL REFERENCES reservations ON DELETE CASCADE,
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

-- Reserve for a job.  o_outcome: created | exists (same parameters) |
-- conflict (different ones).  Pool exhaustion raises VN001.
CREATE FUNCTION vnib_reserve(
    p_job text, p_uid bigint, p_user text, p_nodes text, p_node_count integer,
    p_vni_count integer, p_tcs smallint, p_empty_reason text, p_actor text,
    p_pool_lo integer[], p_pool_hi integer[],
    p_rprefix text[], p_rsuffix text[], p_rwidth smallint[], p_rlo bigint[],
    p_rhi bigint[],
    OUT o_outcome text, OUT o_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v integer[];
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        SELECT id, uid, username, nodes, vni_count INTO r
          FROM reservations WHERE job_id = p_job AND state = 'active';
        IF FOUND THEN
            o_id := r.id;
            IF r.uid = p_uid AND r.username = p_user AND r.nodes = p_nodes
               AND r.vni_count = p_vni_count THEN
                o_outcome := 'exists';
            ELSE
                o_outcome := 'conflict';
            END IF;
            RETURN;
        END IF;
        -- A concurrent reserve for the same job makes this insert do
        -- nothing; the loop then finds that one.
        INSERT INTO reservations (job_id, uid, username, nodes, node_count,
                                  vni_count, tcs_mask, empty_reason, created_by)
             VALUES (p_job, p_uid, p_user, p_nodes, p_node_count, p_vni_count,
                     p_tcs, p_empty_reason, p_actor)
        ON CONFLICT (job_id) WHERE state = 'active' DO NOTHING
        RETURNING id INTO o_id;
        EXIT WHEN o_id IS NOT NULL;
    END LOOP;
    IF o_id IS NULL THEN
        RAISE EXCEPTION 'reservation for job % vanished while reserving', p_job
            USING ERRCODE = '40001';
    END IF;
    IF p_vni_count > 0 THEN
        v := vnib_alloc(o_id, p_vni_count, p_pool_lo, p_pool_hi);
        UPDATE reservations SET vnis = v WHERE id = o_id;
    END IF;
    INSERT INTO reservation_ranges (reservation_id, prefix, suffix, width, lo, hi)
         SELECT o_id, * FROM unnest(p_rprefix, p_rsuffix, p_rwidth, p_rlo, p_rhi);
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (o_id, p_job, p_actor, 'reserve',
                 jsonb_build_object('vnis', coalesce(v, '{}'), 'nodes', p_nodes,
                                    'uid', p_uid));
    o_outcome := 'created';
END $$;

-- End a releasing reservation's quarantine: its VNIs become free.
CREATE FUNCTION vnib_end_quarantine(p_id bigint, p_actor text, p_forced boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    j text;
BEGIN
    DELETE FROM vni_holds WHERE reservation_id = p_id;
    UPDATE reservations
       SET state = 'released', released_at = now(), released_by = p_actor,
           forced = p_forced
     WHERE id = p_id
    RETURNING job_id INTO j;
    INSERT INTO events (reservation_id, job_id, actor, action, detail)
         VALUES (p_id, j, p_actor, CASE WHEN p_forced THEN 'force' ELSE 'quarantine_end' END,
                 '{}');
END $$;

-- True while some node may still hold a CXI service of reservation p_id.
CREATE FUNCTION vnib_nodes_holding(p_id bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM node_reports
                    WHERE reservation_id = p_id AND cxi <> 'destroyed')
$$;

-- Release a job's newest reservation.  o_outcome: not_found | releasing
-- (quarantined until nodes confirm) | released (now) | already_releasing |
-- already_released.
CREATE FUNCTION vnib_release(p_job text, p_actor text, p_force boolean,
                             OUT o_outcome text, OUT o_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    was_active boolean;
BEGIN
    SELECT id, state INTO r FROM reservations
     WHERE job_id = p_job ORDER BY id DESC LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
        o_outcome := 'not_found';
        RETURN;
    END IF;
    o_id := r.id;
    IF r.state = 'released' THEN
        o_outcome := 'already_released';
        RETURN;
    END IF;
    was_active := r.state = 'active';
    IF was_active THEN
        UPDATE reservations SET state = 'releasing', release_requested_at = now()
         WHERE id = r.id;
        INSERT INTO events (reservation_id, job_id, actor, action, detail)
             VALUES (r.id, p_job, p_actor, 'release', '{}');
    END IF;
    IF p_force THEN
        PERFORM vnib_end_quarantine(r.id, p_actor, true);
        o_outcome := 'released';
    ELSIF NOT vnib_nodes_holding(r.id) THEN
        -- Nodes that never reported hold nothing.
        PERFORM vnib_end_quarantine(r.id, p_actor, false);
        o_outcome := 'released';
    ELSIF was_active THEN
        o_outcome := 'releasing';
    ELSE
        o_outcome := 'already_releasing';
    END IF;
END $$;

-- Record a node's report about a job's CXI services.  The reservation is
-- the job's newest where this node still holds something, for destroyed
-- and failed (a requeued job's old services are reported after the new
-- reservation exists), else the newest.  o_outcome: ok | not_found |
-- not_member | invalid_transition | job_not_active.
CREATE FUNCTION vnib_report(
    p_job text, p_node text, p_cxi text, p_services jsonb, p_message text,
    p_actor text, p_prefix text, p_suffix text, p_width smallint, p_num bigint,
    OUT o_outcome text, OUT o_id bigint, OUT o_previous text)
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_state text;
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
    IF v_id IS NULL THEN
        o_outcome := 'not_found';
        RETURN;
    END IF;
    o_id := v_id;
    IF NOT EXISTS (SELECT 1 FROM reservation_ranges g
                    WHERE g.reservation_id = v_id AND g.prefix = p_prefix
                      AND g.suffix = p_suffix AND g.width = p_width
                      AND p_num BETWEEN g.lo AND g.hi) THEN
        o_outcome := 'not_member';
        RETURN;
    END IF;
    SELECT cxi INTO o_previous FROM node_reports
     WHERE reservation_id = v_id AND node = p_node FOR UPDATE;
    IF v_state <> 'active' AND p_cxi IN ('creating', 'created') THEN
        o_outcome := 'job_not_active';
        RETURN;
    END IF;
    -- Destroyed is final: a later "created" would be a report going
    -- backwards (or an agent acting on a job that ended).
    IF o_previous = 'destroyed' AND p_cxi <> 'destroyed' THEN
        o_outcome := 'invalid_transition';
        RETURN;
    END IF;
    INSERT INTO node_reports (reservation_id, node, cxi, services, message)
         VALUES (v_id, p_node, p_cxi, p_services, p_message)
    ON CONFLICT (reservation_id, node) DO UPDATE
       SET cxi = excluded.cxi, services = excluded.services,
           message = excluded.message, updated_at = now();
    INSERT INTO events (reservation_id, job_id, node, actor, action, detail)
         VALUES (v_id, p_job, p_node, p_actor, 'report',
                 jsonb_build_object('cxi', p_cxi, 'previous', o_previous,
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
        PERFORM vnib_end_quarantine(v_id, p_actor, false);
    END IF;
    o_outcome := 'ok';
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
    FOR r IN SELECT id FROM reservations
              WHERE state = 'releasing' AND NOT vnib_nodes_holding(id)
              FOR UPDATE SKIP LOCKED LOOP
        PERFORM vnib_end_quarantine(r.id, p_actor, false);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;
