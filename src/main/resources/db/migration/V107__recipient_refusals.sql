-- Recipients the gateway refused, or whose refusal by the smarthost it passed on (docs/design.md §8.8, docs/data-model.md
-- §5.23): "a refused recipient is a fact, even when no DATA follows" (issue 30). Append-only: a row is written once, by
-- the node that gave the reply, in batches off the SMTP event loop; the REFUSAL_RETENTION job deletes rows older than
-- suppression.refusalRetention and erasure deletes an erased address's rows. Never updated.
--
-- `source`: `suppressed` (the suppression list refused it at RCPT; `suppression_id` names the entry) or `smarthost` (the
-- smarthost refused it at RCPT, mirrored to the client, or refused the whole message at DATA: one row per recipient it
-- had accepted, `message_id` the ledger row). `stage`: RCPT or DATA. `code` and `status` are the reply's code and
-- enhanced status (5.1.1): what the suppression list's feed counts. `at` is the gateway clock's time of the reply.
CREATE TABLE recipient_refusals (
  id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  at              timestamptz NOT NULL,
  node_id         text        NOT NULL,
  user_name       text,
  client_ip       text,
  mail_from       text        NOT NULL,
  recipient       text        NOT NULL,
  stage           text        NOT NULL CHECK (stage IN ('RCPT', 'DATA')),
  source          text        NOT NULL CHECK (source IN ('suppressed', 'smarthost')),
  code            integer     NOT NULL,
  status          text,
  reply           text        NOT NULL,
  suppression_id  uuid,
  message_id      uuid
);
-- The API's filter and the suppression feed's count (an address's refusals in a window), retention's range scan.
CREATE INDEX recipient_refusals_recipient_idx ON recipient_refusals (recipient, at);
CREATE INDEX recipient_refusals_at_idx ON recipient_refusals (at);
CREATE INDEX recipient_refusals_user_idx ON recipient_refusals (user_name, at);
