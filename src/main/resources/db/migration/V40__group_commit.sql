-- Group commit (docs/design.md §2.6 and §6.2): the ledger writes the opens (and, separately, the
-- settles) that arrive together as one statement and one commit, and their outbox events as ONE outbox
-- row per statement. Less database work per message: fewer indexes on the hot tables, room on each
-- page for HOT updates, and no second rewrite of every event to publish it.

-- An outbox row now carries one event (event_id, message_id, payload: resolutions, stale raises) or a
-- batch of events of one type (message_ids, versions, statuses: the opens or settles of one statement;
-- their payloads are read from the messages row when they are published). A published row's pub_seq is
-- the pub_seq of its first event; its events have pub_seq .. pub_seq + n - 1, still gap-free.
ALTER TABLE outbox
  ALTER COLUMN event_id DROP NOT NULL,
  ALTER COLUMN message_id DROP NOT NULL,
  ALTER COLUMN payload DROP NOT NULL,
  ADD COLUMN message_ids uuid[],
  ADD COLUMN versions integer[],
  ADD COLUMN statuses text[],
  ADD CONSTRAINT outbox_one_or_batch CHECK (
    (message_id IS NOT NULL AND event_id IS NOT NULL AND payload IS NOT NULL AND message_ids IS NULL)
    OR (message_id IS NULL AND event_id IS NULL AND message_ids IS NOT NULL
        AND cardinality(message_ids) BETWEEN 1 AND 64
        AND cardinality(versions) = cardinality(message_ids)
        AND (statuses IS NULL OR cardinality(statuses) = cardinality(message_ids))));

-- The single events of one message, for its operation status (batched events are found through
-- messages.open_seq / settle_seq instead).
CREATE INDEX outbox_message_idx ON outbox (message_id) WHERE message_id IS NOT NULL;

-- Which outbox rows hold a message's pending and settled events.
ALTER TABLE messages ADD COLUMN open_seq bigint, ADD COLUMN settle_seq bigint;

-- Indexes no query uses any more: listing is by id (UUIDv7, time-ordered: the primary key), and the
-- only rows the gateway looks for by index are the open ones: PENDING (settled_at IS NULL: the stale
-- watch, the gauges) and UNKNOWN (operators). A settle then adds to the primary key only. The predicate
-- names settled_at, not status = 'PENDING', on purpose: the settle's own "status = 'PENDING'" must never
-- make its generic plan read this index, which also holds the entries of rows settled since the last
-- vacuum; the settle reaches its rows by id.
DROP INDEX messages_received_idx;
DROP INDEX messages_status_received_idx;
DROP INDEX messages_message_id_header_idx;
CREATE INDEX messages_open_idx ON messages (received_at) WHERE settled_at IS NULL OR status = 'UNKNOWN';

-- Room on every page for the settle's new row versions: recipients' settle is then a HOT update.
ALTER TABLE messages SET (fillfactor = 80);
ALTER TABLE recipients SET (fillfactor = 80);

-- Every event as subscribers see it, one row per event, for the publisher, the history of resuming
-- subscribers, and people at a psql prompt. A batched event's id is <message id>:<version>, and its
-- payload is read from its message: the fields that never change, and the status and version the
-- batch row recorded for the event.
CREATE VIEW outbox_events AS
SELECT o.seq,
       o.pub_seq + e.ord - 1 AS pub_seq,
       coalesce(o.event_id, e.id::text || ':' || e.version) AS event_id,
       e.id AS message_id,
       o.type,
       coalesce(o.payload, CASE o.type
           WHEN 'message.pending' THEN jsonb_build_object('id', e.id, 'status', 'PENDING', 'version', e.version,
               'intake', m.intake, 'mailFrom', m.mail_from, 'messageId', m.message_id_header, 'authUser', m.auth_user)
           ELSE jsonb_build_object('id', e.id, 'status', e.status, 'version', e.version, 'reply', m.downstream_reply)
         END) AS payload,
       m.auth_user,
       o.created_at,
       o.published_at
  FROM outbox o
  CROSS JOIN LATERAL unnest(coalesce(o.message_ids, ARRAY[o.message_id]), coalesce(o.versions, ARRAY[0]),
                            coalesce(o.statuses, ARRAY[NULL::text])) WITH ORDINALITY AS e(id, version, status, ord)
  LEFT JOIN messages m ON m.id = e.id
 WHERE e.id IS NOT NULL;
