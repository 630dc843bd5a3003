-- Idempotency keys of the HTTP send API. A key row goes through three states:
--   IN_FLIGHT  claimed by one request, nothing opened yet (message_id NULL); lease_until bounds how long a
--              crashed claimant can block the key. Released (deleted) when the request ends before the ledger
--              was opened, so such a key stays reusable.
--   OPENED     bound to its ledger entry (message_id) in the very transaction that opened the ledger: a crash
--              can never leave a ledger entry whose key is lost, or a key that points at nothing.
--   COMPLETED  the answer the client was given is stored and is replayed to every retry.
-- operation_id is the ledger id the claimant chose for its message; it doubles as the claim token.

ALTER TABLE idempotency_keys
  ADD COLUMN state        text        NOT NULL DEFAULT 'IN_FLIGHT' CHECK (state IN ('IN_FLIGHT', 'OPENED', 'COMPLETED')),
  ADD COLUMN operation_id uuid,
  ADD COLUMN lease_until  timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN updated_at   timestamptz NOT NULL DEFAULT now();

ALTER TABLE idempotency_keys ALTER COLUMN state DROP DEFAULT;

-- Nothing wrote this table before this migration; a row without a claim token would be meaningless.
DELETE FROM idempotency_keys WHERE operation_id IS NULL;
ALTER TABLE idempotency_keys ALTER COLUMN operation_id SET NOT NULL;

ALTER TABLE idempotency_keys
  ADD CONSTRAINT idempotency_keys_bound CHECK ((state = 'IN_FLIGHT') = (message_id IS NULL)),
  ADD CONSTRAINT idempotency_keys_answered CHECK ((state = 'COMPLETED') = (response IS NOT NULL));

-- Retention deletes the oldest rows in bounded batches.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
