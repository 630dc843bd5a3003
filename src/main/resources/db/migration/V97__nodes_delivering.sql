-- Rows a node is delivering now (docs/design.md §8.1, §9.2): opened, the body on its way or the reply awaited,
-- neither settled nor handed to the retry part yet. Written with the heartbeat like `held`, and, like `held`, what
-- no node's stale watch raises and no reconcile job looks at while the node's heartbeat is alive. Kept apart from
-- `held` because `held` also says "retrying" in the operation status.
ALTER TABLE nodes ADD COLUMN delivering uuid[] NOT NULL DEFAULT '{}';
