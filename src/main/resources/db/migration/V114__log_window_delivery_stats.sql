-- The follower's position also names the bytes before it (docs/design.md §8.13, docs/data-model.md §5.29): the SHA-256
-- of the up to 4,096 bytes of the file before `position`. A restart resumes in the file at the path only when its inode
-- and these bytes are the same; otherwise the file of the last run is looked for among the path's rotated siblings,
-- uncompressed (by inode or these bytes: a copytruncate copy has another inode) or gzip'd (by these bytes, read through
-- the decompressor to the position), and its unread end read before the new file. Null in rows saved before V114: such
-- a position is trusted by its inode alone, as before, and cannot find a gzip'd file.
ALTER TABLE tracking_log_positions ADD COLUMN window_sha256 bytea CHECK (octet_length(window_sha256) = 32);

-- Usage statistics by delivery state and category (docs/design.md §8.12, docs/data-model.md §5.29): per UTC hour of the
-- messages' ledger ids, user, delivery state and category, the number of recipients whose state that is. A recipient's
-- state is one fact of delivery_facts: its last final one (delivered, bounced, expired) by time, else its last
-- deferral, else its last other; ties by id (delivery_rank below, then at, then id, in every reader). Facts keep coming
-- for days after an hour ended (deferrals, late DSNs), so unlike stats_hours these rows are not of closed rows: they
-- count the facts with id <= stats_delivery_mark.fact_id, and a reader adds, live, the change of the recipients that have
-- a fact above the mark (their state with all facts, less their state with the facts up to the mark).
CREATE FUNCTION delivery_rank(state text) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN state IN ('delivered', 'bounced', 'expired') THEN 0 WHEN state = 'deferred' THEN 1 ELSE 2 END $$;

-- No unique key, as stats_hours (V106): an erasure rewrites auth_user in place and two values may become one; readers sum.
CREATE TABLE stats_delivery_hours (
  hour       timestamptz NOT NULL,
  auth_user  text,
  delivery   text        NOT NULL,
  category   text,
  recipients bigint      NOT NULL
);
CREATE INDEX stats_delivery_hours_hour_idx ON stats_delivery_hours (hour) INCLUDE (auth_user, delivery, category, recipients);
CREATE TABLE stats_delivery_rolled (
  hour      timestamptz PRIMARY KEY,
  rolled_at timestamptz NOT NULL
);
-- One row: every rolled hour's rows hold exactly the facts with id <= fact_id (of its messages).
CREATE TABLE stats_delivery_mark (
  one     boolean PRIMARY KEY DEFAULT true CHECK (one),
  fact_id bigint  NOT NULL
);
INSERT INTO stats_delivery_mark (one, fact_id) VALUES (true, 0);

-- The highest fact id once no fact is being written: every writer of delivery_facts takes
-- pg_advisory_xact_lock_shared(0x4C53, 2) before its insert (operate.tracking.TrackingStore), so this exclusive lock
-- waits for the transactions in progress and every fact with an id up to the answer has committed when it returns (an
-- identity is issued at insert, committed later: the highest visible id alone would not say that of the ids below it).
CREATE FUNCTION stats_delivery_barrier() RETURNS bigint
  LANGUAGE plpgsql
  AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(19539, 2);
  RETURN (SELECT coalesce(max(id), 0) FROM delivery_facts);
END $$;

-- Moves the roll-up to the facts with id <= upto (a barrier's answer): the recipients of rolled hours with a fact in
-- (mark, upto] lose their state as of the mark and get their state as of upto, summed into their hours' rows; then
-- the hours given that are not rolled yet are rolled as of upto. Under the roll-up's lock (V106's); an upto below the
-- mark (another node moved it meanwhile) does nothing. Returns the hours rolled. Called by STATS_ROLLUP (StatsRollup).
CREATE FUNCTION stats_roll_delivery(upto bigint, hours timestamptz[]) RETURNS bigint
  LANGUAGE plpgsql
  AS $$
DECLARE
  old bigint;
  n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(19539, 1);
  SELECT fact_id INTO old FROM stats_delivery_mark;
  IF upto < old THEN
    RETURN 0;
  END IF;
  WITH t AS (
    SELECT DISTINCT f.message_id, f.idx FROM delivery_facts f
     WHERE f.id > old AND f.id <= upto AND ledger_id_hour(f.message_id) IN (SELECT hour FROM stats_delivery_rolled)),
  s AS (
    SELECT t.message_id, x.state, x.category, x.n FROM t CROSS JOIN LATERAL (
      (SELECT f.state, f.category, -1 AS n FROM delivery_facts f WHERE f.message_id = t.message_id AND f.idx = t.idx AND f.id <= old
        ORDER BY delivery_rank(f.state), f.at DESC, f.id DESC LIMIT 1)
      UNION ALL
      (SELECT f.state, f.category, 1 AS n FROM delivery_facts f WHERE f.message_id = t.message_id AND f.idx = t.idx AND f.id <= upto
        ORDER BY delivery_rank(f.state), f.at DESC, f.id DESC LIMIT 1)) x),
  d AS (
    SELECT ledger_id_hour(s.message_id) AS hour, m.auth_user, s.state AS delivery, s.category, sum(s.n) AS n
      FROM s JOIN messages m ON m.id = s.message_id GROUP BY 1, 2, 3, 4),
  gone AS (
    DELETE FROM stats_delivery_hours h WHERE h.hour IN (SELECT hour FROM d)
    RETURNING h.hour, h.auth_user, h.delivery, h.category, h.recipients AS n)
  INSERT INTO stats_delivery_hours (hour, auth_user, delivery, category, recipients)
  SELECT u.hour, u.auth_user, u.delivery, u.category, sum(u.n)
    FROM (SELECT * FROM gone UNION ALL SELECT * FROM d) u
   GROUP BY 1, 2, 3, 4 HAVING sum(u.n) <> 0;

  WITH todo AS (
    SELECT DISTINCT u.h FROM unnest(hours) AS u(h) WHERE NOT EXISTS (SELECT 1 FROM stats_delivery_rolled r WHERE r.hour = u.h)),
  fin AS (
    SELECT DISTINCT ON (f.message_id, f.idx) todo.h, f.message_id, f.state, f.category
      FROM todo JOIN delivery_facts f
        ON f.message_id >= ledger_id_lowest(todo.h) AND f.message_id < ledger_id_lowest(todo.h + interval '1 hour')
     WHERE f.id <= upto
     ORDER BY f.message_id, f.idx, delivery_rank(f.state), f.at DESC, f.id DESC),
  r AS (INSERT INTO stats_delivery_rolled (hour, rolled_at) SELECT h, now() FROM todo RETURNING 1),
  i AS (
    INSERT INTO stats_delivery_hours (hour, auth_user, delivery, category, recipients)
    SELECT fin.h, m.auth_user, fin.state, fin.category, count(*) FROM fin JOIN messages m ON m.id = fin.message_id
     GROUP BY 1, 2, 3, 4)
  SELECT count(*) INTO n FROM r;
  UPDATE stats_delivery_mark SET fact_id = upto;
  RETURN n;
END $$;
