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
