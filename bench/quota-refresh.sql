-- The quota refresh's read with many users (docs/design.md §8.9 "The early refusal"): every node reads today's
-- counter rows every tenants.refreshInterval (operate.quota.QuotaStore's TODAY statement). :v_users counter rows of
-- today are written in a transaction that is rolled back, and the read is timed with EXPLAIN ANALYZE, :v_runs times;
-- prints each run's execution time in ms. psql -v v_users=10000 -v v_runs=7 -f bench/quota-refresh.sql
BEGIN;
INSERT INTO quota_usage (user_name, hour_start, hour_used, day_start, day_used, hour_limit, day_limit)
SELECT 'user' || i, date_trunc('hour', now()), i % 50, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       i % 500, 1000, 10000
  FROM generate_series(1, :v_users) AS i;
ANALYZE quota_usage;
PREPARE today(timestamptz) AS
  SELECT user_name, hour_start, hour_used, hour_refused, day_start, day_used, day_refused
    FROM quota_usage WHERE day_start >= $1 ORDER BY user_name;
SELECT format('EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE today(%L)',
              date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') FROM generate_series(1, :v_runs) \gexec
ROLLBACK;
