-- The ledger schema as it was before group commit (migrations V1..V30 at commit 21ddb49), for bench/relay.sh:
-- the fixed reference pgbench of bench/ledger-ceiling.sql runs on it, in a database of its own.
-- V1__ledger.sql
-- The pending ledger. A message row is written PENDING before its body goes downstream and settled
-- after the downstream's final reply; recipients and outbox events change in the same transactions.

CREATE TABLE messages (
  id                 uuid PRIMARY KEY,
  intake             text        NOT NULL CHECK (intake IN ('SMTP', 'HTTP')),
  auth_user          text,
  client_ip          text,
  helo               text,
  mail_from          text        NOT NULL,
  message_id_header  text,
  size_bytes         bigint      NOT NULL CHECK (size_bytes >= 0),
  body_sha256        text        NOT NULL,
  route              text        NOT NULL,
  status             text        NOT NULL CHECK (status IN ('PENDING', 'SENT', 'FAILED_TEMP', 'FAILED_PERM', 'UNKNOWN',
                                                            'RESOLVED_DELIVERED', 'RESOLVED_NOT_DELIVERED')),
  version            integer     NOT NULL CHECK (version >= 1),
  downstream_reply   text,
  last_error         text,
  received_at        timestamptz NOT NULL,
  settled_at         timestamptz
);

-- Listing newest first with keyset paging, and finding old PENDING rows.
CREATE INDEX messages_received_idx ON messages (received_at DESC, id DESC);
CREATE INDEX messages_status_received_idx ON messages (status, received_at);
CREATE INDEX messages_message_id_header_idx ON messages (message_id_header);

CREATE TABLE recipients (
  message_id     uuid    NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  idx            integer NOT NULL,
  address        text    NOT NULL,
  status         text    NOT NULL CHECK (status IN ('PENDING', 'ACCEPTED', 'REJECTED', 'FAILED_TEMP', 'FAILED_PERM',
                                                    'UNKNOWN', 'RESOLVED_DELIVERED', 'RESOLVED_NOT_DELIVERED')),
  rcpt_reply     text,
  reply_code     integer,
  enhanced_code  text,
  reply_text     text,
  PRIMARY KEY (message_id, idx)
);

CREATE TABLE outbox (
  seq           bigserial   PRIMARY KEY,
  event_id      text        NOT NULL UNIQUE,
  message_id    uuid        NOT NULL,
  type          text        NOT NULL,
  payload       jsonb       NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  published_at  timestamptz
);

CREATE INDEX outbox_unpublished_idx ON outbox (seq) WHERE published_at IS NULL;

CREATE TABLE resolutions (
  message_id   uuid        NOT NULL REFERENCES messages (id),
  outcome      text        NOT NULL CHECK (outcome IN ('DELIVERED', 'NOT_DELIVERED')),
  operator     text        NOT NULL,
  note         text        NOT NULL,
  resolved_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_id)
);

CREATE TABLE idempotency_keys (
  owner         text        NOT NULL,
  key           text        NOT NULL,
  request_hash  text        NOT NULL,
  message_id    uuid        REFERENCES messages (id),
  response      jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner, key)
);

-- V10__outbox_publish.sql
-- Publishing the outbox. An outbox row's seq comes from a sequence and becomes visible in commit
-- order, not in seq order: a reader that kept "seq > cursor" could skip a row whose transaction
-- committed late. So the publisher never uses a cursor over seq: it takes every row not yet
-- published, under a row lock that makes it the only publisher, and gives each one a pub_seq from a
-- counter it alone advances. pub_seq is what subscribers see: gap-free, in publish order, resumable.

ALTER TABLE outbox ADD COLUMN pub_seq bigint UNIQUE;

CREATE TABLE outbox_publisher (
  id              integer PRIMARY KEY CHECK (id = 1),
  last_pub_seq    bigint  NOT NULL,
  -- every event with pub_seq <= pruned_through may have been deleted by retention
  pruned_through  bigint  NOT NULL
);
INSERT INTO outbox_publisher (id, last_pub_seq, pruned_through) VALUES (1, 0, 0);

CREATE INDEX outbox_published_at_idx ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Subscribers' acknowledgements of events (RECEIVED, READ). A view of the facts, never a fact itself.
CREATE TABLE notify_receipts (
  pub_seq      bigint      NOT NULL,
  message_id   uuid        NOT NULL,
  subscriber   text        NOT NULL,
  state        text        NOT NULL CHECK (state IN ('RECEIVED', 'READ')),
  at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pub_seq, subscriber, state)
);
CREATE INDEX notify_receipts_message_idx ON notify_receipts (message_id);

-- V11__ledger_abort.sql
-- Lets a single-statement ledger transaction refuse its own result: raising an error inside the
-- statement rolls back every data-modifying CTE in it. SQLSTATE LP001 = "the settle did not touch the
-- recipients it had to" (docs/contract.md §3.3, invariant 2); the gateway maps it by SQLSTATE, never by text.
CREATE FUNCTION ledger_abort(message text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'LP001', MESSAGE = message;
END
$$;

-- V20__stale_raises.sql
-- The stale watch raises a PENDING row once per threshold period. When it last did, and how often,
-- is kept here rather than on messages: the watch never takes a lock on the hot message rows, and
-- "once per period" holds across restarts and across several gateways on one database. The raise
-- count also makes each message.stale outbox event id unique: <message id>:stale:<n>.
-- (Numbered 20, not 2, so it orders after the outbox branch's V10 on databases that already ran it.)

CREATE TABLE stale_raises (
  message_id      uuid        PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  raises          integer     NOT NULL CHECK (raises >= 1),
  last_raised_at  timestamptz NOT NULL
);

-- V30__idempotency_key_states.sql
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

