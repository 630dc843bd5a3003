-- Reconciliation with evidence (docs/design.md §8.3): PENDING and UNKNOWN rows are closed from the
-- smarthost's own record, through the resolution path an operator uses (§8.2), never by sending again.
-- (Numbered 70 so that it orders apart from the other branches' V60 and V80.)

-- The SHA-256 of the message exactly as the smarthost was sent it: the gateway's Received: line, then the
-- client's bytes unstuffed (body_sha256 covers the client's bytes only). Written by the settle of a message
-- whose body was sent whole (§1.6); null before, and when no body left the gateway. A downstream that
-- hashes what it received (a downstream Ledgerpost's body_sha256) is matched against it. Nullable with no
-- default: adding it rewrites nothing.
ALTER TABLE messages ADD COLUMN sent_sha256 text;

-- What the reconcile job found for a row: the outcome the evidence shows, how sure it is, where it came from
-- and the evidence itself (the smarthost's queue id, its log lines, what matched). An operator accepts or
-- rejects it; with reconcile.autoResolve: exact the job accepts an exact one itself. Accepting resolves the
-- message in the same transaction as any resolution, and the resolution names the proposal.
CREATE TABLE reconcile_proposals (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id       uuid        NOT NULL REFERENCES messages (id),
  message_version  integer     NOT NULL,
  outcome          text        NOT NULL CHECK (outcome IN ('DELIVERED', 'NOT_DELIVERED')),
  confidence       text        NOT NULL CHECK (confidence IN ('exact', 'weak')),
  source           text        NOT NULL,
  evidence_ref     text        NOT NULL,
  evidence         jsonb       NOT NULL,
  state            text        NOT NULL DEFAULT 'OPEN' CHECK (state IN ('OPEN', 'ACCEPTED', 'REJECTED', 'SUPERSEDED')),
  proposed_at      timestamptz NOT NULL DEFAULT now(),
  proposed_by      text,
  decided_at       timestamptz,
  decided_by       text,
  decision_note    text
);

-- One open proposal per message: two reconcile passes (two nodes, if leadership ever overlapped) cannot
-- both propose for one row.
CREATE UNIQUE INDEX reconcile_proposals_open_idx ON reconcile_proposals (message_id) WHERE state = 'OPEN';
-- A piece of evidence (a queue id of one source) explains one message at most, unless it was rejected.
CREATE UNIQUE INDEX reconcile_proposals_evidence_idx ON reconcile_proposals (source, evidence_ref)
  WHERE state IN ('OPEN', 'ACCEPTED');
-- A proposal an operator rejected is never made again for that message.
CREATE UNIQUE INDEX reconcile_proposals_made_idx ON reconcile_proposals (message_id, source, evidence_ref);
-- Listing by state, newest first.
CREATE INDEX reconcile_proposals_state_idx ON reconcile_proposals (state, id);

-- The proposal a resolution accepted (null for an operator's own resolution).
ALTER TABLE resolutions ADD COLUMN proposal_id bigint REFERENCES reconcile_proposals (id);
