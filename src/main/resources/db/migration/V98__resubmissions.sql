-- Resubmissions (docs/design.md §1.13, §5.14): a client's retry of a message it already handed over is recognised by its
-- fingerprint (who sent it, its single Message-ID, its envelope, the SHA-256 of its bytes) and is never relayed twice.
--
-- resubmission_claims: one row per fingerprint, written by the open's own statement (no extra commit): a second open
-- of the same fingerprint finds the claim and opens nothing. A claim may be taken over only by an open that names the
-- row it replaces (`replaces`: the earlier row failed, so the retry is new mail), or once it expired (the window,
-- smtp.resubmission.window, from claimed_at). Both conditions are read on the locked row by ON CONFLICT DO UPDATE,
-- so two takeovers of one claim cannot both win. The fingerprint is a hash, not the mail (the first 128 bits of a
-- SHA-256, as a uuid: a key half as large as the whole digest, in an index whose keys land on random pages), and
-- lives for the window only: retention deletes expired claims, erasure the claims of the rows it erases.
CREATE TABLE resubmission_claims (
  fingerprint uuid        PRIMARY KEY,
  message_id  uuid        NOT NULL,
  claimed_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  replaces    uuid
);
-- One more index, for erasure (by row) and retention alike: ledger ids are time-ordered (UUIDv7) and claims are
-- written in about that order, so the claims past the window are those of the oldest ids. A BRIN index: a summary per
-- range of pages, which an insert into the table's newest pages does not touch, where a B-tree would take every
-- open's id (the claims' key already costs each open one B-tree insert, on a random page). Erasure and retention are
-- rare and read a range of pages per match.
CREATE INDEX resubmission_claims_message_idx ON resubmission_claims USING brin (message_id);

-- A retry that was relayed as new mail (the earlier row had failed) names the row it retries.
ALTER TABLE messages ADD COLUMN resubmission_of uuid;

-- The retries that were answered without relaying, against the earlier row they matched: a satellite of messages
-- like stale_raises (kept, exported and dropped with its message's partition). `attempt_id` is the ledger id the
-- retry's session would have opened (its Received: trace and log lines name it).
CREATE TABLE resubmissions (
  seq        bigserial   PRIMARY KEY,
  message_id uuid        NOT NULL,
  at         timestamptz NOT NULL DEFAULT now(),
  outcome    text        NOT NULL CHECK (outcome IN ('already_relayed', 'in_progress', 'held')),
  attempt_id uuid        NOT NULL,
  node_id    text,
  client_ip  text,
  auth_user  text,
  helo       text
);
CREATE INDEX resubmissions_message_idx ON resubmissions (message_id, at);
