-- 0001: bookkeeping for migrations.
--
-- Applied by `vnibrokerd --migrate` inside one transaction, under an
-- advisory lock, together with the row that records it.  The reservation
-- tables arrive in later migrations.

CREATE TABLE schema_version (
    version     integer     PRIMARY KEY CHECK (version > 0),
    name        text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE schema_version IS
    'One row per applied vnibroker migration (schema/NNNN_name.sql).';
