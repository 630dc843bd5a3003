-- pgbench script: the ledger's own open and settle transactions for one message with one recipient,
-- as dev.ledgerpost.ledger.Ledger issues them (see Ledger.java; keep the two in step).
SELECT gen_random_uuid() AS id \gset
BEGIN;
INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes, body_sha256, route, status, version, received_at)
  VALUES (:'id', 'SMTP', NULL, '127.0.0.1', 'bench', 'a@example.com', '<bench@example.com>', 2048, 'ab', 'smarthost', 'PENDING', 1, now())
  ON CONFLICT (id) DO NOTHING;
INSERT INTO recipients (message_id, idx, address, status, rcpt_reply) VALUES (:'id', 0, 'b@example.net', 'PENDING', '250 2.1.5 Ok');
WITH inserted AS (INSERT INTO outbox (event_id, message_id, type, payload) VALUES (:'id' || ':1', :'id', 'message.pending', '{"status":"PENDING"}') RETURNING seq)
  SELECT pg_notify('ledgerpost_outbox', '') FROM inserted;
COMMIT;
BEGIN;
UPDATE messages SET status = 'SENT', version = version + 1, downstream_reply = '250 2.0.0 Ok', last_error = NULL, settled_at = now()
  WHERE id = :'id' AND version = 1 AND status = 'PENDING';
UPDATE recipients SET status = 'ACCEPTED', reply_code = 250, enhanced_code = '2.0.0', reply_text = 'Ok'
  WHERE message_id = :'id' AND status = 'PENDING';
WITH inserted AS (INSERT INTO outbox (event_id, message_id, type, payload) VALUES (:'id' || ':2', :'id', 'message.settled', '{"status":"SENT"}') RETURNING seq)
  SELECT pg_notify('ledgerpost_outbox', '') FROM inserted;
COMMIT;
