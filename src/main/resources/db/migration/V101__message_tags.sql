-- Tags and metadata on every message (docs/data-model.md §5.17, docs/design.md §6.1): what the application says the
-- mail is about (X-Ledgerpost-Tag / X-Ledgerpost-Metadata headers over SMTP, `tags` / `metadata` over the send API),
-- written by the open's own statement (no extra commit), never changed afterwards.
--
-- Both columns are nullable without a default: on the partitioned messages table that is a catalog change only, no
-- row is rewritten. An untagged message stores NULL in both, so it costs the open nothing and the index below nothing.
ALTER TABLE messages ADD COLUMN tags text[], ADD COLUMN metadata jsonb;

-- `GET /api/v1/messages?tag=` (tags @> ARRAY[tag]). A GIN index over the tag array, partial: untagged messages, most
-- of a ledger in many installations, have no entry, so their open and settle never touch it. A partitioned index (one
-- per weekly partition, made with each new week by Partitions.ensureWeeks). A tagged message's settle is not a HOT
-- update (§5.1), so it adds its tags once more; GIN's pending list (fastupdate) keeps that an append.
CREATE INDEX messages_tags_idx ON messages USING gin (tags) WHERE tags IS NOT NULL;

-- A webhook endpoint made through the API may take only the events of messages that carry one of these tags
-- (NULL: every message of its owner). The configuration file's endpoints say it in webhooks.endpoints[].tags.
ALTER TABLE webhook_api_endpoints ADD COLUMN tags text[];

-- Every event of a message carries the message's tags and metadata (when it has any), whatever wrote the event: the
-- view builds them from the message row, which the view already joins, so no writer had to change and an event
-- written before this migration reads the same as one written after. A new column at the end: `tags`, the message's
-- tags, for the webhook recording's filter. (Suppression events name no message: nothing is added to theirs.)
CREATE OR REPLACE VIEW outbox_events AS
SELECT o.seq,
       o.pub_seq + e.ord - 1 AS pub_seq,
       coalesce(o.event_id, e.id::text || ':' || e.version) AS event_id,
       e.id AS message_id,
       o.type,
       coalesce(o.payload, CASE o.type
           WHEN 'message.pending' THEN jsonb_build_object('id', e.id, 'status', 'PENDING', 'version', e.version,
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
                            coalesce(o.statuses, ARRAY[NULL::text])) WITH ORDINALITY AS e(id, version, status, ord)
  LEFT JOIN messages m ON m.id = e.id
 WHERE e.id IS NOT NULL;
