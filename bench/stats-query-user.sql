PREPARE stats_user(timestamptz, timestamptz, text, int) AS
WITH lo AS (SELECT coalesce((SELECT ledger_id_hour(id) FROM messages ORDER BY id LIMIT 1), 'infinity') AS h),
days AS (
  SELECT d.day FROM stats_days_rolled d
   WHERE $4 = 86400 AND d.day >= $1 AND d.day < $2 AND d.day >= (SELECT h FROM lo)),
rolled AS (
  SELECT r.hour, to_timestamp(floor(extract(epoch FROM r.hour) / 86400) * 86400) IN (SELECT day FROM days) AS in_day
    FROM stats_rolled r WHERE r.hour >= $1 AND r.hour < $2 AND r.hour >= (SELECT h FROM lo)),
live AS (
  SELECT g.h FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '1 hour') AS g(h)
   WHERE NOT EXISTS (SELECT 1 FROM rolled WHERE rolled.hour = g.h)),
facts AS (
  SELECT d.day AS h, d.auth_user, d.status,  d.messages, d.recipients, d.bytes
    FROM stats_days d
   WHERE d.day >= $1 AND d.day < $2 AND d.day IN (SELECT day FROM days) AND ($3::text IS NULL OR d.auth_user = $3)
  UNION ALL
  SELECT s.hour, s.auth_user, s.status,  s.messages, s.recipients, s.bytes
    FROM stats_hours s
   WHERE s.hour >= $1 AND s.hour < $2 AND s.hour IN (SELECT hour FROM rolled WHERE NOT in_day)
     AND ($3::text IS NULL OR s.auth_user = $3)
  UNION ALL
  SELECT p.hour, m.auth_user, m.status,  1, (SELECT count(*) FROM recipients r WHERE r.message_id = m.id), m.size_bytes
    FROM stats_open p JOIN messages m ON m.id = p.id 
   WHERE p.hour >= $1 AND p.hour < $2 AND p.hour IN (SELECT hour FROM rolled) AND ($3::text IS NULL OR m.auth_user = $3)
  UNION ALL
  SELECT l.h, m.auth_user, m.status,  1, (SELECT count(*) FROM recipients r WHERE r.message_id = m.id), m.size_bytes
    FROM live l
    JOIN LATERAL (SELECT * FROM messages m
                   WHERE m.id >= ledger_id_lowest(l.h) AND m.id < ledger_id_lowest(l.h + interval '1 hour')) m ON true 
   WHERE ($3::text IS NULL OR m.auth_user = $3))
SELECT to_timestamp(floor(extract(epoch FROM h) / $4) * $4) AS bucket, auth_user,
       sum(messages)::bigint AS messages, sum(recipients)::bigint AS recipients, sum(bytes)::bigint AS bytes
  FROM facts GROUP BY 1, auth_user ORDER BY 1, auth_user;
