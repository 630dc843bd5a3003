-- Capture mode (docs/design.md §8.10, docs/data-model.md §5.19): the mail of a captured user or send key is accepted,
-- recorded and kept, never relayed. Its ledger row settles to the new terminal status CAPTURED (its recipients too),
-- and its bytes live in `captures` until capture.retention has passed (the CAPTURE_EXPIRY job deletes them) or an
-- erasure takes them.

-- The status checks gain CAPTURED. They were written in V1 and copied by V90's partitioned tables (LIKE ... INCLUDING
-- CONSTRAINTS), whatever name they carry now: found by what they check, dropped on the parent (and so on every
-- partition), and written again NOT VALID, so that this transaction holds the table's exclusive lock for a catalog
-- change only, never for a scan of the ledger (a live ledger's opens and settles wait behind that lock, under
-- ledger.lockTimeout). Only `messages` here: each table in its own migration (V104 for `recipients`), because a
-- transaction that held one table's exclusive lock while asking for the other's could deadlock with a writer that
-- holds the other and asks for the first. V108 validates both without blocking writers (ShareUpdateExclusiveLock).
DO $$
DECLARE
  c text;
BEGIN
  FOR c IN SELECT conname FROM pg_constraint
           WHERE conrelid = 'messages'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%RESOLVED_NOT_DELIVERED%'
  LOOP
    EXECUTE format('ALTER TABLE messages DROP CONSTRAINT %I', c);
  END LOOP;
END $$;

ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN ('PENDING', 'SENT', 'FAILED_TEMP',
  'FAILED_PERM', 'UNKNOWN', 'RESOLVED_DELIVERED', 'RESOLVED_NOT_DELIVERED', 'CAPTURED')) NOT VALID;

-- One row per captured message: the message as the client gave it (unstuffed, without the gateway's Received: line,
-- so its SHA-256 is the row's body_sha256), written after the ledger's open and before its settle. No foreign key:
-- messages is partitioned (§5.12); a row whose partition was dropped first is deleted by the expiry job all the same.
CREATE TABLE captures (
  message_id   uuid        PRIMARY KEY,
  auth_user    text,
  size_bytes   bigint      NOT NULL CHECK (size_bytes >= 0),
  captured_at  timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  body         bytea       NOT NULL
);
-- The expiry job's range scan.
CREATE INDEX captures_expires_idx ON captures (expires_at);
