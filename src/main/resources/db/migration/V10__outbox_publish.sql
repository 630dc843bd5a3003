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
