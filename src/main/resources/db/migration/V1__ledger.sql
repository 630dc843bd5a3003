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
