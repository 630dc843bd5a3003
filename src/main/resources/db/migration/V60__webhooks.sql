-- Webhooks (docs/design.md §6.6): a second consumer of the published outbox events. Each configured
-- endpoint records one delivery row per matching event (exactly once: UNIQUE (endpoint, event_id)), and any
-- node delivers the rows it claims (FOR UPDATE SKIP LOCKED, then a lease), recording every attempt.

-- One row per endpoint ever configured (the configuration names them; the state lives here, shared by
-- every node): how far its deliveries are recorded, and whether a 410 disabled it.
CREATE TABLE webhook_endpoints (
  name              text        PRIMARY KEY,
  -- every published event up to this pub_seq has its delivery row (when it matched the endpoint's filter)
  recorded_through  bigint      NOT NULL,
  disabled_at       timestamptz,
  disabled_reason   text,
  created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
  id               bigserial   PRIMARY KEY,
  endpoint         text        NOT NULL REFERENCES webhook_endpoints (name),
  -- the outbox event id: the webhook-id header, the same on every attempt, retry and replay
  event_id         text        NOT NULL,
  pub_seq          bigint      NOT NULL,
  type             text        NOT NULL,
  message_id       uuid,
  -- the request body, fixed when the row is recorded (it outlives the outbox row's retention)
  body             text        NOT NULL,
  state            text        NOT NULL DEFAULT 'PENDING'
                   CHECK (state IN ('PENDING', 'ATTEMPTED', 'DELIVERED', 'FAILED')),
  -- every attempt ever made: the n of the last webhook_attempts row
  attempts         integer     NOT NULL DEFAULT 0,
  -- attempts since the row was recorded or re-armed (retry, replay): its place in webhooks.retrySchedule
  round_attempts   integer     NOT NULL DEFAULT 0,
  -- when the next attempt is due, on the gateway's clock; null once DELIVERED or FAILED
  next_attempt_at  timestamptz,
  -- an attempt in flight: which node sent it, and until when no other node may take the row
  leased_by        text,
  lease_until      timestamptz,
  -- re-armed (retry, replay) while an attempt was in flight: that attempt's result must not close the row
  rearmed          boolean     NOT NULL DEFAULT false,
  last_attempt_at  timestamptz,
  last_status      integer,
  last_error       text,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_deliveries_once UNIQUE (endpoint, event_id)
);

-- The claim's "due rows of this endpoint", the pending gauges (the predicate names the open states).
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint, next_attempt_at)
  WHERE state IN ('PENDING', 'ATTEMPTED');
-- Attempts in flight, counted at every claim against webhooks.concurrency (few rows: leases are short).
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (endpoint) WHERE lease_until IS NOT NULL;
-- GET /api/v1/webhooks/{name}/deliveries?state=...
CREATE INDEX webhook_deliveries_state_idx ON webhook_deliveries (endpoint, state, id);
-- The operation status: each endpoint's deliveries of one message.
CREATE INDEX webhook_deliveries_message_idx ON webhook_deliveries (message_id) WHERE message_id IS NOT NULL;

-- Every attempt, once: n is the delivery's attempt number. An attempt whose node died before it could say how
-- it ended is recorded by the node that takes the row over ("no result"); a late real result replaces that.
CREATE TABLE webhook_attempts (
  delivery_id  bigint           NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  n            integer          NOT NULL,
  node_id      text             NOT NULL,
  at           timestamptz      NOT NULL,
  status       integer,
  error        text,
  latency_ms   double precision,
  PRIMARY KEY (delivery_id, n)
);
