package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.publish.webhook.WebhookMessages.AttemptView;
import dev.ledgerpost.publish.webhook.WebhookMessages.DeliveryView;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Every SQL statement of the webhook part (docs/design.md §6.6), on a pool of its own: webhook work never waits
 * for, or holds, a connection of the ledger's writer. Times that decide when an attempt is due are the gateway's
 * clock (passed in); leases are the database's {@code now()}, the one clock every node shares.
 */
final class WebhookStore {
  /** A batch outbox row holds at most this many events (V40's CHECK): a row starts at most 63 events before its last. */
  private static final int MAX_EVENTS_PER_ROW = 64;
  /** Failed attempts an endpoint's health keeps, newest first. */
  static final int LAST_ERRORS = 5;
  /** Events recorded per endpoint and pass. */
  static final int RECORD_BATCH = 500;
  /** The first key of the claim's transaction lock ("LW"); the second is hashtext(endpoint). */
  private static final int CLAIM_LOCK_CLASS = 0x4C57;

  private static final String REGISTER = """
      INSERT INTO webhook_endpoints (name, recorded_through)
      SELECT n, (SELECT last_pub_seq FROM outbox_publisher WHERE id = 1) FROM unnest($1::text[]) AS n
      ON CONFLICT (name) DO NOTHING""";
  /** The leases of this node's previous process end now: its requests died with it. */
  private static final String RELEASE_OWN = """
      UPDATE webhook_deliveries SET lease_until = now() WHERE lease_until IS NOT NULL AND leased_by = $1""";
  /** The cursor, and why the endpoint is disabled: one its owner or its failures disabled records nothing meanwhile. */
  private static final String LOCK_CURSOR = """
      SELECT recorded_through, disabled_kind FROM webhook_endpoints WHERE name = $1 FOR UPDATE SKIP LOCKED""";
  private static final String LOCK_CURSOR_WAIT = "SELECT recorded_through FROM webhook_endpoints WHERE name = $1 FOR UPDATE";
  private static final String PUBLISHER = "SELECT last_pub_seq, pruned_through FROM outbox_publisher WHERE id = 1";
  /**
   * The deliveries of the events in ($2, $3] that match the endpoint's filter; $6 is when the first attempt is due. An
   * endpoint never takes the events about itself (its own exhausted deliveries, its own disabling): they are for the
   * owner's other endpoints and the hub.
   */
  private static final String EVENTS_IN_RANGE = """
      SELECT $1::text, e.event_id, e.pub_seq, e.type, e.message_id,
             jsonb_build_object('type', e.type,
                                'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                'data', e.payload)::text,
             $6::timestamptz
        FROM outbox_events e
       WHERE e.seq IN (SELECT seq FROM outbox_pub WHERE pub_seq > $2::bigint - %d AND pub_seq <= $3::bigint)
         AND e.pub_seq > $2::bigint AND e.pub_seq <= $3::bigint
         AND e.type = ANY($4::text[])
         AND ($5::text IS NULL OR e.auth_user = $5::text)
         AND NOT (e.type IN ('message.attempt.exhausted', 'endpoint.disabled') AND e.payload->>'endpoint' = $1::text)
         AND ($7::text[] IS NULL OR e.tags && $7::text[])""".formatted(MAX_EVENTS_PER_ROW);
  private static final String INSERT = "INSERT INTO webhook_deliveries (endpoint, event_id, pub_seq, type, message_id, body, "
      + "next_attempt_at)\n";
  private static final String RECORD = INSERT + EVENTS_IN_RANGE + "\nON CONFLICT (endpoint, event_id) DO NOTHING";
  /** A replay: new rows for what was never recorded, the others due again with a fresh schedule (same webhook-id). */
  private static final String REPLAY = INSERT + EVENTS_IN_RANGE + """

      ON CONFLICT (endpoint, event_id) DO UPDATE
         SET state = 'PENDING', round_attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at,
             rearmed = (webhook_deliveries.lease_until IS NOT NULL AND webhook_deliveries.lease_until > now())
      RETURNING (xmax = 0) AS inserted""";
  private static final String ADVANCE = "UPDATE webhook_endpoints SET recorded_through = $2 WHERE name = $1";

  private static final String CLAIM_LOCK = "SELECT pg_advisory_xact_lock(%d, hashtext($1))".formatted(CLAIM_LOCK_CLASS);
  private static final String IN_FLIGHT = """
      SELECT count(*) FROM webhook_deliveries WHERE endpoint = $1 AND lease_until IS NOT NULL AND lease_until > now()""";
  /**
   * Takes up to $3 due rows of an enabled endpoint that nobody holds (a lease that ran out counts as nobody), skipping
   * rows another transaction has locked; records an attempt whose node never said how it ended; leases the rows.
   */
  private static final String CLAIM = """
      WITH picked AS (
        SELECT d.id FROM webhook_deliveries d
         WHERE d.endpoint = $1 AND d.state IN ('PENDING', 'ATTEMPTED') AND d.next_attempt_at <= $2
           AND (d.lease_until IS NULL OR d.lease_until <= now())
           AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.name = $1 AND w.disabled_at IS NOT NULL)
         ORDER BY d.next_attempt_at, d.id
         LIMIT $3
         FOR UPDATE OF d SKIP LOCKED),
      lost AS (
        INSERT INTO webhook_attempts (delivery_id, n, node_id, at, error)
        SELECT d.id, d.attempts, d.leased_by, coalesce(d.last_attempt_at, now()),
               'no result: node ' || d.leased_by || ' stopped, or lost the ledger, during the attempt'
          FROM webhook_deliveries d JOIN picked p ON p.id = d.id
         WHERE d.leased_by IS NOT NULL AND d.attempts > 0
        ON CONFLICT (delivery_id, n) DO NOTHING)
      UPDATE webhook_deliveries d
         SET attempts = d.attempts + 1, round_attempts = d.round_attempts + 1, leased_by = $4,
             lease_until = now() + make_interval(secs => $5::float8), last_attempt_at = $2
        FROM picked WHERE d.id = picked.id
      RETURNING d.id, d.event_id, d.pub_seq, d.type, d.body, d.attempts, d.round_attempts, d.message_id""";
  /**
   * One attempt's end, recorded once ($2 is its number; a "no result" written by a node that took the row over is
   * replaced). The row moves on only if this node still holds it for this attempt; a row re-armed meanwhile starts
   * its new round. $10 = 1 gives the attempt back to the schedule (a 410: the endpoint, not the event, failed).
   */
  private static final String RESULT = """
      WITH attempt AS (
        INSERT INTO webhook_attempts (delivery_id, n, node_id, at, status, error, latency_ms)
        VALUES ($1::bigint, $2::int, $3::text, $4::timestamptz, $5::int, $6::text, $7::float8)
        ON CONFLICT (delivery_id, n) DO UPDATE
           SET node_id = EXCLUDED.node_id, at = EXCLUDED.at, status = EXCLUDED.status, error = EXCLUDED.error,
               latency_ms = EXCLUDED.latency_ms)
      UPDATE webhook_deliveries
         SET state = CASE WHEN rearmed THEN 'PENDING' WHEN state = 'FAILED' AND $8::text <> 'DELIVERED' THEN 'FAILED'
                          ELSE $8::text END,
             round_attempts = CASE WHEN rearmed THEN 0 ELSE round_attempts - $10::int END,
             next_attempt_at = CASE WHEN rearmed THEN $11::timestamptz WHEN state = 'FAILED' AND $8::text <> 'DELIVERED'
                                    THEN NULL ELSE $9::timestamptz END,
             delivered_at = CASE WHEN $8::text = 'DELIVERED' THEN $11::timestamptz ELSE delivered_at END,
             last_status = $5, last_error = $6, leased_by = NULL, lease_until = NULL, rearmed = false
       WHERE id = $1 AND attempts = $2 AND leased_by = $3::text
      RETURNING state""";
  /**
   * The event of a delivery that used its whole schedule (docs/design.md §6.6), in the transaction that made it FAILED:
   * once per exhaustion (its id names the attempt). Its message_id is the delivery's message when the endpoint has an
   * owner ($2), so the hub and the owner's other endpoints see it by the message's auth_user; an operator's endpoint
   * without a user names a uuid of its own, which no message has: the admin's only. No event about such an event: two
   * failing endpoints never feed each other.
   */
  private static final String EXHAUSTED = """
      INSERT INTO outbox (event_id, message_id, type, payload)
      SELECT 'webhook:' || d.endpoint || ':exhausted:' || d.id || ':' || d.attempts,
             CASE WHEN $2::text IS NULL THEN md5('webhook endpoint ' || d.endpoint)::uuid ELSE d.message_id END,
             'message.attempt.exhausted',
             jsonb_build_object('endpoint', d.endpoint, 'owner', $2::text, 'deliveryId', d.id, 'eventId', d.event_id,
                                'eventType', d.type, 'messageId', d.message_id, 'attempts', d.attempts,
                                'lastStatus', d.last_status, 'lastError', d.last_error, 'lastAttemptAt', d.last_attempt_at)
        FROM webhook_deliveries d
       WHERE d.id = $1 AND d.state = 'FAILED' AND d.type NOT IN ('message.attempt.exhausted', 'endpoint.disabled')""";
  /** A delivered attempt ends a failing streak; a healthy endpoint has nothing to reset, and writes nothing. */
  private static final String HEALTHY = """
      UPDATE webhook_endpoint_health SET consecutive_failures = 0, failing_since = NULL
       WHERE endpoint = $1 AND (consecutive_failures > 0 OR failing_since IS NOT NULL)""";
  /** A failed attempt: one more in the streak, which started at the first ($2, its start); the 5 last errors kept. */
  private static final String FAILING = """
      INSERT INTO webhook_endpoint_health AS h (endpoint, consecutive_failures, failing_since, last_errors)
      VALUES ($1, 1, $2, jsonb_build_array($3::text::jsonb))
      ON CONFLICT (endpoint) DO UPDATE
         SET consecutive_failures = h.consecutive_failures + 1,
             failing_since = coalesce(h.failing_since, EXCLUDED.failing_since),
             last_errors = (SELECT coalesce(jsonb_agg(x ORDER BY i), '[]'::jsonb)
                              FROM jsonb_array_elements(jsonb_build_array($3::text::jsonb) || h.last_errors)
                                   WITH ORDINALITY AS t(x, i)
                             WHERE i <= %d)
      RETURNING failing_since""".formatted(LAST_ERRORS);
  /**
   * Disables the endpoint unless it is already ($3: why, 'gone', 'failing' or 'manual'); for 'failing' and 'manual' its
   * open deliveries end FAILED (enabling it again replays nothing unless asked). With $7 the {@code endpoint.disabled}
   * event is written, its message_id chosen as the exhausted event's is ($5: the message whose delivery disabled it).
   */
  private static final String DISABLE = """
      WITH d AS (
        UPDATE webhook_endpoints SET disabled_at = $4, disabled_reason = $2, disabled_kind = $3
         WHERE name = $1 AND disabled_at IS NULL
        RETURNING name, recorded_through),
      ended AS (
        UPDATE webhook_deliveries
           SET state = 'FAILED', next_attempt_at = NULL, last_error = 'not sent: the endpoint was disabled (' || $2 || ')'
         WHERE endpoint = $1 AND $3::text <> 'gone' AND state IN ('PENDING', 'ATTEMPTED') AND EXISTS (SELECT 1 FROM d)
        RETURNING id),
      event AS (
        INSERT INTO outbox (event_id, message_id, type, payload)
        SELECT 'webhook:' || d.name || ':disabled:' || txid_current(),
               CASE WHEN $6::text IS NULL THEN md5('webhook endpoint ' || d.name)::uuid ELSE $5::uuid END,
               'endpoint.disabled',
               jsonb_build_object('endpoint', d.name, 'owner', $6::text, 'kind', $3::text, 'reason', $2::text,
                                  'disabledAt', $4::timestamptz, 'failingSince', h.failing_since,
                                  'consecutiveFailures', coalesce(h.consecutive_failures, 0),
                                  'lastErrors', coalesce(h.last_errors, '[]'::jsonb), 'recordedThrough', d.recorded_through)
          FROM d LEFT JOIN webhook_endpoint_health h ON h.endpoint = d.name
         WHERE $7::boolean
        RETURNING 1)
      SELECT (SELECT count(*) FROM d) AS disabled, (SELECT count(*) FROM ended) AS ended""";
  /** Ended deliveries, oldest first; their attempts go with them (ON DELETE CASCADE). Open ones are never touched. */
  private static final String PRUNE = """
      DELETE FROM webhook_deliveries WHERE id IN (
        SELECT id FROM webhook_deliveries
         WHERE state IN ('DELIVERED', 'FAILED') AND coalesce(delivered_at, last_attempt_at, created_at) < $1
         ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)""";
  /**
   * Enabled again: one its owner or its failures disabled starts at the ledger's head (what happened meanwhile is
   * replayed only when asked); one a 410 disabled goes on with its waiting deliveries. Answers the cursor before and after.
   */
  private static final String ENABLE = """
      UPDATE webhook_endpoints w
         SET disabled_at = NULL, disabled_reason = NULL, disabled_kind = NULL,
             recorded_through = CASE WHEN b.disabled_kind IN ('failing', 'manual')
                                     THEN greatest(w.recorded_through, (SELECT last_pub_seq FROM outbox_publisher WHERE id = 1))
                                     ELSE w.recorded_through END
        FROM (SELECT name, recorded_through, disabled_kind FROM webhook_endpoints WHERE name = $1) b
       WHERE w.name = b.name
      RETURNING b.recorded_through AS before, w.recorded_through AS after, b.disabled_kind AS kind""";
  /** Its streak starts again with the enable: else the first failure after it would disable it at once. */
  private static final String HEALTH_RESET = """
      UPDATE webhook_endpoint_health SET consecutive_failures = 0, failing_since = NULL WHERE endpoint = $1""";
  /** The rate limit's bucket, read under the claim's lock; written back only when the claim took rows. */
  private static final String BUCKET = "SELECT tokens, tokens_at FROM webhook_endpoint_health WHERE endpoint = $1";
  private static final String TAKE = """
      INSERT INTO webhook_endpoint_health AS h (endpoint, tokens, tokens_at) VALUES ($1, $2, $3)
      ON CONFLICT (endpoint) DO UPDATE SET tokens = EXCLUDED.tokens, tokens_at = EXCLUDED.tokens_at""";

  private static final String ENDPOINTS = """
      SELECT w.name, w.recorded_through, w.disabled_at, w.disabled_reason, w.disabled_kind,
             coalesce(h.consecutive_failures, 0) AS consecutive_failures, h.failing_since,
             coalesce(h.last_errors, '[]'::jsonb)::text AS last_errors,
             (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.state = 'PENDING') AS pending,
             (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.state = 'ATTEMPTED') AS attempted,
             (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.state = 'FAILED') AS failed,
             (SELECT count(*) FROM webhook_deliveries d
               WHERE d.endpoint = w.name AND d.lease_until IS NOT NULL AND d.lease_until > now()) AS in_flight,
             (SELECT min(d.created_at) FROM webhook_deliveries d
               WHERE d.endpoint = w.name AND d.state IN ('PENDING', 'ATTEMPTED')) AS oldest
        FROM webhook_endpoints w LEFT JOIN webhook_endpoint_health h ON h.endpoint = w.name
       WHERE w.name = ANY($1::text[]) ORDER BY w.name""";
  private static final String VIEW_COLUMNS = """
      id, endpoint, event_id, pub_seq, type, message_id, state, attempts,
      (lease_until IS NOT NULL AND lease_until > now()) AS in_flight, next_attempt_at, last_attempt_at, last_status,
      last_error, delivered_at, created_at""";
  private static final String PAGE = "SELECT " + VIEW_COLUMNS + " " + """
       FROM webhook_deliveries
       WHERE endpoint = $1 AND ($2::text IS NULL OR state = $2::text) AND ($3::bigint IS NULL OR id < $3::bigint)
       ORDER BY id DESC LIMIT $4""";
  private static final String ONE = "SELECT " + VIEW_COLUMNS + " FROM webhook_deliveries WHERE endpoint = $1 AND id = $2";
  private static final String ATTEMPTS = """
      SELECT n, node_id, at, status, error, latency_ms FROM webhook_attempts WHERE delivery_id = $1 ORDER BY n""";
  private static final String RETRY = """
      UPDATE webhook_deliveries
         SET state = 'PENDING', round_attempts = 0, next_attempt_at = $3,
             rearmed = (lease_until IS NOT NULL AND lease_until > now())
       WHERE endpoint = $1 AND id = $2 RETURNING id""";
  private static final String FOR_MESSAGE = "SELECT " + VIEW_COLUMNS
      + " FROM webhook_deliveries WHERE message_id = $1 ORDER BY pub_seq, endpoint";
  private static final String OPEN_COUNTS = """
      SELECT count(*) AS open, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
        FROM webhook_deliveries WHERE state IN ('PENDING', 'ATTEMPTED')""";

  /**
   * One endpoint's filter: the event types it takes, the one user whose messages it takes (null: all), and the tags of
   * which a message must carry one (empty: any message; an event that names no message, a suppression's, then never).
   */
  record Filter(String endpoint, List<String> events, String user, List<String> tags) {}

  /** What one recording pass did: rows added, how far the endpoint is recorded now, how far the ledger is published. */
  record Recorded(int inserted, long through, long published, long prunedThrough, long before, boolean paused) {
    Recorded(int inserted, long through, long published, long prunedThrough, long before) {
      this(inserted, through, published, prunedThrough, before, false);
    }

    static Recorded skipped() {
      return new Recorded(0, -1, -1, 0, -1);
    }

    /** Disabled by its owner or its failures: nothing is recorded for it until it is enabled. */
    static Recorded pausedAt(long through) {
      return new Recorded(0, through, -1, 0, through, true);
    }
  }

  /** A delivery claimed for one attempt: {@code attempt} is its number, {@code round} its place in the schedule (1-based). */
  record Claimed(long id, String eventId, long pubSeq, String type, String body, int attempt, int round, UUID messageId) {}

  /** What a claim took, and, when the rate limit held rows back, how long until its bucket has a token again. */
  record Claim(List<Claimed> claimed, long heldMillis) {}

  /** How a result was recorded: the row moved on; it was exhausted (its event written); the endpoint was disabled. */
  record Ended(boolean moved, boolean exhausted, String disabledKind) {}

  /** An enable: the recording cursor before and after it (a range skipped while disabled), and why it was disabled. */
  record Reopened(long before, long after, String kind) {}

  /** An attempt's end as the row records it. */
  record Result(long id, int attempt, String node, Instant startedAt, Integer status, String error, double latencyMs,
      String state, Instant nextAttemptAt, boolean givesBackRound, Instant now, String disableReason, UUID messageId,
      String eventId) {}

  record OpenCounts(long open, double oldestSeconds) {}

  private final Pool pool;

  WebhookStore(Pool pool) {
    this.pool = pool;
  }

  /** Configured endpoints get their row; a new one starts at the ledger's head (it is told what happens from now on). */
  Future<Void> register(List<String> names, String nodeId) {
    return pool.preparedQuery(REGISTER).execute(Tuple.of(names.toArray(new String[0])))
        .compose(x -> pool.preparedQuery(RELEASE_OWN).execute(Tuple.of(nodeId)))
        .mapEmpty();
  }

  /**
   * Records the deliveries of the next published events for one endpoint, unless another node is doing so right
   * now (its cursor row is locked: SKIP LOCKED), in one transaction with the cursor's advance: each (endpoint,
   * event) is recorded once whatever the number of nodes.
   */
  Future<Recorded> record(Filter f, Instant firstDue) {
    return pool.withTransaction(conn -> conn.preparedQuery(LOCK_CURSOR).execute(Tuple.of(f.endpoint())).compose(cursor -> {
      if (cursor.size() == 0) {
        return Future.succeededFuture(Recorded.skipped());
      }
      Row c = cursor.iterator().next();
      long through = c.getLong(0);
      String kind = c.getString(1);
      if ("failing".equals(kind) || "manual".equals(kind)) {
        return Future.succeededFuture(Recorded.pausedAt(through));
      }
      return conn.query(PUBLISHER).execute().compose(p -> {
        Row pub = p.iterator().next();
        long last = pub.getLong("last_pub_seq");
        long pruned = pub.getLong("pruned_through");
        long upTo = Math.min(last, through + RECORD_BATCH);
        if (upTo <= through) {
          return Future.succeededFuture(new Recorded(0, through, last, pruned, through));
        }
        return conn.preparedQuery(RECORD).execute(range(f, through, upTo, firstDue))
            .compose(rows -> conn.preparedQuery(ADVANCE).execute(Tuple.of(f.endpoint(), upTo))
                .map(x -> new Recorded(rows.rowCount(), upTo, last, pruned, through)));
      });
    }));
  }

  private static Tuple range(Filter f, long after, long upTo, Instant due) {
    return Tuple.wrap(new Object[] {f.endpoint(), after, upTo, f.events().toArray(new String[0]), f.user(), at(due),
        f.tags().isEmpty() ? null : f.tags().toArray(new String[0])});
  }

  /**
   * Claims up to the endpoint's free slots among its due rows, under a transaction lock per endpoint so that the
   * count of attempts in flight (every node's leases) and the claim are one step: never more than
   * {@code concurrency} in flight across the cluster.
   */
  Future<Claim> claim(String endpoint, String nodeId, Instant now, int concurrency, Duration lease, int rate) {
    return pool.withTransaction(conn -> conn.preparedQuery(CLAIM_LOCK).execute(Tuple.of(endpoint))
        .compose(x -> conn.preparedQuery(IN_FLIGHT).execute(Tuple.of(endpoint)))
        .compose(counted -> {
          long free = concurrency - counted.iterator().next().getLong(0);
          if (free <= 0) {
            return Future.succeededFuture(new Claim(List.of(), 0));
          }
          if (rate <= 0) {
            return claimRows(conn, endpoint, nodeId, now, (int) free, lease).map(c -> new Claim(c, 0));
          }
          return rateLimited(conn, endpoint, nodeId, now, (int) free, lease, rate);
        }));
  }

  /**
   * The claim under a rate limit: no more rows than the bucket has whole tokens, taken in the same transaction (under
   * the endpoint's lock, so the limit holds across every node). Rows it leaves are held back, not failed: they stay
   * due, and the answer says when the next token comes.
   */
  private static Future<Claim> rateLimited(SqlConnection conn, String endpoint, String nodeId, Instant now, int free,
      Duration lease, int rate) {
    return conn.preparedQuery(BUCKET).execute(Tuple.of(endpoint)).compose(b -> {
      double tokens = tokens(b.size() == 0 ? null : b.iterator().next(), rate, now);
      int take = (int) Math.min(free, Math.floor(tokens));
      if (take <= 0) {
        return Future.succeededFuture(new Claim(List.of(), untilToken(tokens, rate)));
      }
      return claimRows(conn, endpoint, nodeId, now, take, lease).compose(claimed -> {
        if (claimed.isEmpty()) {
          return Future.succeededFuture(new Claim(claimed, 0)); // nothing due: the bucket is left as it is, unwritten
        }
        double left = tokens - claimed.size();
        long held = claimed.size() == take && take < free ? untilToken(left, rate) : 0;
        return conn.preparedQuery(TAKE).execute(Tuple.of(endpoint, left, at(now))).map(x -> new Claim(claimed, held));
      });
    });
  }

  /** The bucket at {@code now}: what it held, refilled at {@code rate} a second since, at most one second's worth. */
  static double tokens(Row bucket, int rate, Instant now) {
    if (bucket == null || bucket.getDouble("tokens") == null) {
      return rate;
    }
    double seconds = Math.max(0, Duration.between(bucket.getOffsetDateTime("tokens_at").toInstant(), now).toNanos() / 1e9);
    return Math.min(rate, bucket.getDouble("tokens") + rate * seconds);
  }

  /** Milliseconds until a bucket holding {@code tokens} has a whole one. */
  private static long untilToken(double tokens, int rate) {
    return Math.max(1, (long) Math.ceil((1 - (tokens - Math.floor(tokens))) * 1000.0 / rate));
  }

  private static Future<List<Claimed>> claimRows(SqlConnection conn, String endpoint, String nodeId, Instant now, int limit,
      Duration lease) {
    return conn.preparedQuery(CLAIM).execute(Tuple.of(endpoint, at(now), limit, nodeId, lease.toMillis() / 1000.0))
        .map(WebhookStore::claimed);
  }

  private static List<Claimed> claimed(RowSet<Row> rows) {
    List<Claimed> out = new ArrayList<>();
    for (Row r : rows) {
      out.add(new Claimed(r.getLong("id"), r.getString("event_id"), r.getLong("pub_seq"), r.getString("type"),
          r.getString("body"), r.getInteger("attempts"), r.getInteger("round_attempts"), r.getUUID("message_id")));
    }
    return out;
  }

  /**
   * One attempt's end, in one transaction with what follows from it (docs/design.md §6.6): the row's next state (moved
   * on only if this node still holds it; else another node took it over and the attempt is recorded all the same),
   * the exhausted event when it used its whole schedule, the endpoint's health, and its disabling: at once on a 410
   * ({@code r.disableReason}), or when its failing streak started at or before {@code disableBefore}. {@code owner}:
   * the endpoint's user (an API endpoint's owner, a configured one's user), null for an operator's endpoint.
   */
  Future<Ended> result(String endpoint, String owner, Result r, Instant disableBefore) {
    Tuple values = Tuple.wrap(new Object[] {r.id(), r.attempt(), r.node(), at(r.startedAt()), r.status(), r.error(),
        r.latencyMs(), r.state(), r.nextAttemptAt() == null ? null : at(r.nextAttemptAt()), r.givesBackRound() ? 1 : 0,
        at(r.now())});
    return pool.withTransaction(conn -> conn.preparedQuery(RESULT).execute(values).compose(rows -> {
      boolean moved = rows.rowCount() == 1;
      boolean exhausting = moved && "FAILED".equals(r.state()) && "FAILED".equals(rows.iterator().next().getString("state"));
      Future<Boolean> exhausted = exhausting
          ? conn.preparedQuery(EXHAUSTED).execute(Tuple.of(r.id(), owner)).map(x -> x.rowCount() == 1)
          : Future.succeededFuture(false);
      return exhausted.compose(ex -> health(conn, endpoint, owner, r, disableBefore).map(kind -> new Ended(moved, ex, kind)));
    }));
  }

  /** The endpoint's streak after this attempt; answers why it was disabled by it, or null. */
  private static Future<String> health(SqlConnection conn, String endpoint, String owner, Result r, Instant disableBefore) {
    if ("DELIVERED".equals(r.state())) {
      return conn.preparedQuery(HEALTHY).execute(Tuple.of(endpoint)).map(x -> null);
    }
    String error = new io.vertx.core.json.JsonObject().put("at", r.startedAt().toString()).put("deliveryId", r.id())
        .put("eventId", r.eventId()).put("status", r.status()).put("error", r.error()).encode();
    return conn.preparedQuery(FAILING).execute(Tuple.of(endpoint, at(r.startedAt()), error)).compose(rows -> {
      OffsetDateTime since = rows.iterator().next().getOffsetDateTime("failing_since");
      if (r.disableReason() != null) {
        return disable(conn, endpoint, "gone", r.disableReason(), r.now(), r.messageId(), owner, true);
      }
      if (since != null && !since.toInstant().isAfter(disableBefore)) {
        String why = "every attempt failed since " + since.toInstant() + " (webhooks.disableAfter); the last: " + r.error();
        return disable(conn, endpoint, "failing", why, r.now(), r.messageId(), owner, true);
      }
      return Future.succeededFuture(null);
    });
  }

  /** Answers {@code kind} when this disabled the endpoint, null when it was disabled already. */
  private static Future<String> disable(SqlConnection conn, String endpoint, String kind, String reason, Instant now,
      UUID messageId, String owner, boolean event) {
    return conn.preparedQuery(DISABLE).execute(Tuple.wrap(new Object[] {endpoint, reason, kind, at(now), messageId, owner, event}))
        .map(rows -> rows.iterator().next().getLong("disabled") == 1 ? kind : null);
  }

  /** Its owner's disabling (PATCH enabled: false): no event, its open deliveries end; true when it was enabled. */
  Future<Boolean> disableManually(String endpoint, String by, Instant now) {
    return pool.withTransaction(conn -> disable(conn, endpoint, "manual", "disabled by " + by + " at " + now, now, null, null,
        false)).map(kind -> kind != null);
  }

  /** Deletes up to {@code batch} deliveries that ended before {@code before}; answers how many. */
  Future<Integer> prune(Instant before, int batch) {
    return pool.preparedQuery(PRUNE).execute(Tuple.of(before.atOffset(ZoneOffset.UTC), batch)).map(RowSet::rowCount);
  }

  /**
   * Enabled again, and if it was disabled its failing streak starts again (an enabled endpoint's is left as it is: an
   * enable is no way to put off its disabling); null when it has no state row.
   */
  Future<Reopened> enable(String endpoint) {
    return pool.withTransaction(conn -> conn.preparedQuery(ENABLE).execute(Tuple.of(endpoint)).compose(rows -> {
      if (rows.size() == 0) {
        return Future.succeededFuture(null);
      }
      Row r = rows.iterator().next();
      Reopened reopened = new Reopened(r.getLong("before"), r.getLong("after"), r.getString("kind"));
      return reopened.kind() == null ? Future.succeededFuture(reopened)
          : conn.preparedQuery(HEALTH_RESET).execute(Tuple.of(endpoint)).map(x -> reopened);
    }));
  }

  /** The state of the configured endpoints, by name. */
  Future<List<Row>> endpoints(List<String> names) {
    return pool.preparedQuery(ENDPOINTS).execute(Tuple.of(names.toArray(new String[0]))).map(rows -> {
      List<Row> out = new ArrayList<>();
      rows.forEach(out::add);
      return out;
    });
  }

  Future<List<DeliveryView>> page(String endpoint, String state, Long before, int limit) {
    return pool.preparedQuery(PAGE).execute(Tuple.of(endpoint, state, before, limit)).map(WebhookStore::views);
  }

  Future<DeliveryView> one(String endpoint, long id) {
    return pool.preparedQuery(ONE).execute(Tuple.of(endpoint, id)).map(rows -> {
      List<DeliveryView> v = views(rows);
      return v.isEmpty() ? null : v.get(0);
    });
  }

  Future<List<AttemptView>> attempts(long id) {
    return pool.preparedQuery(ATTEMPTS).execute(Tuple.of(id)).map(rows -> {
      List<AttemptView> out = new ArrayList<>();
      for (Row r : rows) {
        out.add(new AttemptView(r.getInteger("n"), r.getString("node_id"), r.getOffsetDateTime("at"), r.getInteger("status"),
            r.getString("error"), r.getDouble("latency_ms")));
      }
      return out;
    });
  }

  /** Makes one delivery due at {@code now} with a fresh schedule; false when the endpoint has no such delivery. */
  Future<Boolean> retry(String endpoint, long id, Instant now) {
    return pool.preparedQuery(RETRY).execute(Tuple.of(endpoint, id, at(now))).map(rows -> rows.rowCount() == 1);
  }

  /**
   * Records or re-arms the deliveries of the events in ({@code since}, {@code until}] (capped at what the endpoint has
   * recorded; events after that are recorded as usual). Refused when the outbox no longer holds the start of the
   * range. Answers {inserted, re-armed, until}.
   */
  Future<long[]> replay(Filter f, long since, Long until, Instant now) {
    return pool.withTransaction(conn -> conn.preparedQuery(LOCK_CURSOR_WAIT).execute(Tuple.of(f.endpoint())).compose(cursor -> {
      if (cursor.size() == 0) {
        return Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no webhook endpoint " + f.endpoint()));
      }
      long through = cursor.iterator().next().getLong(0);
      return conn.query(PUBLISHER).execute().compose(p -> {
        long pruned = p.iterator().next().getLong("pruned_through");
        if (since < pruned) {
          return Future.failedFuture(new ReplayRangeGone(pruned));
        }
        long upTo = until == null ? through : Math.min(until, through);
        if (upTo <= since) {
          return Future.succeededFuture(new long[] {0, 0, Math.max(upTo, since)});
        }
        return replayRows(conn, f, since, upTo, now).map(counts -> new long[] {counts[0], counts[1], upTo});
      });
    }));
  }

  private static Future<long[]> replayRows(SqlConnection conn, Filter f, long since, long upTo, Instant now) {
    return conn.preparedQuery(REPLAY).execute(range(f, since, upTo, now)).map(rows -> {
      long inserted = 0;
      long rearmed = 0;
      for (Row r : rows) {
        if (r.getBoolean("inserted")) {
          inserted++;
        } else {
          rearmed++;
        }
      }
      return new long[] {inserted, rearmed};
    });
  }

  Future<List<DeliveryView>> forMessage(UUID id) {
    return pool.preparedQuery(FOR_MESSAGE).execute(Tuple.of(id)).map(WebhookStore::views);
  }

  Future<OpenCounts> openCounts() {
    return pool.query(OPEN_COUNTS).execute().map(rows -> {
      Row r = rows.iterator().next();
      return new OpenCounts(r.getLong("open"), r.getDouble("oldest"));
    });
  }

  /** The health columns of a row of {@link #endpoints} (null: none yet), and the rate limit applied ({@code own}: its own). */
  static WebhookMessages.Health health(Row r, int rate, boolean own) {
    if (r == null) {
      return new WebhookMessages.Health(null, 0, null, List.of(), rate, own);
    }
    List<WebhookMessages.LastError> errors = new ArrayList<>();
    for (Object o : new io.vertx.core.json.JsonArray(r.getString("last_errors"))) {
      io.vertx.core.json.JsonObject j = (io.vertx.core.json.JsonObject) o;
      errors.add(new WebhookMessages.LastError(OffsetDateTime.parse(j.getString("at")), j.getLong("deliveryId", 0L),
          j.getString("eventId"), j.getInteger("status"), j.getString("error")));
    }
    return new WebhookMessages.Health(r.getString("disabled_kind"), r.getInteger("consecutive_failures"),
        r.getOffsetDateTime("failing_since"), List.copyOf(errors), rate, own);
  }

  private static List<DeliveryView> views(RowSet<Row> rows) {
    List<DeliveryView> out = new ArrayList<>();
    for (Row r : rows) {
      out.add(new DeliveryView(r.getLong("id"), r.getString("endpoint"), r.getString("event_id"), r.getLong("pub_seq"),
          r.getString("type"), r.getUUID("message_id"), r.getString("state"), r.getInteger("attempts"),
          r.getBoolean("in_flight"), r.getOffsetDateTime("next_attempt_at"), r.getOffsetDateTime("last_attempt_at"),
          r.getInteger("last_status"), r.getString("last_error"), r.getOffsetDateTime("delivered_at"),
          r.getOffsetDateTime("created_at")));
    }
    return out;
  }

  private static OffsetDateTime at(Instant i) {
    return OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
  }
}
