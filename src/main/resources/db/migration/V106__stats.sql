-- Usage statistics (docs/data-model.md §5.22, docs/design.md §8.12): an hourly roll-up of the ledger, written by the
-- single-active STATS_ROLLUP job off the hot path. Nothing here is read or written by an open or a settle.

-- The smallest ledger id issued at or after t (ledger.LedgerIds.lowest): an hour's rows are the id range
-- [ledger_id_lowest(h), ledger_id_lowest(h + 1 hour)), read through the primary key of one weekly partition.
CREATE FUNCTION ledger_id_lowest(t timestamptz) RETURNS uuid
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '70008000000000000000')::uuid $$;

-- The UTC hour an id was issued in (its first 48 bits are milliseconds). Integer arithmetic: no time zone involved.
CREATE FUNCTION ledger_id_hour(id uuid) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_timestamp((('x' || substr(id::text, 1, 8) || substr(id::text, 10, 4))::bit(48)::bigint / 3600000) * 3600) $$;

-- The closed rows (every status but PENDING and UNKNOWN, which no writer ever changes again) of each rolled hour, per
-- user and status. No unique key on purpose: an erasure rewrites auth_user in place (§8.6) and two users' values may
-- become one; the query sums.
CREATE TABLE stats_hours (
  hour timestamptz NOT NULL,
  auth_user text,
  status text NOT NULL,
  messages bigint NOT NULL,
  recipients bigint NOT NULL,
  bytes bigint NOT NULL
);
CREATE INDEX stats_hours_hour_idx ON stats_hours (hour) INCLUDE (auth_user, status, messages, recipients, bytes);

-- The same per tag (messages.tags, V101): a message with several tags counts once per tag, one without none.
CREATE TABLE stats_hour_tags (
  hour timestamptz NOT NULL,
  auth_user text,
  status text NOT NULL,
  tag text NOT NULL,
  messages bigint NOT NULL,
  recipients bigint NOT NULL,
  bytes bigint NOT NULL
);
CREATE INDEX stats_hour_tags_hour_idx ON stats_hour_tags (hour);

-- The ids of the rows of a rolled hour that were still open (PENDING or UNKNOWN) when it was rolled: the query reads
-- them live from messages, the job folds them into stats_hours once they are closed.
CREATE TABLE stats_open (
  id uuid NOT NULL,
  hour timestamptz NOT NULL
);
CREATE INDEX stats_open_hour_idx ON stats_open (hour);

-- The same per UTC day, once all 24 of its hours are rolled: the sum of their stats_hours rows, made again whenever one
-- of them is rolled again. A 30-day, per-day query reads 30 days x users x statuses rows instead of 24 times as many.
CREATE TABLE stats_days (
  day timestamptz NOT NULL,
  auth_user text,
  status text NOT NULL,
  messages bigint NOT NULL,
  recipients bigint NOT NULL,
  bytes bigint NOT NULL
);
CREATE INDEX stats_days_day_idx ON stats_days (day) INCLUDE (auth_user, status, messages, recipients, bytes);
CREATE TABLE stats_days_rolled (day timestamptz PRIMARY KEY);

-- Which hours are rolled, when, and how many messages they held then.
CREATE TABLE stats_rolled (
  hour timestamptz PRIMARY KEY,
  rolled_at timestamptz NOT NULL,
  messages bigint NOT NULL
);

-- One hour rolled (again), as of one snapshot (one statement): its closed rows per user and status, the ids of its
-- open ones, and the mark that it is rolled; then its day's sum, when the day is whole. The rows are the hour's id range, read through the primary keys of its
-- weekly partition. Every roll-up write takes the same advisory lock first, so two nodes (a fenced leader's last hour
-- and the new leader's) never interleave, and the statement's snapshot, taken after the lock, sees the other's rows.
-- Called by the STATS_ROLLUP job (operate.stats.StatsRollup) and by bench/stats.sh.
CREATE FUNCTION stats_roll_hour(h timestamptz) RETURNS bigint
  LANGUAGE plpgsql
  AS $$
DECLARE
  n bigint;
  d timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(19539, 1); -- 0x4C53, "LS"
  WITH rc AS (
    SELECT r.message_id, count(*) AS n FROM recipients r
     WHERE r.message_id >= ledger_id_lowest(h) AND r.message_id < ledger_id_lowest(h + interval '1 hour')
     GROUP BY r.message_id),
  hour_rows AS (
    SELECT m.id, m.auth_user, m.status, m.size_bytes, m.tags, coalesce(rc.n, 0) AS n
      FROM messages m LEFT JOIN rc ON rc.message_id = m.id
     WHERE m.id >= ledger_id_lowest(h) AND m.id < ledger_id_lowest(h + interval '1 hour')),
  d1 AS (DELETE FROM stats_hours WHERE hour = h),
  d2 AS (DELETE FROM stats_open WHERE hour = h),
  d3 AS (DELETE FROM stats_hour_tags WHERE hour = h),
  i3 AS (
    INSERT INTO stats_hour_tags (hour, auth_user, status, tag, messages, recipients, bytes)
    SELECT h, x.auth_user, x.status, t.tag, count(*), sum(x.n), sum(x.size_bytes)
      FROM hour_rows x CROSS JOIN LATERAL unnest(x.tags) AS t(tag)
     WHERE x.status NOT IN ('PENDING', 'UNKNOWN') GROUP BY x.auth_user, x.status, t.tag),
  i1 AS (
    INSERT INTO stats_hours (hour, auth_user, status, messages, recipients, bytes)
    SELECT h, x.auth_user, x.status, count(*), sum(x.n), sum(x.size_bytes) FROM hour_rows x
     WHERE x.status NOT IN ('PENDING', 'UNKNOWN') GROUP BY x.auth_user, x.status),
  i2 AS (INSERT INTO stats_open (id, hour) SELECT x.id, h FROM hour_rows x WHERE x.status IN ('PENDING', 'UNKNOWN')),
  r AS (
    INSERT INTO stats_rolled (hour, rolled_at, messages) SELECT h, now(), count(*) FROM hour_rows
    ON CONFLICT (hour) DO UPDATE SET rolled_at = EXCLUDED.rolled_at, messages = EXCLUDED.messages)
  SELECT count(*) INTO n FROM hour_rows;
  -- Its day, summed again from its hours once all 24 are rolled (this statement sees the hour just written).
  d := to_timestamp(floor(extract(epoch FROM h) / 86400) * 86400);
  DELETE FROM stats_days WHERE day = d;
  DELETE FROM stats_days_rolled WHERE day = d;
  IF (SELECT count(*) FROM stats_rolled WHERE hour >= d AND hour < d + interval '1 day') = 24 THEN
    INSERT INTO stats_days (day, auth_user, status, messages, recipients, bytes)
    SELECT d, s.auth_user, s.status, sum(s.messages), sum(s.recipients), sum(s.bytes) FROM stats_hours s
     WHERE s.hour >= d AND s.hour < d + interval '1 day' GROUP BY s.auth_user, s.status;
    INSERT INTO stats_days_rolled (day) VALUES (d);
  END IF;
  RETURN n;
END $$;
