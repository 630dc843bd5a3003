-- Endpoint health (docs/design.md §6.6, docs/data-model.md §5.18): why an endpoint is disabled, how long its
-- deliveries have all failed, its last errors, and the token bucket of its rate limit.
--
-- Why it is disabled decides what its deliveries do meanwhile: 'gone' (a 410: its deliveries wait and go once it is
-- enabled, as before), 'failing' (every attempt failed for webhooks.disableAfter) and 'manual' (its owner's PATCH):
-- nothing is recorded for it while it is disabled and its open deliveries were ended FAILED, so enabling it replays
-- nothing unless asked (the replay API). Rows disabled before this migration were disabled by a 410.
ALTER TABLE webhook_endpoints ADD COLUMN disabled_kind text CHECK (disabled_kind IN ('gone', 'failing', 'manual'));
UPDATE webhook_endpoints SET disabled_kind = 'gone' WHERE disabled_at IS NOT NULL;

-- Requests per second to an endpoint made through the API, across every node; null: webhooks.rateLimit; 0: none.
ALTER TABLE webhook_api_endpoints ADD COLUMN rate_limit integer CHECK (rate_limit >= 0);

-- One row per endpoint that has failed once or is rate limited; a healthy endpoint without a limit has none, so a
-- delivered attempt writes nothing here. A table of its own, not columns of webhook_endpoints: a recording pass holds
-- that row locked (its cursor), and an attempt's result must not wait for it, nor make the pass skip the endpoint.
CREATE TABLE webhook_endpoint_health (
  endpoint              text        PRIMARY KEY REFERENCES webhook_endpoints (name) ON DELETE CASCADE,
  -- failed attempts since the last delivered one (or since it was enabled)
  consecutive_failures  integer     NOT NULL DEFAULT 0,
  -- when the first of them started (the gateway's clock); null while the last attempt was delivered
  failing_since         timestamptz,
  -- the last 5 failed attempts, newest first: [{"at", "deliveryId", "eventId", "status", "error"}]
  last_errors           jsonb       NOT NULL DEFAULT '[]',
  -- the rate limit's bucket (the gateway's clock): tokens left at tokens_at; refilled at the limit per second, capped
  -- at one second's worth; taken under the claim's per-endpoint lock, so the limit holds across every node
  tokens                float8,
  tokens_at             timestamptz
);
