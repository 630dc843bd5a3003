package dev.ledgerpost.operate.stale;

import dev.ledgerpost.ledger.Ledger;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.stale.StaleMessages.OpenCounts;
import dev.ledgerpost.operate.stale.StaleMessages.OpenCountsQuery;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRow;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRows;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRowsQuery;
import dev.ledgerpost.operate.stale.StaleMessages.RaiseStale;
import dev.ledgerpost.operate.stale.StaleMessages.StaleQuery;
import dev.ledgerpost.operate.stale.StaleMessages.StaleRaised;
import dev.ledgerpost.operate.stale.StaleMessages.StaleReport;
import dev.ledgerpost.operate.stale.StaleMessages.StaleRow;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The stale watch's SQL, on the stale watch's context ({@link StaleVerticle}). It reads {@code messages} and
 * {@code stale_raises} only (never recipients), and times come from the caller's clock, not the database's, so a test
 * can age rows by moving time.
 */
public final class StaleRows {
  /** The outcomes live nodes hold and the rows they are delivering (heartbeat younger than #{deadAfter} s): nobody raises these. */
  private static final String HELD = """
      held AS (SELECT DISTINCT h.id FROM nodes n CROSS JOIN LATERAL unnest(n.held || n.delivering) AS h(id)
                WHERE n.stopped_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => #{deadAfter}))""";
  /** The held client retries of row m (docs/contract.md §1.13): by resubmissions_message_idx, for the few rows listed. */
  private static final String WAITING = """
      (SELECT count(*) FROM resubmissions rs WHERE rs.message_id = m.id AND rs.outcome = 'held')::int AS waiting""";
  private static final String COUNTS = "WITH " + HELD + """

      SELECT count(*) AS pending, min(received_at) AS oldest,
             count(*) FILTER (WHERE received_at < #{cutoff} AND NOT (id = ANY(#{excluded}))
                                AND id NOT IN (SELECT id FROM held)) AS stale
        FROM messages WHERE settled_at IS NULL AND status = 'PENDING'""";
  /**
   * The gauges' query, run every second while /metrics is read: its WHERE is the predicate of the partial
   * index messages_open_idx (V40), so it reads the open rows and the UNKNOWN ones only, never the settled history.
   */
  private static final String OPEN_COUNTS = """
      SELECT count(*) FILTER (WHERE settled_at IS NULL AND status = 'PENDING') AS pending,
             min(received_at) FILTER (WHERE settled_at IS NULL AND status = 'PENDING') AS oldest,
             count(*) FILTER (WHERE status = 'UNKNOWN') AS unknown
        FROM messages WHERE settled_at IS NULL OR status = 'UNKNOWN'""";
  private static final String ROWS = "WITH " + HELD + """

      SELECT m.id, m.version, m.message_id_header, m.mail_from, m.received_at,
             COALESCE(s.raises, 0) AS raises, s.last_raised_at, """ + WAITING + """

        FROM messages m LEFT JOIN stale_raises s ON s.message_id = m.id
       WHERE m.settled_at IS NULL AND m.status = 'PENDING' AND m.received_at < #{cutoff}
         AND NOT (m.id = ANY(#{excluded})) AND m.id NOT IN (SELECT id FROM held)
         AND (#{dueBefore}::timestamptz IS NULL OR s.last_raised_at IS NULL OR s.last_raised_at <= #{dueBefore})
       ORDER BY m.received_at, m.id
       LIMIT #{limit}""";
  /**
   * Rows waiting for an operator, by the open-rows index (V40: its predicate word for word, and its key,
   * received_at, is the order). The window count is taken before the LIMIT: every matching row. A PENDING row is
   * listed as {@link #ROWS} finds it: not held by this process ({@code excluded}) nor by a live node ({@code held}).
   */
  private static final String OPEN_ROWS = "WITH " + HELD + """

      SELECT m.id, m.status, m.version, m.message_id_header, m.mail_from, m.received_at,
             COALESCE(s.raises, 0) AS raises, s.last_raised_at, count(*) OVER () AS matching, """ + WAITING + """

        FROM messages m LEFT JOIN stale_raises s ON s.message_id = m.id
       WHERE (m.settled_at IS NULL OR m.status = 'UNKNOWN')
         AND ((#{pending} AND m.status = 'PENDING' AND m.received_at < #{cutoff} AND NOT (m.id = ANY(#{excluded}))
               AND m.id NOT IN (SELECT id FROM held))
              OR (#{unknown} AND m.status = 'UNKNOWN'))
         AND (#{sender}::text IS NULL OR lower(m.mail_from) = lower(#{sender}))
         AND (#{since}::timestamptz IS NULL OR m.received_at >= #{since})
         AND (#{until}::timestamptz IS NULL OR m.received_at < #{until})
       ORDER BY m.received_at, m.id
       LIMIT #{limit}""";
  private static final String CURRENT_FOR_SHARE = """
      SELECT m.status, m.version, m.message_id_header, m.received_at, """ + WAITING + """

        FROM messages m WHERE m.id = #{id} FOR SHARE OF m""";
  /** The WHERE on the conflict path is what makes "once per period" hold for concurrent watchers too. */
  private static final String RAISE = """
      INSERT INTO stale_raises AS s (message_id, raises, last_raised_at) VALUES (#{id}, 1, #{now})
      ON CONFLICT (message_id) DO UPDATE SET raises = s.raises + 1, last_raised_at = EXCLUDED.last_raised_at
       WHERE s.last_raised_at <= #{dueBefore}
      RETURNING raises""";

  /** The pool and the retry policy the statements below run on. */
  private final Database ledger;

  /** Serves its addresses on the context it is made on. */
  public StaleRows(Database ledger, Bus bus) {
    this.ledger = ledger;
    bus.serve(StaleMessages.STALE, StaleQuery.class, this::report);
    bus.serve(StaleMessages.RAISE_STALE, RaiseStale.class, this::raise);
    bus.serve(StaleMessages.OPEN_COUNTS, OpenCountsQuery.class, q -> openCounts());
    bus.serve(StaleMessages.OPEN_ROWS, OpenRowsQuery.class, this::openRows);
  }

  Future<OpenRows> openRows(OpenRowsQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("pending", q.pending());
    p.put("unknown", q.unknown());
    p.put("cutoff", q.pendingCutoff());
    p.put("excluded", q.excluded().toArray(new UUID[0]));
    p.put("sender", q.sender());
    p.put("since", q.since());
    p.put("until", q.until());
    p.put("limit", q.limit());
    p.put("deadAfter", (double) q.nodeDeadAfter().toMillis() / 1000);
    return SqlTemplate.forQuery(ledger.pool(), OPEN_ROWS).execute(p).map(rows -> {
      List<OpenRow> items = new ArrayList<>();
      long matching = 0;
      for (Row r : rows) {
        matching = r.getLong("matching");
        items.add(new OpenRow(r.getUUID("id"), MessageStatus.valueOf(r.getString("status")), r.getInteger("version"),
            r.getString("message_id_header"), r.getString("mail_from"), r.getOffsetDateTime("received_at"),
            r.getInteger("raises"), r.getOffsetDateTime("last_raised_at"), r.getInteger("waiting")));
      }
      return new OpenRows(matching, List.copyOf(items));
    });
  }

  Future<OpenCounts> openCounts() {
    return ledger.pool().query(OPEN_COUNTS).execute().map(rows -> {
      Row r = rows.iterator().next();
      return new OpenCounts(r.getLong("pending"), r.getOffsetDateTime("oldest"), r.getLong("unknown"));
    });
  }

  Future<StaleReport> report(StaleQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("cutoff", q.cutoff());
    p.put("excluded", q.excluded().toArray(new UUID[0]));
    p.put("dueBefore", q.raiseDueBefore());
    p.put("limit", q.limit());
    p.put("deadAfter", (double) q.nodeDeadAfter().toMillis() / 1000);
    return SqlTemplate.forQuery(ledger.pool(), COUNTS).execute(p).compose(counts -> {
      Row c = counts.iterator().next();
      return SqlTemplate.forQuery(ledger.pool(), ROWS).execute(p).map(rows -> {
        List<StaleRow> items = new ArrayList<>();
        for (Row r : rows) {
          items.add(new StaleRow(r.getUUID("id"), r.getInteger("version"), r.getString("message_id_header"),
              r.getString("mail_from"), r.getOffsetDateTime("received_at"), r.getInteger("raises"),
              r.getOffsetDateTime("last_raised_at"), r.getInteger("waiting")));
        }
        return new StaleReport(c.getLong("pending"), c.getOffsetDateTime("oldest"), c.getLong("stale"), List.copyOf(items));
      });
    });
  }

  Future<StaleRaised> raise(RaiseStale r) {
    return ledger.policy().run("stale", () -> ledger.pool().withTransaction(conn -> raiseIn(conn, r)))
        .recover(e -> Future.failedFuture(e instanceof StoreException
            ? e
            : new StoreException(StoreException.Kind.PERSISTENCE, "stale raise of " + r.id() + " failed: " + e.getMessage(), e)));
  }

  private Future<StaleRaised> raiseIn(SqlConnection conn, RaiseStale r) {
    // FOR SHARE: a settle of this row waits for the raise to commit, so no stale event follows a settle.
    return SqlTemplate.forQuery(conn, CURRENT_FOR_SHARE).execute(Map.of("id", r.id())).compose(rows -> {
      if (rows.size() == 0 || !MessageStatus.PENDING.name().equals(rows.iterator().next().getString("status"))) {
        return Future.succeededFuture(new StaleRaised(r.id(), false, 0, null, null, 0));
      }
      Row row = rows.iterator().next();
      String messageId = row.getString("message_id_header");
      OffsetDateTime receivedAt = row.getOffsetDateTime("received_at");
      int version = row.getInteger("version");
      int waiting = row.getInteger("waiting");
      Map<String, Object> p = new HashMap<>();
      p.put("id", r.id());
      p.put("now", r.now());
      p.put("dueBefore", r.now().minus(r.period()));
      return SqlTemplate.forQuery(conn, RAISE).execute(p).compose(raised -> {
        if (raised.size() == 0) {
          return Future.succeededFuture(new StaleRaised(r.id(), false, 0, messageId, receivedAt, waiting));
        }
        int n = raised.iterator().next().getInteger("raises");
        JsonObject payload = new JsonObject()
            .put("id", r.id().toString())
            .put("status", MessageStatus.PENDING.name())
            .put("version", version)
            .put("messageId", messageId)
            .put("receivedAt", receivedAt.toString())
            .put("ageSeconds", Math.max(0, Duration.between(receivedAt, r.now()).toSeconds()))
            .put("raise", n)
            .put("clientsWaiting", waiting);
        return Ledger.outboxEvent(conn, r.id() + ":stale:" + n, r.id(), "message.stale", payload)
            .map(v -> new StaleRaised(r.id(), true, n, messageId, receivedAt, waiting));
      });
    });
  }
}
