-- Erasure of one person's address (docs/design.md §8.6): every row that held it now holds
-- erased:<HMAC-SHA256 of the lower-cased address> instead. This table records each erasure: the hash (never
-- the address), the key it was made under (key_id: a fingerprint of the key, not the key), who asked, why, when,
-- and how many rows of each table changed. It is the audit of the erasures themselves, so it only grows: a
-- trigger refuses UPDATE, DELETE and TRUNCATE (a REVOKE would not hold against the owner the gateway connects as).
-- (Numbered 95 so that it orders after the partitioning and export branches' migrations.)

CREATE TABLE erasures (
  id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  address_hash  text        NOT NULL CHECK (address_hash ~ '^erased:[0-9a-f]{64}$'),
  key_id        text        NOT NULL,
  requested_by  text        NOT NULL,
  reason        text,
  requested_at  timestamptz NOT NULL DEFAULT now(),
  -- {"messages": 3, "recipients": 4, ...}: rows changed per table, every table looked at (0 included)
  rows_changed  jsonb       NOT NULL
);

CREATE INDEX erasures_address_hash_idx ON erasures (address_hash);

-- SQLSTATE LP002: the gateway and psql alike get the same refusal, whatever the statement.
CREATE FUNCTION erasures_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'LP002', MESSAGE = 'erasures is append-only: ' || TG_OP || ' refused';
END
$$;

CREATE TRIGGER erasures_no_change BEFORE UPDATE OR DELETE ON erasures
  FOR EACH ROW EXECUTE FUNCTION erasures_append_only();
CREATE TRIGGER erasures_no_truncate BEFORE TRUNCATE ON erasures
  FOR EACH STATEMENT EXECUTE FUNCTION erasures_append_only();
