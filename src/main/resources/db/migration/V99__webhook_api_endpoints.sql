-- Webhook endpoints made through the API by a user's send key (docs/design.md §6.6, docs/data-model.md §5.15). The
-- endpoint's state (cursor, disabled) stays in webhook_endpoints, whose name is the API endpoint's id; this row says
-- whose it is, where it points and what it is signed with. Endpoints of the configuration file have no row here.
CREATE TABLE webhook_api_endpoints (
  id                text        PRIMARY KEY REFERENCES webhook_endpoints (name) ON DELETE CASCADE,
  -- the send key's user that made it: only its messages' events are recorded for it, only it (and the admin) sees it
  owner             text        NOT NULL,
  url               text        NOT NULL,
  events            text[]      NOT NULL,
  -- whsec_<base64 of 32 random bytes>, made by the gateway; the gateway signs with it, so it is kept as it is
  secret            text        NOT NULL,
  -- the secret a rotation replaced: it still signs beside the new one until previous_until (webhooks.rotationGrace)
  previous_secret   text,
  previous_until    timestamptz,
  -- from webhook_api_endpoints_version at every insert and update: with count(*), what every node polls to see a change
  version           bigint      NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE webhook_api_endpoints_version;

-- webhooks.maxEndpointsPerUser is counted per owner; the list of one user's endpoints.
CREATE INDEX webhook_api_endpoints_owner_idx ON webhook_api_endpoints (owner, id);
-- max(version), every webhooks.pollInterval on every node.
CREATE INDEX webhook_api_endpoints_version_idx ON webhook_api_endpoints (version);
