-- Returned DSNs kept rather than relayed, and the loop guard (docs/design.md §8.13 "Returned DSNs",
-- docs/data-model.md §5.27). Only tracking_dsns changes: a small table of its own, never partitioned, so this
-- is a catalog change and a scan of DSN rows at most; the ledger's tables and their status checks are untouched
-- (a DSN tracking keeps is settled CAPTURED, as capture mode's messages are).
--
-- result gains 'looped': a DSN that arrived again after the gateway had already relayed the same report (its
-- identity below): accepted, kept, not relayed a second time, and no fact added (the first arrival added them).
ALTER TABLE tracking_dsns DROP CONSTRAINT tracking_dsns_result_check;
ALTER TABLE tracking_dsns ADD CONSTRAINT tracking_dsns_result_check
  CHECK (result IN ('matched', 'unmatched', 'malformed', 'expired', 'looped'));

-- dsn_key: the SHA-256 of the report's identity (Reporting-MTA, Original-Envelope-Id, Arrival-Date, the returned
-- Message-ID and every recipient's fields as they were): the same DSN relayed around a loop keeps it. Null for a
-- malformed one and for rows from before this migration.
-- relayed: whether the gateway relayed the DSN on to its smarthost (true) or kept it (false: tracking.relayDsns
-- false and matched, or looped). Null for rows from before this migration (they were all relayed).
ALTER TABLE tracking_dsns ADD COLUMN dsn_key bytea, ADD COLUMN relayed boolean;

-- The loop guard's question: was this report relayed before? Partial: only relayed DSNs are asked about.
CREATE INDEX tracking_dsns_relayed_key_idx ON tracking_dsns (dsn_key) WHERE relayed AND dsn_key IS NOT NULL;
