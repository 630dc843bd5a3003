-- Publication recorded without rewriting the outbox row (docs/design.md §6.2, docs/data-model.md §5.33; issue 33, cut 4).
-- Before: the publisher's UPDATE outbox SET pub_seq, published_at rewrote every wide row (not HOT: a new heap tuple
-- and new entries in the primary key, event_id_key, pub_seq_key and published_at_idx), and every insert paid for
-- two indexes (pub_seq_key's NULL entry, unpublished_idx) that only this update fed.
-- Now: an outbox row is never changed. Its publication is one narrow insert-only row in outbox_pub (seq, pub_seq,
-- published_at), and the publisher finds the rows not yet published by the transaction that wrote them: `xid` (the
-- writer's top-level transaction id, a column default, so no writer's SQL changes) at or above
-- outbox_publisher.xid_horizon, with no outbox_pub row. The horizon is the oldest transaction still running when a
-- pass that took every unpublished row it could see began (pg_snapshot_xmin): every transaction below it had ended,
-- so each of its rows was visible to that pass and is published. A row written by a transaction still running is
-- above the horizon whatever its seq, which is why the horizon is over transaction ids and not over seq (seq values
-- become visible in commit order, §6.2).

CREATE TABLE outbox_pub (
  seq           bigint      PRIMARY KEY,        -- the outbox row (no foreign key: its check would lock the row)
  pub_seq       bigint      NOT NULL UNIQUE,    -- its first event's number; a row of n events takes n numbers
  published_at  timestamptz NOT NULL DEFAULT now()
);

-- Added without a default and then given one, so that the table is not rewritten: existing rows keep NULL.
ALTER TABLE outbox ADD COLUMN xid xid8;
ALTER TABLE outbox ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

ALTER TABLE outbox_publisher ADD COLUMN xid_horizon xid8 NOT NULL DEFAULT '0';

-- The existing publication state moves: every published row's number and time.
INSERT INTO outbox_pub (seq, pub_seq, published_at)
SELECT seq, pub_seq, published_at FROM outbox WHERE pub_seq IS NOT NULL;

-- Rows not yet published are found by their xid: give them this transaction's (the horizon starts at 0).
UPDATE outbox SET xid = pg_current_xact_id() WHERE pub_seq IS NULL;

-- The view reads the number and the time from outbox_pub; otherwise V115's.
DROP VIEW outbox_events;
DROP INDEX outbox_unpublished_idx;
DROP INDEX outbox_published_at_idx;
ALTER TABLE outbox DROP COLUMN pub_seq, DROP COLUMN published_at;

-- The publisher's scan, in this order: the rows of the transactions at or above the horizon (a few passes' worth).
CREATE INDEX outbox_xid_idx ON outbox (xid);

CREATE VIEW outbox_events AS
SELECT o.seq,
       p.pub_seq + e.ord - 1 AS pub_seq,
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
       p.published_at,
       m.tags
  FROM outbox o
  LEFT JOIN outbox_pub p ON p.seq = o.seq
  CROSS JOIN LATERAL unnest(coalesce(o.message_ids, ARRAY[o.message_id]), coalesce(o.versions, ARRAY[0]),
                            coalesce(o.statuses, ARRAY[NULL::text]), coalesce(o.fact_ids, ARRAY[NULL::bigint]))
                     WITH ORDINALITY AS e(id, version, status, fact_id, ord)
  LEFT JOIN messages m ON m.id = e.id
  LEFT JOIN LATERAL (SELECT d.message_id, d.idx, d.state, d.at, d.remote_host, d.dsn, d.reply, d.category, d.rule,
                            d.source, d.queue_id, r.address
                       FROM delivery_facts d JOIN recipients r ON r.message_id = d.message_id AND r.idx = d.idx
                      WHERE d.id = e.fact_id) f ON e.fact_id IS NOT NULL
 WHERE e.id IS NOT NULL;
