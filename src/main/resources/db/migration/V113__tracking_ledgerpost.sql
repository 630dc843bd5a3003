-- A downstream Ledgerpost as a third source of tracking facts (docs/design.md §8.13 "Downstream Ledgerpost",
-- docs/data-model.md §5.28).
--
-- delivery_facts: a fact may now come from the downstream Ledgerpost our row was relayed to (source 'ledgerpost'): one of
-- its own facts about the recipient, read from its API by the ledger id its 250 named. Its event_key is the SHA-256 of
-- that id, the recipient's position in its row and the fact's fields that erasure leaves alone (its source, state, time,
-- code, remote host, queue id), so a fact read twice adds nothing; its queue_id is the downstream's ledger id.
ALTER TABLE delivery_facts DROP CONSTRAINT delivery_facts_source_check;
ALTER TABLE delivery_facts ADD CONSTRAINT delivery_facts_source_check CHECK (source IN ('postfix-log', 'dsn', 'ledgerpost'));
