-- Several gateways on one ledger (docs/design.md §9). Each is a node with a stable id (node.id).

-- The node that opened a row: which node's journal holds its outcome if it is still PENDING.
ALTER TABLE messages ADD COLUMN node_id text;

-- One row per node that ever joined. The heartbeat says it is alive; `held` lists the outcomes its retry
-- part knows and has not yet settled, so that no node's stale watch raises them while it lives. Which node
-- leads a single-active job is NOT kept here (that is an advisory lock held by the node's lock connection,
-- which ends with its session); `jobs` only shows it to operators.
CREATE TABLE nodes (
  id            text        PRIMARY KEY,
  hostname      text        NOT NULL,
  pid           bigint      NOT NULL,
  started_at    timestamptz NOT NULL,
  heartbeat_at  timestamptz NOT NULL,
  stopped_at    timestamptz,
  jobs          text[]      NOT NULL DEFAULT '{}',
  held          uuid[]      NOT NULL DEFAULT '{}'
);
