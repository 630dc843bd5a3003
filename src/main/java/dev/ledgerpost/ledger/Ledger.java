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
  private static final String INSERT_MESSAGE = """
      INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                            body_sha256, route, status, version, received_at)
      VALUES (#{id}, #{intake}, #{authUser}, #{clientIp}, #{helo}, #{mailFrom}, #{messageId}, #{size},
              #{sha256}, #{route}, 'PENDING', 1, #{receivedAt})
      ON CONFLICT (id) DO NOTHING""";
  private static final String INSERT_RECIPIENT = """
      INSERT INTO recipients (message_id, idx, address, status, rcpt_reply)
      VALUES (#{id}, #{idx}, #{address}, #{status}, #{rcptReply})""";
  /** NOTIFY is delivered at commit and only then: it wakes the outbox relay, which still reads the table. */
  private static final String INSERT_OUTBOX = """
      WITH inserted AS (
        INSERT INTO outbox (event_id, message_id, type, payload) VALUES (#{eventId}, #{id}, #{type}, #{payload})
        RETURNING seq)
      SELECT pg_notify('ledgerpost_outbox', '') FROM inserted""";
  private static final String SETTLE_MESSAGE = """
      UPDATE messages
         SET status = #{status}, version = version + 1, downstream_reply = #{reply}, last_error = #{error},
             settled_at = now()
       WHERE id = #{id} AND version = #{version} AND status = 'PENDING'""";
  private static final String SETTLE_RECIPIENTS = """
      UPDATE recipients SET status = #{status}, reply_code = #{code}, enhanced_code = #{enhanced}, reply_text = #{text}
       WHERE message_id = #{id} AND status = 'PENDING'""";
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

  public Ledger(Pool pool, TransactionPolicy policy) {
    this(pool, policy, GatewayMetrics.NOOP);
  }

  public Ledger(Pool pool, TransactionPolicy policy, GatewayMetrics metrics) {
    this.pool = pool;
    this.policy = policy;
    this.metrics = metrics;
  }

  public Future<Opened> open(Open open) {
    long started = System.nanoTime();
    return policy.run("open", () -> pool.withTransaction(conn -> openIn(conn, open)))
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.OPEN, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("open", open.id(), e)));
  }

  /** The open transaction's statements, for a caller that adds its own to the same transaction. */
  Future<Opened> openIn(SqlConnection conn, Open open) {
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
    return SqlTemplate.forUpdate(conn, INSERT_MESSAGE).execute(p).compose(inserted -> {
      if (inserted.rowCount() == 0) {
        // An earlier attempt committed before its connection was lost: the entry is already open.
        return alreadyOpened(conn, open.id());
      }
      List<Map<String, Object>> rows = new ArrayList<>();
      List<RecipientEntry> recipients = open.recipients();
      for (int i = 0; i < recipients.size(); i++) {
        RecipientEntry r = recipients.get(i);
        Map<String, Object> row = new HashMap<>();
        row.put("id", open.id());
        row.put("idx", i);
        row.put("address", r.address());
        row.put("status", r.status().name());
        row.put("rcptReply", r.rcptReply());
        rows.add(row);
      }
      JsonObject payload = new JsonObject()
          .put("id", open.id().toString())
          .put("status", MessageStatus.PENDING.name())
          .put("version", 1)
          .put("intake", open.intake().name())
          .put("mailFrom", open.mailFrom())
          .put("messageId", open.messageIdHeader())
          .put("authUser", open.authUser());
      return SqlTemplate.forUpdate(conn, INSERT_RECIPIENT).executeBatch(rows)
          .compose(x -> outbox(conn, open.id(), 1, "message.pending", payload))
          .map(x -> new Opened(open.id(), 1));
    });
  }

  private Future<Opened> alreadyOpened(SqlConnection conn, UUID id) {
    return SqlTemplate.forQuery(conn, CURRENT).execute(Map.of("id", id)).compose(rows -> {
      Row row = rows.iterator().next();
      if (!MessageStatus.PENDING.name().equals(row.getString("status")) || row.getInteger("version") != 1) {
        return Future.failedFuture(new LedgerException(LedgerException.Kind.STALE, "message " + id + " exists at another state"));
      }
      return Future.succeededFuture(new Opened(id, 1));
    });
  }

  public Future<Settled> settle(Settle settle) {
    long started = System.nanoTime();
    return policy.run("settle", () -> pool.withTransaction(conn -> settleIn(conn, settle)))
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.SETTLE, System.nanoTime() - started, ar.succeeded()))
        .recover(e -> Future.failedFuture(persistence("settle", settle.id(), e)));
  }

  private Future<Settled> settleIn(SqlConnection conn, Settle s) {
    if (s.target() == MessageStatus.PENDING) {
      return Future.failedFuture(new LedgerException(LedgerException.Kind.BAD_REQUEST, "cannot settle to PENDING"));
    }
    Map<String, Object> p = new HashMap<>();
    p.put("id", s.id());
    p.put("version", s.expectedVersion());
    p.put("status", s.target().name());
    p.put("reply", s.replyCode() == null ? null : reply(s));
    p.put("error", s.error());
    return SqlTemplate.forUpdate(conn, SETTLE_MESSAGE).execute(p).compose(updated -> {
      if (updated.rowCount() == 0) {
        return alreadySettled(conn, s);
      }
      Map<String, Object> r = new HashMap<>();
      r.put("id", s.id());
      r.put("status", RecipientStatus.settledFor(s.target()).name());
      r.put("code", s.replyCode());
      r.put("enhanced", s.enhancedCode());
      r.put("text", s.replyText());
      return SqlTemplate.forUpdate(conn, SETTLE_RECIPIENTS).execute(r).compose(recipients -> {
        if (recipients.rowCount() != s.pendingRecipients()) {
          // Invariant 2: a settled message has all its recipients settled in the same transaction.
          return Future.failedFuture(new LedgerException(LedgerException.Kind.STALE,
              "settle of " + s.id() + " touched " + recipients.rowCount() + " recipients, expected " + s.pendingRecipients()));
        }
        int version = s.expectedVersion() + 1;
        JsonObject payload = new JsonObject()
            .put("id", s.id().toString())
            .put("status", s.target().name())
            .put("version", version)
            .put("reply", p.get("reply"));
        return outbox(conn, s.id(), version, "message.settled", payload).map(x -> new Settled(s.id(), version, s.target()));
      });
    });
  }

  /** 0 rows updated: either this very settle already committed (a retry), or a newer fact exists. */
  private Future<Settled> alreadySettled(SqlConnection conn, Settle s) {
    return SqlTemplate.forQuery(conn, CURRENT).execute(Map.of("id", s.id())).compose(rows -> {
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

  private static Future<Void> outbox(SqlConnection conn, UUID id, int version, String type, JsonObject payload) {
    Map<String, Object> p = new HashMap<>();
    p.put("eventId", id + ":" + version);
    p.put("id", id);
    p.put("type", type);
    p.put("payload", payload);
    return SqlTemplate.forQuery(conn, INSERT_OUTBOX).execute(p).mapEmpty();
  }

  /**
   * An outbox event with an id of the caller's choosing (stale raises, resolutions), written in the
   * caller's transaction with the same statement as every other event.
   */
  static Future<Void> outboxEvent(SqlConnection conn, String eventId, UUID id, String type, JsonObject payload) {
    Map<String, Object> p = new HashMap<>();
    p.put("eventId", eventId);
    p.put("id", id);
    p.put("type", type);
    p.put("payload", payload);
    // forQuery: works for a plain INSERT and for a statement that also returns rows.
    return SqlTemplate.forQuery(conn, INSERT_OUTBOX).execute(p).mapEmpty();
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
