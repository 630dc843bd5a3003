-- Returned DSNs as a second source of tracking facts (docs/design.md §8.13 "Returned DSNs", docs/data-model.md §5.25).
--
-- delivery_facts: a fact may now come from a returned DSN (source 'dsn'). Its event_key is the SHA-256 of the report's
-- per-message identity (Reporting-MTA, Original-Envelope-Id, returned Message-ID, Arrival-Date) and the recipient's
-- fields as they were: the same DSN received twice adds one fact.
ALTER TABLE delivery_facts DROP CONSTRAINT delivery_facts_source_check;
ALTER TABLE delivery_facts ADD CONSTRAINT delivery_facts_source_check CHECK (source IN ('postfix-log', 'dsn'));

-- A DSN's row by the client's ENVID (Original-Envelope-Id). Partial: a message sent without ENVID (most, in many
-- installations) has no entry, so its open costs nothing more; a partitioned index, one per weekly partition, as V101's.
CREATE INDEX messages_dsn_envid_idx ON messages (dsn_envid) WHERE dsn_envid IS NOT NULL;

-- tracking_dsns: one row per DSN the SMTP intake relayed (a message with the empty envelope sender whose Content-Type
-- is multipart/report; report-type=delivery-status), keyed by the DSN's own ledger row: what was made of it. result:
-- matched (facts added to matched_message_id's recipients), unmatched (no row of ours by its ENVID or Message-ID, or
-- none of its recipients), malformed (the report could not be read), expired (the row is past ledger.retention).
-- reason is the gateway's own words with at most the ENVID or Message-ID the DSN named; no address is kept here.
-- Retained as the facts are: deleted with message ids below ledger.retention's cut-off.
CREATE TABLE tracking_dsns (
  message_id          uuid        PRIMARY KEY,
  received_at         timestamptz NOT NULL DEFAULT now(),
  result              text        NOT NULL CHECK (result IN ('matched', 'unmatched', 'malformed', 'expired')),
  reason              text,
  facts               integer     NOT NULL DEFAULT 0 CHECK (facts >= 0),
  matched_message_id  uuid
);
