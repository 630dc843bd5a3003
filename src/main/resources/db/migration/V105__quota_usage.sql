-- Sending quotas per user (docs/design.md §8.9 "Quotas", docs/data-model.md §5.21): one counter row per user that has
-- a messagesPerHour or messagesPerDay limit, holding the current clock hour's and UTC day's counts. The open's statement
-- (ledger.OpenBatch) takes its batch's share in the same statement and commit as the rows it writes (quota_take below):
-- no commit of its own per message, and the row lock serialises every node's opens of one user, so "exactly N accepted"
-- holds cluster-wide. The limits are not stored as the truth: each open passes the limits its node's tenants file says
-- now, so a raised limit applies with the next open. The event flags make quota.approaching and quota.exceeded once
-- per window each; the events are written by the same statement (outbox, §6.1).
CREATE TABLE quota_usage (
  user_name        text        PRIMARY KEY,
  hour_start       timestamptz NOT NULL,
  hour_used        integer     NOT NULL DEFAULT 0,
  hour_refused     integer     NOT NULL DEFAULT 0,
  hour_approaching boolean     NOT NULL DEFAULT false,
  hour_exceeded    boolean     NOT NULL DEFAULT false,
  day_start        timestamptz NOT NULL,
  day_used         integer     NOT NULL DEFAULT 0,
  day_refused      integer     NOT NULL DEFAULT 0,
  day_approaching  boolean     NOT NULL DEFAULT false,
  day_exceeded     boolean     NOT NULL DEFAULT false,
  -- the limits the last open applied (shown by the API beside the file's current ones; never read back as limits)
  hour_limit       bigint      NOT NULL DEFAULT 0,
  day_limit        bigint      NOT NULL DEFAULT 0,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
-- The nodes' refresh reads today's rows; the QUOTA_RETENTION job deletes the rows of days past.
CREATE INDEX quota_usage_day_idx ON quota_usage (day_start);

-- Takes a batch's share of every user's quotas and answers which opens were refused. Called once per open statement
-- (OpenBatch's CTE "qa"), with the batch's arrays in batch order: ids, users, each open's hour and day limit (0: none),
-- the window starts by the gateway's clock, and the approaching fraction. An open whose id already has a messages row
-- was counted by an earlier attempt of the same statement that committed (docs/contract.md §2.4): it is not counted
-- again. Users are locked in name order, so two nodes' statements never deadlock on each other's counter rows.
-- Per user: the first `granted` of its opens in batch order are accepted, the rest refused, naming the quota that is
-- used up (the day's when both are: waiting for the hour would not help) and when its window resets.
CREATE FUNCTION quota_take(ids uuid[], users text[], hour_limits bigint[], day_limits bigint[],
                           hs timestamptz, ds timestamptz, approaching float8,
                           OUT refused uuid[], OUT quotas text[], OUT limits bigint[], OUT resets timestamptz[])
LANGUAGE plpgsql AS $$
DECLARE
  u       record;
  r       quota_usage%ROWTYPE;
  n       integer;
  granted integer;
  wh      timestamptz;  -- the hour window counted into: never one older than the row's (nodes' clocks differ a little)
  wd      timestamptz;  -- the day window, likewise
  h_used  integer;
  d_used  integer;
  h_ref   integer;
  d_ref   integer;
  h_app   boolean;
  d_app   boolean;
  h_exc   boolean;
  d_exc   boolean;
  quota   text;
  lim     bigint;
  wstart  timestamptz;
  ends   timestamptz;
  ev      text;
BEGIN
  refused := '{}'; quotas := '{}'; limits := '{}'; resets := '{}';
  FOR u IN
    SELECT t.usr, max(t.hl) AS hl, max(t.dl) AS dl, array_agg(t.id ORDER BY t.ord) AS opens
      FROM unnest(ids, users, hour_limits, day_limits) WITH ORDINALITY AS t(id, usr, hl, dl, ord)
     WHERE t.usr IS NOT NULL AND (t.hl > 0 OR t.dl > 0)
       AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.id)
     GROUP BY t.usr ORDER BY t.usr
  LOOP
    n := cardinality(u.opens);
    INSERT INTO quota_usage (user_name, hour_start, day_start) VALUES (u.usr, hs, ds) ON CONFLICT (user_name) DO NOTHING;
    SELECT * INTO r FROM quota_usage WHERE user_name = u.usr FOR UPDATE;
    wh := greatest(hs, r.hour_start);
    wd := greatest(ds, r.day_start);
    IF r.hour_start = wh THEN
      h_used := r.hour_used; h_ref := r.hour_refused; h_app := r.hour_approaching; h_exc := r.hour_exceeded;
    ELSE
      h_used := 0; h_ref := 0; h_app := false; h_exc := false;
    END IF;
    IF r.day_start = wd THEN
      d_used := r.day_used; d_ref := r.day_refused; d_app := r.day_approaching; d_exc := r.day_exceeded;
    ELSE
      d_used := 0; d_ref := 0; d_app := false; d_exc := false;
    END IF;
    granted := n;
    IF u.hl > 0 THEN granted := least(granted, greatest(u.hl - h_used, 0)); END IF;
    IF u.dl > 0 THEN granted := least(granted, greatest(u.dl - d_used, 0)); END IF;
    h_used := h_used + granted;
    d_used := d_used + granted;

    IF granted < n THEN
      IF u.dl > 0 AND d_used >= u.dl THEN
        quota := 'messagesPerDay'; lim := u.dl; wstart := wd; ends := wd + interval '1 day';
        d_ref := d_ref + (n - granted);
      ELSE
        quota := 'messagesPerHour'; lim := u.hl; wstart := wh; ends := wh + interval '1 hour';
        h_ref := h_ref + (n - granted);
      END IF;
      FOR i IN granted + 1 .. n LOOP
        refused := refused || u.opens[i]; quotas := quotas || quota; limits := limits || lim; resets := resets || ends;
      END LOOP;
      IF (quota = 'messagesPerDay' AND NOT d_exc) OR (quota = 'messagesPerHour' AND NOT h_exc) THEN
        ev := 'quota:' || u.usr || ':' || quota || ':' || to_char(wstart AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') || ':exceeded';
        INSERT INTO outbox (event_id, message_id, type, payload)
        VALUES (ev, md5(ev)::uuid, 'quota.exceeded',
                jsonb_build_object('user', u.usr, 'quota', quota, 'limit', lim,
                                   'used', CASE WHEN quota = 'messagesPerDay' THEN d_used ELSE h_used END,
                                   'windowStart', wstart, 'resetsAt', ends, 'refusedId', u.opens[granted + 1]));
        IF quota = 'messagesPerDay' THEN d_exc := true; ELSE h_exc := true; END IF;
      END IF;
    END IF;

    -- approaching: the open whose count reaches the fraction of the limit, once per window
    IF granted > 0 AND u.hl > 0 AND NOT h_app AND h_used >= ceil(u.hl * approaching) THEN
      ev := 'quota:' || u.usr || ':messagesPerHour:' || to_char(wh AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') || ':approaching';
      INSERT INTO outbox (event_id, message_id, type, payload)
      VALUES (ev, md5(ev)::uuid, 'quota.approaching',
              jsonb_build_object('user', u.usr, 'quota', 'messagesPerHour', 'limit', u.hl, 'used', h_used,
                                 'windowStart', wh, 'resetsAt', wh + interval '1 hour', 'messageId', u.opens[granted]));
      h_app := true;
    END IF;
    IF granted > 0 AND u.dl > 0 AND NOT d_app AND d_used >= ceil(u.dl * approaching) THEN
      ev := 'quota:' || u.usr || ':messagesPerDay:' || to_char(wd AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') || ':approaching';
      INSERT INTO outbox (event_id, message_id, type, payload)
      VALUES (ev, md5(ev)::uuid, 'quota.approaching',
              jsonb_build_object('user', u.usr, 'quota', 'messagesPerDay', 'limit', u.dl, 'used', d_used,
                                 'windowStart', wd, 'resetsAt', wd + interval '1 day', 'messageId', u.opens[granted]));
      d_app := true;
    END IF;

    UPDATE quota_usage
       SET hour_start = wh, hour_used = h_used, hour_refused = h_ref, hour_approaching = h_app, hour_exceeded = h_exc,
           day_start = wd, day_used = d_used, day_refused = d_ref, day_approaching = d_app, day_exceeded = d_exc,
           hour_limit = u.hl, day_limit = u.dl, updated_at = now()
     WHERE user_name = u.usr;
  END LOOP;
END $$;
