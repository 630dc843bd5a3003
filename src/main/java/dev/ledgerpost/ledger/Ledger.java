package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.LedgerMessages.MessageSummary;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.RecipientView;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.LedgerMessages.Settled;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The ledger's transactions. Open and settle are each one PostgreSQL transaction that writes the
 * message, its recipients and an outbox event together; both are safe to run again after an
 * ambiguous commit (a retry after a lost connection), so the retry policy can wrap them whole.
 */
public final class Ledger {
  /**
   * Open: the message, its recipients (from arrays, in order) and the outbox row, in one statement.
   * The writes are a constant of their own so that the send API's keyed open can add its key's binding
   * to the very same statement (IdempotencyStore).
   */
  static final String OPEN_WRITES = """
      WITH m AS (
        INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                              body_sha256, route, status, version, received_at)
        VALUES (#{id}, #{intake}, #{authUser}, #{clientIp}, #{helo}, #{mailFrom}, #{messageId}, #{size},
                #{sha256}, #{route}, 'PENDING', 1, #{receivedAt})
        ON CONFLICT (id) DO NOTHING
        RETURNING id),
      r AS (
        INSERT INTO recipients (message_id, idx, address, status, rcpt_reply)
        SELECT m.id, t.ord - 1, t.address, t.status, t.reply
          FROM m, unnest(#{addresses}::text[], #{statuses}::text[], #{replies}::text[]) WITH ORDINALITY AS t(address, status, reply, ord)),
      o AS (
        INSERT INTO outbox (event_id, message_id, type, payload) SELECT #{eventId}, m.id, 'message.pending', #{payload} FROM m)""";
  private static final String OPEN = OPEN_WRITES + "\nSELECT count(*) AS inserted FROM m";
  /**
   * Settle: versioned (a late or repeated settle finds no PENDING row at its version and updates
   * nothing), with every PENDING recipient and the outbox row, in one statement.
   */
  private static final String SETTLE = """
      WITH m AS (
        UPDATE messages
           SET status = #{status}, version = version + 1, downstream_reply = #{reply}, last_error = #{error},
               settled_at = now()
         WHERE id = #{id} AND version = #{version} AND status = 'PENDING'
        RETURNING id),
      r AS (
        UPDATE recipients SET status = #{recipientStatus}, reply_code = #{code}, enhanced_code = #{enhanced},
                              reply_text = #{text}
         WHERE message_id = (SELECT id FROM m) AND status = 'PENDING'
        RETURNING 1),
      o AS (
        INSERT INTO outbox (event_id, message_id, type, payload) SELECT #{eventId}, m.id, 'message.settled', #{payload} FROM m)
      SELECT (SELECT count(*) FROM m) AS updated,
             CASE WHEN (SELECT count(*) FROM m) = 1 AND (SELECT count(*) FROM r) <> #{expected}::int
                  THEN ledger_abort('touched ' || (SELECT count(*) FROM r) || ' recipients, expected ' || #{expected}::int)
             END AS refused""";
  /** For events written by other transactions (resolution, stale): one outbox row, no NOTIFY (see OutboxWake). */
  private static final String INSERT_OUTBOX = """
      INSERT INTO outbox (event_id, message_id, type, payload) VALUES (#{eventId}, #{id}, #{type}, #{payload})""";
  private static final String CURRENT = "SELECT status, version FROM messages WHERE id = #{id}";
  private static final String SUMMARY_COLUMNS = """
      m.id, m.status, m.version, m.intake, m.mail_from, m.message_id_header, m.size_bytes, m.received_at, m.settled_at,
      (SELECT count(*) FROM recipients r WHERE r.message_id = m.id) AS recipient_count""";
  private static final String LIST = "SELECT " + SUMMARY_COLUMNS + """

        FROM messages m
       WHERE (#{status}::text IS NULL OR m.status = #{status})
         AND (#{sender}::text IS NULL OR lower(m.mail_from) = lower(#{sender}))
         AND (#{since}::timestamptz IS NULL OR m.received_at >= #{since})
         AND (#{cursorAt}::timestamptz IS NULL OR (m.received_at, m.id) < (#{cursorAt}, #{cursorId}::uuid))
       ORDER BY m.received_at DESC, m.id DESC
       LIMIT #{limit}""";
  private static final String DETAIL = "SELECT " + SUMMARY_COLUMNS + """
      , m.auth_user, m.client_ip, m.helo, m.body_sha256, m.route, m.downstream_reply, m.last_error
        FROM messages m WHERE m.id = #{id}""";
  private static final String RECIPIENTS = """
      SELECT address, status, rcpt_reply, reply_code, enhanced_code, reply_text
        FROM recipients WHERE message_id = #{id} ORDER BY idx""";

  private final Pool pool;
  private final TransactionPolicy policy;
  private final GatewayMetrics metrics;
  /** Parsed once: a template re-parses its SQL each time it is created, on the hot path that showed in profiles. */
  private final SqlTemplate<Map<String, Object>, io.vertx.sqlclient.RowSet<Row>> openTemplate;
  private final SqlTemplate<Map<String, Object>, io.vertx.sqlclient.RowSet<Row>> settleTemplate;

  public Ledger(Pool pool, TransactionPolicy policy) {
    this(pool, policy, GatewayMetrics.NOOP);
  }

  public Ledger(Pool pool, TransactionPolicy policy, GatewayMetrics metrics) {
    this.pool = pool;
    this.policy = policy;
    this.metrics = metrics;
    this.openTemplate = SqlTemplate.forQuery(pool, OPEN);
    this.settleTemplate = SqlTemplate.forQuery(pool, SETTLE);
  }

  public Future<Opened> open(Open open) {
    long started = System.nanoTime();
    return policy.run("open", () -> openOnce(open))
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.OPEN, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("open", open.id(), e)));
  }

  /** One statement, so one round trip and one commit: the message, its recipients and the outbox row. */
  private Future<Opened> openOnce(Open open) {
    return openTemplate.execute(openParams(open)).compose(rows -> opened(open, rows));
  }

  /** The parameters of {@link #OPEN_WRITES}. */
  static Map<String, Object> openParams(Open open) {
    Map<String, Object> p = new HashMap<>();
    p.put("id", open.id());
    p.put("intake", open.intake().name());
    p.put("authUser", open.authUser());
    p.put("clientIp", open.clientIp());
    p.put("helo", open.helo());
    p.put("mailFrom", open.mailFrom());
    p.put("messageId", open.messageIdHeader());
    p.put("size", open.size());
    p.put("sha256", open.sha256());
    p.put("route", open.route());
    p.put("receivedAt", open.receivedAt());
    List<RecipientEntry> recipients = open.recipients();
    String[] addresses = new String[recipients.size()];
    String[] statuses = new String[recipients.size()];
    String[] replies = new String[recipients.size()];
    for (int i = 0; i < recipients.size(); i++) {
      addresses[i] = recipients.get(i).address();
      statuses[i] = recipients.get(i).status().name();
      replies[i] = recipients.get(i).rcptReply();
    }
    p.put("addresses", addresses);
    p.put("statuses", statuses);
    p.put("replies", replies);
    p.put("eventId", open.id() + ":1");
    p.put("payload", new JsonObject()
        .put("id", open.id().toString())
        .put("status", MessageStatus.PENDING.name())
        .put("version", 1)
        .put("intake", open.intake().name())
        .put("mailFrom", open.mailFrom())
        .put("messageId", open.messageIdHeader())
        .put("authUser", open.authUser()));
    return p;
  }

  /** The open statement's result: its {@code inserted} column says whether this attempt wrote the entry. */
  Future<Opened> opened(Open open, io.vertx.sqlclient.RowSet<Row> rows) {
    if (rows.iterator().next().getLong("inserted") == 0) {
      // An earlier attempt committed before its connection was lost: the entry is already open.
      return alreadyOpened(open.id());
    }
    return Future.succeededFuture(new Opened(open.id(), 1));
  }

  private Future<Opened> alreadyOpened(UUID id) {
    return SqlTemplate.forQuery(pool, CURRENT).execute(Map.of("id", id)).compose(rows -> {
      Row row = rows.iterator().next();
      if (!MessageStatus.PENDING.name().equals(row.getString("status")) || row.getInteger("version") != 1) {
        return Future.failedFuture(new LedgerException(LedgerException.Kind.STALE, "message " + id + " exists at another state"));
      }
      return Future.succeededFuture(new Opened(id, 1));
    });
  }

  public Future<Settled> settle(Settle settle) {
    long started = System.nanoTime();
    return policy.run("settle", () -> settleOnce(settle))
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.SETTLE, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("settle", settle.id(), e)));
  }

  /**
   * One statement: the versioned message update, its PENDING recipients and the outbox row commit
   * together or not at all; a recipient count other than the one expected aborts the statement.
   */
  private Future<Settled> settleOnce(Settle s) {
    if (s.target() == MessageStatus.PENDING) {
      return Future.failedFuture(new LedgerException(LedgerException.Kind.BAD_REQUEST, "cannot settle to PENDING"));
    }
    int version = s.expectedVersion() + 1;
    String reply = s.replyCode() == null ? null : reply(s);
    Map<String, Object> p = new HashMap<>();
    p.put("id", s.id());
    p.put("version", s.expectedVersion());
    p.put("status", s.target().name());
    p.put("reply", reply);
    p.put("error", s.error());
    p.put("recipientStatus", RecipientStatus.settledFor(s.target()).name());
    p.put("code", s.replyCode());
    p.put("enhanced", s.enhancedCode());
    p.put("text", s.replyText());
    p.put("expected", s.pendingRecipients());
    p.put("eventId", s.id() + ":" + version);
    p.put("payload", new JsonObject()
        .put("id", s.id().toString())
        .put("status", s.target().name())
        .put("version", version)
        .put("reply", reply));
    return settleTemplate.execute(p)
        .recover(e -> Future.failedFuture(e instanceof PgException pg && "LP001".equals(pg.getSqlState())
            ? new LedgerException(LedgerException.Kind.STALE, "settle of " + s.id() + " " + pg.getErrorMessage())
            : e))
        .compose(rows -> rows.iterator().next().getLong("updated") == 0
            ? alreadySettled(s)
            : Future.succeededFuture(new Settled(s.id(), version, s.target())));
  }

  /** 0 rows updated: either this very settle already committed (a retry), or a newer fact exists. */
  private Future<Settled> alreadySettled(Settle s) {
    return SqlTemplate.forQuery(pool, CURRENT).execute(Map.of("id", s.id())).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(new LedgerException(LedgerException.Kind.NOT_FOUND, "no message " + s.id()));
      }
      Row row = rows.iterator().next();
      String status = row.getString("status");
      int version = row.getInteger("version");
      if (status.equals(s.target().name()) && version == s.expectedVersion() + 1) {
        return Future.succeededFuture(new Settled(s.id(), version, s.target()));
      }
      return Future.failedFuture(new LedgerException(LedgerException.Kind.STALE,
          "message " + s.id() + " is " + status + " at version " + version + "; settle expected PENDING at " + s.expectedVersion()));
    });
  }

  private static String reply(Settle s) {
    StringBuilder sb = new StringBuilder().append(s.replyCode());
    if (s.enhancedCode() != null) {
      sb.append(' ').append(s.enhancedCode());
    }
    if (s.replyText() != null && !s.replyText().isEmpty()) {
      sb.append(' ').append(s.replyText());
    }
    return sb.toString();
  }

  static Future<Void> outboxEvent(SqlConnection conn, String eventId, UUID id, String type, JsonObject payload) {
    Map<String, Object> p = new HashMap<>();
    p.put("eventId", eventId);
    p.put("id", id);
    p.put("type", type);
    p.put("payload", payload);
    // forQuery: works for a plain INSERT and for a statement that also returns rows.
    return SqlTemplate.forUpdate(conn, INSERT_OUTBOX).execute(p).mapEmpty();
  }

  public Future<MessagePage> list(ListQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("status", q.status() == null ? null : q.status().name());
    p.put("sender", q.sender());
    p.put("since", q.since());
    p.put("limit", q.limit() + 1);
    Cursor cursor = Cursor.decode(q.cursor());
    p.put("cursorAt", cursor == null ? null : cursor.receivedAt());
    p.put("cursorId", cursor == null ? null : cursor.id());
    return SqlTemplate.forQuery(pool, LIST).mapTo(Ledger::summary).execute(p).map(rows -> {
      List<MessageSummary> items = new ArrayList<>();
      rows.forEach(items::add);
      String next = null;
      if (items.size() > q.limit()) {
        items = items.subList(0, q.limit());
        MessageSummary last = items.get(items.size() - 1);
        next = new Cursor(last.receivedAt(), last.id()).encode();
      }
      return new MessagePage(List.copyOf(items), next);
    });
  }

  public Future<MessageDetail> get(Get get) {
    Future<MessageDetail> detail = SqlTemplate.forQuery(pool, DETAIL)
        .mapTo(row -> new MessageDetail(summary(row), row.getString("auth_user"), row.getString("client_ip"),
            row.getString("helo"), row.getString("body_sha256"), row.getString("route"), row.getString("downstream_reply"),
            row.getString("last_error"), List.of()))
        .execute(Map.of("id", get.id()))
        .compose(rows -> rows.size() == 0
            ? Future.failedFuture(new LedgerException(LedgerException.Kind.NOT_FOUND, "no message " + get.id()))
            : Future.succeededFuture(rows.iterator().next()));
    return detail.compose(d -> SqlTemplate.forQuery(pool, RECIPIENTS)
        .mapTo(row -> new RecipientView(row.getString("address"), RecipientStatus.valueOf(row.getString("status")),
            row.getString("rcpt_reply"), row.getInteger("reply_code"), row.getString("enhanced_code"), row.getString("reply_text")))
        .execute(Map.of("id", get.id()))
        .map(rows -> {
          List<RecipientView> recipients = new ArrayList<>();
          rows.forEach(recipients::add);
          return new MessageDetail(d.summary(), d.authUser(), d.clientIp(), d.helo(), d.sha256(), d.route(),
              d.downstreamReply(), d.lastError(), List.copyOf(recipients));
        }));
  }

  public Future<Void> ping() {
    return pool.query("SELECT 1").execute().mapEmpty();
  }

  private static MessageSummary summary(Row row) {
    return new MessageSummary(
        row.getUUID("id"),
        MessageStatus.valueOf(row.getString("status")),
        row.getInteger("version"),
        Intake.valueOf(row.getString("intake")),
        row.getString("mail_from"),
        row.getString("message_id_header"),
        row.getLong("size_bytes"),
        row.getLong("recipient_count").intValue(),
        row.getOffsetDateTime("received_at"),
        row.getOffsetDateTime("settled_at"));
  }

  private static LedgerException persistence(String kind, UUID id, Throwable e) {
    if (e instanceof LedgerException le) {
      return le;
    }
    return new LedgerException(LedgerException.Kind.PERSISTENCE, "ledger " + kind + " of " + id + " failed: " + e.getMessage(), e);
  }

  /** Keyset position, opaque to API clients. */
  record Cursor(OffsetDateTime receivedAt, UUID id) {
    String encode() {
      String raw = receivedAt + "|" + id;
      return Base64.getUrlEncoder().withoutPadding().encodeToString(raw.getBytes(StandardCharsets.UTF_8));
    }

    static Cursor decode(String text) {
      if (text == null || text.isEmpty()) {
        return null;
      }
      try {
        String raw = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.UTF_8);
        int bar = raw.indexOf('|');
        return new Cursor(OffsetDateTime.parse(raw.substring(0, bar)), UUID.fromString(raw.substring(bar + 1)));
      } catch (RuntimeException e) {
        throw new LedgerException(LedgerException.Kind.BAD_REQUEST, "cursor is not one this server issued");
      }
    }
  }
}
