-- A generated ledger for the usage statistics (docs/design.md §8.12), like PartitionMigrationTest's generator: ids are
-- UUIDv7 made of a millisecond spread evenly over [v_from_ms, v_to_ms) and the row's number, so each lands in its
-- week's partition. v_messages messages numbered from v_first (run it in chunks: v_first = 1, 1 + chunk, ...), of
-- v_users users with a skewed share each (user0 sends most, as a few applications do; one in 50 without a user), sizes
-- 500 B to 20 kB, 1 to 3 recipients, statuses as a relaying gateway sees them (about 95 % SENT, 2 % FAILED_TEMP,
-- 1.5 % FAILED_PERM, 0.2 % RESOLVED_DELIVERED; in the last two hours 0.5 % PENDING and 0.3 % UNKNOWN; before them
-- open rows are what the stale watch and the operators leave, a few UNKNOWN in 100,000). Deterministic: no random().
-- psql -v v_messages=1000000 -v v_first=1 -v v_from_ms=... -v v_to_ms=... -v v_total=... -v v_users=300 -f bench/stats-generate.sql
-- (v_total: the whole ledger's count, which sets the spacing of the ids; StatsTest runs this file too.)
WITH g AS (
  SELECT s.i, s.ms, (lpad(to_hex(s.ms), 12, '0') || '7000' || '8' || lpad(to_hex(s.i), 15, '0'))::uuid AS id,
         CASE WHEN s.h % 50 = 0 THEN NULL
              ELSE 'user' || floor(:v_users * power((s.h % 100003) / 100003.0, 3))::int END AS auth_user,
         500 + s.h % 19500 AS size,
         1 + (s.h / 7) % 3 AS rcpts,
         CASE WHEN s.h % 1000 < 20 THEN 'FAILED_TEMP' WHEN s.h % 1000 < 35 THEN 'FAILED_PERM'
              WHEN s.h % 1000 < 40 AND s.ms > :v_to_ms::bigint - 7200000 THEN 'PENDING'
              WHEN s.h % 1000 < 43 AND (s.ms > :v_to_ms::bigint - 7200000 OR s.h % 100000 BETWEEN 40 AND 42) THEN 'UNKNOWN'
              WHEN s.h % 1000 < 45 THEN 'RESOLVED_DELIVERED' ELSE 'SENT' END AS status
    FROM (SELECT i, :v_from_ms::bigint + (i - 1) * (:v_to_ms::bigint - :v_from_ms::bigint) / :v_total::bigint AS ms,
                 (i * 2654435761) % 4294967296 AS h
            FROM generate_series(:v_first::bigint, :v_first::bigint + :v_messages::bigint - 1) AS i) s),
m AS (
  INSERT INTO messages (id, intake, auth_user, mail_from, size_bytes, body_sha256, route, status, version, received_at,
                        settled_at)
  SELECT g.id, 'SMTP', g.auth_user, 'app@example.com', g.size, repeat('0', 64), 'smarthost:127.0.0.1:25', g.status,
         CASE WHEN g.status = 'PENDING' THEN 1 ELSE 2 END, to_timestamp(g.ms / 1000.0),
         CASE WHEN g.status = 'PENDING' THEN NULL ELSE to_timestamp(g.ms / 1000.0) END
    FROM g)
INSERT INTO recipients (message_id, idx, address, status)
SELECT g.id, k, 'r' || k || '@example.net',
       CASE g.status WHEN 'SENT' THEN 'ACCEPTED' ELSE g.status END
  FROM g, generate_series(0, g.rcpts - 1) AS k;
