-- Resubmission claims keyed by the hour they were taken (docs/data-model.md §5.32, docs/contract.md §1.13; issue 33,
-- cut 2 of bench/results/2026-12-05-throughput-profile.md).
--
-- V98 keyed resubmission_claims by the fingerprint alone: a hash, so every open's insert landed on a random leaf of
-- an index that holds the whole window (millions of claims), and the first change of a leaf after each checkpoint
-- wrote the whole page to the WAL (measured +1,409 B a message at 2 M claims, ~5.5 KB projected at the 5-day window).
-- Here the key leads with the claim's hour (`bucket`: whole hours since the epoch of claimed_at), so an open's insert
-- touches only the current hour's leaves, and the table is partitioned by day (24 buckets), so retention drops a
-- day's partition instead of deleting its rows one by one.
--
-- The key is no longer unique on the fingerprint, so ON CONFLICT cannot decide who holds a claim any more. The open
-- takes a transaction-scoped advisory lock on each of its fingerprints (ledger.OpenBatch.LOCK, class 0x4C52, the
-- fingerprint's first 32 bits) in a statement of its own, then, in its statement (whose snapshot is taken after the
-- locks are granted, so it sees every claim committed by an earlier holder of the lock), probes the window's hours for
-- the live claim and writes the new one. Of two opens of one fingerprint, on one node or several, the second waits for
-- the first's commit and then finds its claim: exactly one wins, as ON CONFLICT made sure before.
CREATE FUNCTION resubmission_claim_hour(at timestamptz) RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  -- The epoch of a timestamptz does not depend on the session's time zone: immutable in fact.
  RETURN floor(extract(epoch FROM at) / 3600)::int;

-- V98's table steps aside (its claims are moved below, then it goes).
ALTER TABLE resubmission_claims RENAME TO resubmission_claims_v98;
ALTER INDEX resubmission_claims_message_idx RENAME TO resubmission_claims_v98_message_idx;

CREATE TABLE resubmission_claims (
  bucket      int         NOT NULL,
  fingerprint uuid        NOT NULL,
  message_id  uuid        NOT NULL,
  claimed_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  replaces    uuid,
  CHECK (bucket = resubmission_claim_hour(claimed_at))
) PARTITION BY RANGE (bucket);
-- Not unique: the advisory lock, not the index, keeps one live claim a fingerprint; an expired claim may share its
-- hour with its successor (a window shorter than an hour) until its partition is dropped.
CREATE INDEX resubmission_claims_key ON resubmission_claims (bucket, fingerprint);
-- Erasure finds a row's claims by its id: a BRIN summary, which an insert into a partition's newest pages does not
-- touch (as V98's).
CREATE INDEX resubmission_claims_message_idx ON resubmission_claims USING brin (message_id);
-- Claims of a day whose partition the retention job has not made (it makes them a week ahead): still found by the
-- probe, only not dropped by day; retention deletes its expired rows in batches.
CREATE TABLE resubmission_claims_default PARTITION OF resubmission_claims DEFAULT;
-- And its own fingerprint index, so that a probe of its days costs one descent however many it holds (it takes the
-- random inserts only while a day has no partition of its own).
CREATE INDEX resubmission_claims_default_fingerprint ON resubmission_claims_default (fingerprint);

-- Makes the daily partitions from the UTC day of from_at to `ahead` days after today, each named
-- resubmission_claims_pYYYYMMDD and holding the buckets of its day; a day some of whose claims already sit in the
-- default partition stays there. Answers how many it made. Called here and by the RESUBMISSION_RETENTION job.
CREATE FUNCTION resubmission_claims_make(from_at timestamptz, ahead int) RETURNS int
  LANGUAGE plpgsql AS $$
DECLARE
  d date;
  lo int;
  made int := 0;
BEGIN
  FOR d IN SELECT generate_series((from_at AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + ahead,
                                  interval '1 day')::date
  LOOP
    lo := (d - date '1970-01-01') * 24;
    CONTINUE WHEN to_regclass('resubmission_claims_p' || to_char(d, 'YYYYMMDD')) IS NOT NULL;
    CONTINUE WHEN EXISTS (SELECT 1 FROM resubmission_claims_default WHERE bucket >= lo AND bucket < lo + 24);
    EXECUTE format('CREATE TABLE %I PARTITION OF resubmission_claims FOR VALUES FROM (%s) TO (%s)',
                   'resubmission_claims_p' || to_char(d, 'YYYYMMDD'), lo, lo + 24);
    made := made + 1;
  END LOOP;
  RETURN made;
END $$;

-- How far the closed days' own fingerprint indexes reach: every daily partition below `through` (a bucket) has an
-- index on (fingerprint) alone, built once its day was over and nothing but a takeover's delete writes to it any more.
-- The open probes those days with one descent each, and the hours from `through` on (today's, and any day whose
-- index is not built yet) hour by hour on the (bucket, fingerprint) key. One row.
CREATE TABLE resubmission_claims_indexed (through int NOT NULL);
INSERT INTO resubmission_claims_indexed VALUES (0);

-- With `build`, builds the fingerprint index of every daily partition whose day is over and has none (valid); then
-- moves `through` to the start of the first day still open, or of the first closed day still without a valid index,
-- in the same transaction (an open that reads the new `through` plans with the new indexes). The migration builds;
-- the RESUBMISSION_RETENTION job builds CONCURRENTLY before its pass (ledger.Ledger.pruneClaims: a plain CREATE
-- INDEX would hold up every open for the build) and calls this without `build`.
CREATE FUNCTION resubmission_claims_index(build boolean) RETURNS int
  LANGUAGE plpgsql AS $$
DECLARE
  p record;
  built int := 0;
  open_from int := resubmission_claim_hour(now()) / 24 * 24;
  through_to int := resubmission_claim_hour(now()) / 24 * 24;
BEGIN
  FOR p IN SELECT c.oid::regclass AS part, c.relname,
                  (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(([0-9]+)\)'))[1]::int AS lo,
                  (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(([0-9]+)\)'))[1]::int AS hi
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'resubmission_claims'::regclass
  LOOP
    CONTINUE WHEN p.hi IS NULL OR p.hi > open_from
               OR EXISTS (SELECT 1 FROM pg_index x WHERE x.indexrelid = to_regclass(p.relname || '_fingerprint') AND x.indisvalid);
    IF build THEN
      EXECUTE format('DROP INDEX IF EXISTS %I', p.relname || '_fingerprint');
      EXECUTE format('CREATE INDEX %I ON %s (fingerprint)', p.relname || '_fingerprint', p.part);
      built := built + 1;
    ELSE
      through_to := least(through_to, p.lo);
    END IF;
  END LOOP;
  UPDATE resubmission_claims_indexed SET through = through_to WHERE through <> through_to;
  RETURN built;
END $$;

-- Drops every daily partition that ended more than `window_secs` ago and holds no live claim (a claim taken under a
-- longer window keeps its day), then deletes at most `batch` expired claims of the default partition. Answers the
-- claims gone: those of the dropped days, and those deleted.
CREATE FUNCTION resubmission_claims_drop(window_secs float8, batch int, OUT dropped bigint, OUT deleted int)
  LANGUAGE plpgsql AS $$
DECLARE
  p record;
  live boolean;
  n bigint;
BEGIN
  dropped := 0;
  FOR p IN SELECT c.oid::regclass AS part,
                  (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(([0-9]+)\)'))[1]::int AS hi
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'resubmission_claims'::regclass
            ORDER BY c.relname
  LOOP
    CONTINUE WHEN p.hi IS NULL OR p.hi > resubmission_claim_hour(now() - make_interval(secs => window_secs));
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE expires_at >= now()), (SELECT count(*) FROM %s)', p.part, p.part)
       INTO live, n;
    CONTINUE WHEN live;
    EXECUTE format('DROP TABLE %s', p.part);
    dropped := dropped + n;
  END LOOP;
  WITH doomed AS (
    SELECT ctid FROM resubmission_claims_default WHERE expires_at < now() LIMIT batch FOR UPDATE SKIP LOCKED)
  DELETE FROM resubmission_claims_default c USING doomed d WHERE c.ctid = d.ctid AND c.expires_at < now();
  GET DIAGNOSTICS deleted = ROW_COUNT;
END $$;

-- One pass of the RESUBMISSION_RETENTION job (ledger.Ledger.pruneClaims): the next week's partitions, the closed
-- days' indexes, the days past the window dropped and a batch of the default partition's expired claims deleted.
CREATE FUNCTION resubmission_claims_keep(window_secs float8, batch int, OUT dropped bigint, OUT deleted int)
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM resubmission_claims_make(now(), 7);
  PERFORM resubmission_claims_index(false);
  SELECT d.dropped, d.deleted INTO dropped, deleted FROM resubmission_claims_drop(window_secs, batch) d;
END $$;

-- The days of the claims there are, and the next week's, which the opens write; then the claims, each in its hour:
-- still valid, found by the next open's probe as before.
SELECT resubmission_claims_make(least(now(), (SELECT min(claimed_at) FROM resubmission_claims_v98)), 7);
INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at, replaces)
SELECT resubmission_claim_hour(claimed_at), fingerprint, message_id, claimed_at, expires_at, replaces
  FROM resubmission_claims_v98;
DROP TABLE resubmission_claims_v98;
SELECT resubmission_claims_index(true);
