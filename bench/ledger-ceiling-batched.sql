-- pgbench script: the ledger's group-committed open and settle (dev.ledgerpost.ledger.OpenBatch and
-- SettleBatch; keep them in step) for a batch of 10 messages with one recipient each. Each statement is
-- one transaction, as in the gateway; relay.sh multiplies the transactions per second by 10.
SELECT array_agg(gen_random_uuid()) AS ids FROM generate_series(1, 10) \gset
WITH q AS (SELECT nextval('outbox_seq_seq') AS seq),
m AS (
  INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                        body_sha256, route, status, version, received_at, open_seq)
  SELECT t.id, 'SMTP', NULL, '127.0.0.1', 'bench', 'a@example.com', '<' || t.id || '@example.com>', 2048,
         'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', '127.0.0.1:25', 'PENDING', 1, now(), q.seq
    FROM q, unnest(:ids::uuid[]) AS t(id)
  RETURNING id),
r AS (
  INSERT INTO recipients (message_id, idx, address, status, rcpt_reply)
  SELECT m.id, 0, 'b@example.net', 'PENDING', '250 2.1.5 Ok' FROM m),
o AS (
  INSERT INTO outbox (seq, type, message_ids, versions)
  SELECT q.seq, 'message.pending', array_agg(m.id ORDER BY m.id), array_agg(1) FROM q, m GROUP BY q.seq)
SELECT id FROM m;
WITH q AS (SELECT nextval('outbox_seq_seq') AS seq),
s AS (SELECT t.id, 1 AS version, 'SENT' AS status, '250 2.0.0 Ok: queued as 4XyZ' AS reply, NULL::text AS error,
             'ACCEPTED' AS recipient_status, 250 AS code, '2.0.0' AS enhanced, 'Ok: queued as 4XyZ' AS text, 1 AS expected
        FROM unnest(:ids::uuid[]) AS t(id)),
m AS (
  UPDATE messages
     SET status = s.status, version = messages.version + 1, downstream_reply = s.reply, last_error = s.error,
         settled_at = now(), settle_seq = q.seq
    FROM s, q
   WHERE messages.id = s.id AND messages.version = s.version AND messages.status = 'PENDING'
  RETURNING messages.id, messages.version, messages.status),
r AS (
  UPDATE recipients
     SET status = s.recipient_status, reply_code = s.code, enhanced_code = s.enhanced, reply_text = s.text
    FROM s
   WHERE recipients.message_id = s.id AND recipients.message_id IN (SELECT id FROM m) AND recipients.status = 'PENDING'
  RETURNING recipients.message_id),
touched AS (SELECT message_id, count(*) AS n FROM r GROUP BY message_id),
o AS (
  INSERT INTO outbox (seq, type, message_ids, versions, statuses)
  SELECT q.seq, 'message.settled', array_agg(m.id ORDER BY m.id), array_agg(m.version ORDER BY m.id),
         array_agg(m.status ORDER BY m.id)
    FROM q, m GROUP BY q.seq)
SELECT m.id, m.version,
       CASE WHEN coalesce(t.n, 0) <> s.expected
            THEN ledger_abort('settle of ' || m.id || ' touched ' || coalesce(t.n, 0) || ' recipients, expected ' || s.expected)
       END AS refused
  FROM m JOIN s ON s.id = m.id LEFT JOIN touched t ON t.message_id = m.id;
