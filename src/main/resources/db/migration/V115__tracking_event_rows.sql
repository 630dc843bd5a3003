-- Tracking's events batched (docs/data-model.md §5.30, docs/design.md §8.13 "What a batch costs"): one outbox row per
-- facts statement, holding up to 64 of its facts' events, instead of a row (jsonb payload, four index entries, and the
-- publisher's update of each) per fact. A third form of row beside V40's two: `message_ids` and `fact_ids`, the
-- facts' messages and ids in fact id order; no payload, no versions. The view builds each event from its fact when it
-- is read, as it builds a batched `message.settled` from its message, so a subscriber sees the same event as before.
ALTER TABLE outbox ADD COLUMN fact_ids bigint[];

-- The check allows the three forms. Added NOT VALID and validated apart: the validation reads the table without
-- blocking the writers of its rows.
ALTER TABLE outbox DROP CONSTRAINT outbox_one_or_batch;
ALTER TABLE outbox
  ADD CONSTRAINT outbox_one_or_batch CHECK (
    (message_id IS NOT NULL AND event_id IS NOT NULL AND payload IS NOT NULL AND message_ids IS NULL AND fact_ids IS NULL)
    OR (message_id IS NULL AND event_id IS NULL AND message_ids IS NOT NULL AND fact_ids IS NULL
        AND cardinality(message_ids) BETWEEN 1 AND 64
        AND cardinality(versions) = cardinality(message_ids)
        AND (statuses IS NULL OR cardinality(statuses) = cardinality(message_ids)))
    OR (message_id IS NULL AND event_id IS NULL AND payload IS NULL AND versions IS NULL AND statuses IS NULL
        AND message_ids IS NOT NULL AND fact_ids IS NOT NULL
        AND cardinality(message_ids) BETWEEN 1 AND 64
        AND cardinality(fact_ids) = cardinality(message_ids))) NOT VALID;
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_one_or_batch;

-- A message's tracking events, for its operation status: a fact's row was written by the fact's own transaction, so
-- its created_at is the fact's recorded_at (both that transaction's now()). One entry per batch row, not per event.
CREATE INDEX outbox_fact_rows_idx ON outbox (created_at) WHERE fact_ids IS NOT NULL;

-- V101's view, and a batched tracking event: its type from the fact's state, its id `<message id>:tracking:<fact id>`,
-- its payload the fields the facts' statement wrote before V115, the recipient's address from its row. None of those
-- columns changes once the fact exists, except where erasure hashes an address, which it did in the stored payload too.
-- A fact deleted while its row is kept (a ledger retention shorter than notify.retention) reads as `recipient.*` with
-- its id and null fields, so that the row's numbering stays whole; no subscription names that type.
CREATE OR REPLACE VIEW outbox_events AS
SELECT o.seq,
       o.pub_seq + e.ord - 1 AS pub_seq,
       coalesce(o.event_id, CASE WHEN e.fact_id IS NOT NULL THEN e.id::text || ':tracking:' || e.fact_id END,
                e.id::text || ':' || e.version) AS event_id,
       e.id AS message_id,
       CASE WHEN e.fact_id IS NULL THEN o.type
            ELSE CASE f.state WHEN 'delivered' THEN 'recipient.delivered' WHEN 'deferred' THEN 'recipient.deferred'
                              WHEN 'bounced' THEN 'recipient.bounced' WHEN 'expired' THEN 'recipient.bounced'
                              ELSE o.type END END AS type,
       coalesce(o.payload, CASE
           WHEN e.fact_id IS NOT NULL THEN
             jsonb_build_object('id', e.id, 'recipient', f.address, 'idx', f.idx, 'state', f.state, 'at', f.at,
                                'remoteHost', f.remote_host, 'dsn', f.dsn, 'reply', f.reply, 'category', f.category,
                                'rule', f.rule, 'source', f.source, 'queueId', f.queue_id)
           WHEN o.type = 'message.pending' THEN jsonb_build_object('id', e.id, 'status', 'PENDING', 'version', e.version,
               'intake', m.intake, 'mailFrom', m.mail_from, 'messageId', m.message_id_header, 'authUser', m.auth_user)
           ELSE jsonb_build_object('id', e.id, 'status', e.status, 'version', e.version, 'reply', m.downstream_reply)
         END)
         || CASE WHEN m.tags IS NULL AND m.metadata IS NULL THEN '{}'::jsonb
                 ELSE jsonb_strip_nulls(jsonb_build_object('tags', to_jsonb(m.tags), 'metadata', m.metadata)) END AS payload,
       m.auth_user,
       o.created_at,
       o.published_at,
       m.tags
  FROM outbox o
  CROSS JOIN LATERAL unnest(coalesce(o.message_ids, ARRAY[o.message_id]), coalesce(o.versions, ARRAY[0]),
                            coalesce(o.statuses, ARRAY[NULL::text]), coalesce(o.fact_ids, ARRAY[NULL::bigint]))
                     WITH ORDINALITY AS e(id, version, status, fact_id, ord)
  LEFT JOIN messages m ON m.id = e.id
  LEFT JOIN LATERAL (SELECT d.message_id, d.idx, d.state, d.at, d.remote_host, d.dsn, d.reply, d.category, d.rule,
                            d.source, d.queue_id, r.address
                       FROM delivery_facts d JOIN recipients r ON r.message_id = d.message_id AND r.idx = d.idx
                      WHERE d.id = e.fact_id) f ON e.fact_id IS NOT NULL
 WHERE e.id IS NOT NULL;
