-- SPDX-License-Identifier: GPL-2.0-or-later
-- 0020: the SQL functions leave the numbered migrations.
--
-- Until 0019 a migration that changed a function restated it whole, and a
-- function's live text was that of the last migration defining it.  From
-- now on each function is stated once, as it is, in schema/functions/*.sql
-- (schema/README.md); vnibrokerd --migrate applies those files after the
-- migrations, in the same transaction, and records here the SHA-256 of
-- their texts in file-name order with the schema version it applied them
-- at.  A --migrate whose functions are the ones recorded last at its own
-- version applies nothing; one of a build whose functions differ applies
-- its own.  A broker never applies functions to a schema newer than its
-- own.
--
-- Rows are only added, so the table is also the history of the functions
-- a database had.  The newest row (highest id) is what it has now.  A
-- broker whose functions were applied here at its schema version (any
-- row) serves, even once another build's replaced them (a rolling
-- upgrade); one whose functions never were is not ready until it
-- migrates (deploy/README.md, "Upgrading").
CREATE TABLE schema_functions (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schema_version integer     NOT NULL,
    sha256         text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    applied_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE schema_functions IS
    'One row per application of schema/functions/*.sql by vnibrokerd --migrate.';
