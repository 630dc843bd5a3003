-- Downstream tracking (docs/design.md §8.13, docs/data-model.md §5.24): what happened to each recipient after the
-- smarthost's 250, as an append-only list of facts. The ledger row's status is never changed by any of this.
--
-- delivery_facts: one row per fact a source reported about one recipient (message_id, idx: recipients' key). Never
-- updated; deleted only by tracking's retention (message ids older than ledger.retention: a fact never outlives its
-- row) and rewritten only by erasure, which replaces an erased address in every text column (reply, evidence).
-- `event_key` identifies the event within its source (for postfix-log, the SHA-256 of the log line as read), so that
-- reading a line again (after a restart, a rotation, a rival follower) adds nothing: one fact per source per event.
-- It is made by the writer and kept, so that a line read again after an erasure is still recognised. The bounds of
-- reply (512 characters) and evidence (8192) are the writer's, not checks: erasure's replacement of an address by its
-- hash may lengthen a value, and must never fail on it.
CREATE TABLE delivery_facts (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id   uuid        NOT NULL,
  idx          integer     NOT NULL,
  state        text        NOT NULL CHECK (state IN ('queued', 'deferred', 'delivered', 'bounced', 'expired')),
  at           timestamptz NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  remote_host  text,
  dsn          text        CHECK (dsn ~ '^[245]\.[0-9]{1,3}\.[0-9]{1,3}$'),
  reply        text        CHECK (reply !~ '[\x01-\x1f\x7f]'),
  category     text        CHECK (category IN ('invalid_recipient', 'mailbox_full', 'spam_block', 'policy', 'auth_failure',
                                               'dns', 'connection', 'other')),
  rule         text,
  source       text        NOT NULL CHECK (source IN ('postfix-log')),
  evidence     text        NOT NULL,
  queue_id     text,
  event_key    bytea       NOT NULL,
  CHECK ((state IN ('deferred', 'bounced', 'expired')) = (category IS NOT NULL))
);
-- One fact per source per event; also the read of one message's facts (the API's detail) and retention's range.
CREATE UNIQUE INDEX delivery_facts_event_idx ON delivery_facts (message_id, idx, source, event_key);

-- tracking_queue_ids: which of our rows a smarthost queue id is. Recorded by the follower when it first sees the queue
-- id in the log (Postfix logs it within seconds of our DATA), by reading the rows settled in a few minutes around that
-- line whose downstream_reply names it ("250 2.0.0 Ok: queued as 4XyZ..."). So the relay's settle does no more than
-- before, and a status line days later finds its row by this key. Short queue ids are reused by Postfix over time:
-- the newest mapping at or before a line's time is the one.
CREATE TABLE tracking_queue_ids (
  queue_id    text        NOT NULL,
  message_id  uuid        NOT NULL,
  seen_at     timestamptz NOT NULL,
  PRIMARY KEY (queue_id, message_id)
);
CREATE INDEX tracking_queue_ids_message_idx ON tracking_queue_ids (message_id);

-- tracking_log_positions: how far a follower has read a log file (its path on the node that reads it), and which file
-- that was (device and inode as the JVM reports them): after a restart it resumes there unless the file was rotated
-- (another inode) or truncated (shorter than the position), when it starts at 0.
CREATE TABLE tracking_log_positions (
  node_id     text        NOT NULL,
  path        text        NOT NULL,
  file_key    text        NOT NULL,
  position    bigint      NOT NULL CHECK (position >= 0),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, path)
);
