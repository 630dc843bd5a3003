-- pgbench script, the fixed reference of bench/relay.sh: the ledger's per-message open and settle statements as
-- they were before group commit (run on the schema they were written for: the migrations up to V30), for one message with one recipient,
-- as dev.ledgerpost.ledger.Ledger issued them then. Kept unchanged as the yardstick of issue 12. Each is
-- one statement and so one transaction, as in the gateway.
SELECT gen_random_uuid() AS id \gset
WITH m AS (
  INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                        body_sha256, route, status, version, received_at)
  VALUES (:id, 'SMTP', NULL, '127.0.0.1', 'bench', 'a@example.com', '<bench@example.com>', 2048,
          'ab', 'smarthost', 'PENDING', 1, now())
  ON CONFLICT (id) DO NOTHING
  RETURNING id),
r AS (
  INSERT INTO recipients (message_id, idx, address, status, rcpt_reply)
  SELECT m.id, t.ord - 1, t.address, t.status, t.reply
    FROM m, unnest(ARRAY['b@example.net'], ARRAY['PENDING'], ARRAY['250 2.1.5 Ok']) WITH ORDINALITY AS t(address, status, reply, ord)),
o AS (
  INSERT INTO outbox (event_id, message_id, type, payload) SELECT m.id || ':1', m.id, 'message.pending', '{"status":"PENDING"}' FROM m)
SELECT count(*) AS inserted FROM m;
WITH m AS (
  UPDATE messages
     SET status = 'SENT', version = version + 1, downstream_reply = '250 2.0.0 Ok', last_error = NULL, settled_at = now()
   WHERE id = :id AND version = 1 AND status = 'PENDING'
  RETURNING id),
r AS (
  UPDATE recipients SET status = 'ACCEPTED', reply_code = 250, enhanced_code = '2.0.0', reply_text = 'Ok'
   WHERE message_id = (SELECT id FROM m) AND status = 'PENDING'
  RETURNING 1),
o AS (
  INSERT INTO outbox (event_id, message_id, type, payload) SELECT m.id || ':2', m.id, 'message.settled', '{"status":"SENT"}' FROM m)
SELECT (SELECT count(*) FROM m) AS updated,
       CASE WHEN (SELECT count(*) FROM m) = 1 AND (SELECT count(*) FROM r) <> 1
            THEN ledger_abort('touched ' || (SELECT count(*) FROM r) || ' recipients, expected 1') END AS refused;
