-- 0013: each applied migration's SHA-256, so that a migration edited after
-- it was applied is noticed instead of leaving databases that claim one
-- schema and hold another.
--
-- vnibrokerd --migrate records the digest of the text it applied, and for
-- migrations applied before this one, the digest of the text it carries
-- (recorded once, by the first migrate that knows about digests).  Every
-- start and every migrate compares the recorded digests with the texts
-- compiled into the binary and refuses, naming the file, on a difference.
ALTER TABLE schema_version ADD COLUMN sha256 text
    CHECK (sha256 ~ '^[0-9a-f]{64}$');

COMMENT ON COLUMN schema_version.sha256 IS
    'SHA-256 (hex) of the migration''s text as applied; checked at start.';
