-- 0014: a table for the readiness probe's write.
--
-- When PostgreSQL refuses writes for lack of a resource (disk full:
-- SQLSTATE 53100, or any class 53 error, or an I/O error), the broker
-- answers 503 database_full and /readyz reports not ready until a write
-- succeeds again: a request's, or the probe's own, which adds a row here
-- (and removes the older ones) in a transaction of its own.
CREATE TABLE write_probe (
    at timestamptz NOT NULL DEFAULT now()
);

-- Remove the rows before this one and add one: a heap insert, WAL and a
-- commit, as any write of the broker needs.
CREATE FUNCTION vnib_write_probe()
RETURNS void LANGUAGE sql AS $$
    DELETE FROM write_probe;
    INSERT INTO write_probe (at) VALUES (now());
$$;
