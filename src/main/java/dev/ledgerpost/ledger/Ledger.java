package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.LedgerIds;

import dev.ledgerpost.platform.db.StoreException;

import dev.ledgerpost.ledger.LedgerMessages.Get;
import dev.ledgerpost.ledger.LedgerMessages.ListQuery;
import dev.ledgerpost.ledger.LedgerMessages.MessageDetail;
import dev.ledgerpost.ledger.LedgerMessages.MessagePage;
import dev.ledgerpost.ledger.LedgerMessages.MessageSummary;
import dev.ledgerpost.ledger.LedgerMessages.RecipientView;
import dev.ledgerpost.ledger.LedgerMessages.ResubmissionView;
import dev.ledgerpost.ledger.LedgerMessages.ResolutionView;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The ledger's reads (list, detail, ping) and the single outbox event other transactions write. The
 * hot-path writes, open and settle, are {@link LedgerWriter}'s (group-committed).
 */
public final class Ledger {
  /** For events written by other transactions (resolution, stale): one outbox row, no NOTIFY (see OutboxWake). */
  private static final String INSERT_OUTBOX = """
      INSERT INTO outbox (event_id, message_id, type, payload) VALUES (#{eventId}, #{id}, #{type}, #{payload})""";
  private static final String SUMMARY_COLUMNS = """
      m.id, m.status, m.version, m.intake, m.mail_from, m.message_id_header, m.size_bytes, m.received_at, m.settled_at,
      m.tags, m.metadata,
      (SELECT count(*) FROM recipients r WHERE r.message_id = m.id) AS recipient_count,
      (SELECT r.address FROM recipients r WHERE r.message_id = m.id ORDER BY r.idx LIMIT 1) AS first_recipient""";
  /** The filters both lists share after their own (status, time range), newest first from the cursor on. */
  private static final String FILTERS_AND_PAGE = """

         AND (#{sender}::text IS NULL OR lower(m.mail_from) = lower(#{sender}))
         AND (#{messageId}::text IS NULL OR m.message_id_header = #{messageId})
         AND (#{tag}::text IS NULL OR m.tags @> ARRAY[#{tag}::text])
         AND (#{recipient}::text IS NULL
              OR EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND lower(r.address) = lower(#{recipient})))
         AND ((#{delivery}::text IS NULL AND #{category}::text IS NULL)
              OR EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = m.id
                            AND (#{delivery}::text IS NULL OR f.state = #{delivery})
                            AND (#{category}::text IS NULL OR f.category = #{category})))
         AND (#{cursorId}::uuid IS NULL OR m.id < #{cursorId}::uuid)
       ORDER BY m.id DESC
       LIMIT #{limit}""";
  /**
   * Newest first by id: ids are UUIDv7, so their order is the order they were issued in, and the
   * primary key serves the listing (no index of its own on the hot table). {@code since} bounds the id
   * too (an id is issued when its submission began, well within a day before its message was received),
   * so the scan stops there; {@code until} bounds it from above the same way (an id is issued before its message
   * is received), so the scan starts there. A recipient is looked up per row by the recipients' primary
   * key (no index on addresses on the hot table): give a time range with it on a long ledger. A tag ({@code tags @>
   * ARRAY[tag]}) may be served by the partial GIN index messages_tags_idx (docs/data-model.md §5.17): the planner takes
   * it for a rare tag, and the primary key, newest first, for a common one (its array statistics tell which). A
   * tracking filter ({@code delivery}, {@code category}: docs/design.md §8.13) is looked up per row through the facts'
   * unique index, which begins with the message id: give a time range with it on a long ledger, as with a recipient.
   */
  private static final String LIST = "SELECT " + SUMMARY_COLUMNS + """

        FROM messages m
       WHERE (#{status}::text IS NULL OR m.status = #{status})
         AND (#{since}::timestamptz IS NULL OR (m.received_at >= #{since} AND m.id >= #{sinceId}::uuid))
         AND (#{until}::timestamptz IS NULL OR (m.received_at < #{until} AND m.id < #{untilId}::uuid))""" + FILTERS_AND_PAGE;
  /**
   * PENDING and UNKNOWN, the statuses operators look for, are found through the partial index of open
   * rows (V40: its predicate, repeated here word for word, is what lets the planner use it): there are few
   * of them, however long the ledger.
   */
  private static final String LIST_OPEN = "SELECT " + SUMMARY_COLUMNS + """

        FROM messages m
       WHERE (m.settled_at IS NULL OR m.status = 'UNKNOWN') AND m.status = #{status}
         AND (#{since}::timestamptz IS NULL OR m.received_at >= #{since})
         AND (#{until}::timestamptz IS NULL OR m.received_at < #{until})""" + FILTERS_AND_PAGE;
  private static final String DETAIL = "SELECT " + SUMMARY_COLUMNS + """
      , m.auth_user, m.client_ip, m.helo, m.body_sha256, m.route, m.node_id, m.downstream_reply, m.last_error,
        m.sent_sha256, m.dsn_ret, m.dsn_envid, m.resubmission_of,
        r.outcome AS resolution_outcome, r.operator AS resolution_operator, r.note AS resolution_note,
        r.resolved_at AS resolution_at, r.proposal_id AS resolution_proposal
        FROM messages m LEFT JOIN resolutions r ON r.message_id = m.id WHERE m.id = #{id}""";
  private static final String RECIPIENTS = """
      SELECT address, status, rcpt_reply, reply_code, enhanced_code, reply_text, dsn_notify, dsn_orcpt
        FROM recipients WHERE message_id = #{id} ORDER BY idx""";

  /** The retries answered from this row (docs/contract.md §1.13), oldest first; a satellite like stale_raises. */
  private static final String RESUBMISSIONS = """
      SELECT at, outcome, attempt_id, node_id, client_ip, auth_user, helo
        FROM resubmissions WHERE message_id = #{id} ORDER BY at, seq""";

  /**
   * For a list with a tag: the statement is planned with the tag in hand. The pool caches prepared statements, and a
   * generic plan (which PostgreSQL may keep after five executions) cannot use messages_tags_idx behind the filter's
   * "tag IS NULL OR" and would scan every row newest first for a rare tag (docs/data-model.md §5.17). One round trip
   * more, for tagged lists only.
   */
  private static final String CUSTOM_PLAN = "SET LOCAL plan_cache_mode = force_custom_plan";

  private final Pool pool;

  public Ledger(Pool pool) {
    this.pool = pool;
  }

  /** One outbox event written in the caller's transaction (a resolution's, a stale raise's); no NOTIFY. */
  public static Future<Void> outboxEvent(SqlConnection conn, String eventId, UUID id, String type, JsonObject payload) {
    Map<String, Object> p = new HashMap<>();
    p.put("eventId", eventId);
    p.put("id", id);
    p.put("type", type);
    p.put("payload", payload);
    return SqlTemplate.forUpdate(conn, INSERT_OUTBOX).execute(p).mapEmpty();
  }

  public Future<MessagePage> list(ListQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("status", q.status() == null ? null : q.status().name());
    p.put("sender", q.sender());
    p.put("messageId", q.messageId());
    p.put("tag", q.tag());
    p.put("since", q.since());
    p.put("sinceId", q.since() == null ? null : LedgerIds.lowest(q.since().toInstant().minus(java.time.Duration.ofDays(1))));
    p.put("until", q.until());
    // A minute on: for an id issued in the millisecond of `until`, and for a wall clock stepped back between an id and its open.
    p.put("untilId", q.until() == null ? null : LedgerIds.lowest(q.until().toInstant().plus(java.time.Duration.ofMinutes(1))));
    p.put("recipient", q.recipient());
    p.put("delivery", q.delivery());
    p.put("category", q.category());
    p.put("limit", q.limit() + 1);
    Cursor cursor = Cursor.decode(q.cursor());
    p.put("cursorId", cursor == null ? null : cursor.id());
    boolean open = q.status() == MessageStatus.PENDING || q.status() == MessageStatus.UNKNOWN;
    String sql = open ? LIST_OPEN : LIST;
    Future<io.vertx.sqlclient.RowSet<MessageSummary>> read = q.tag() == null
        ? SqlTemplate.forQuery(pool, sql).mapTo(Ledger::summary).execute(p)
        : pool.withTransaction(conn -> conn.query(CUSTOM_PLAN).execute()
            .compose(x -> SqlTemplate.forQuery(conn, sql).mapTo(Ledger::summary).execute(p)));
    return read.map(rows -> {
      List<MessageSummary> items = new ArrayList<>();
      rows.forEach(items::add);
      String next = null;
      if (items.size() > q.limit()) {
        items = items.subList(0, q.limit());
        MessageSummary last = items.get(items.size() - 1);
        next = new Cursor(last.id()).encode();
      }
      return new MessagePage(List.copyOf(items), next);
    });
  }

  public Future<MessageDetail> get(Get get) {
    Future<Row> detail = SqlTemplate.forQuery(pool, DETAIL)
        .execute(Map.of("id", get.id()))
        .compose(rows -> rows.size() == 0
            ? Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no message " + get.id()))
            : Future.succeededFuture(rows.iterator().next()));
    return detail.compose(row -> SqlTemplate.forQuery(pool, RECIPIENTS)
        .mapTo(r -> new RecipientView(r.getString("address"), RecipientStatus.valueOf(r.getString("status")),
            r.getString("rcpt_reply"), r.getInteger("reply_code"), r.getString("enhanced_code"), r.getString("reply_text"),
            r.getString("dsn_notify"), r.getString("dsn_orcpt")))
        .execute(Map.of("id", get.id()))
        .compose(rows -> {
          List<RecipientView> recipients = new ArrayList<>();
          rows.forEach(recipients::add);
          return SqlTemplate.forQuery(pool, RESUBMISSIONS)
              .mapTo(r -> new ResubmissionView(r.getOffsetDateTime("at"), r.getString("outcome"), r.getUUID("attempt_id"),
                  r.getString("node_id"), r.getString("client_ip"), r.getString("auth_user"), r.getString("helo")))
              .execute(Map.of("id", get.id()))
              .map(retries -> {
                List<ResubmissionView> resubmissions = new ArrayList<>();
                retries.forEach(resubmissions::add);
                return detail(row, List.copyOf(recipients), List.copyOf(resubmissions));
              });
        }));
  }

  private static MessageDetail detail(Row row, List<RecipientView> recipients, List<ResubmissionView> resubmissions) {
    ResolutionView resolution = null;
    if (row.getString("resolution_outcome") != null) {
      resolution = new ResolutionView(row.getString("resolution_outcome"), row.getString("resolution_operator"),
          row.getString("resolution_note"), row.getOffsetDateTime("resolution_at"), row.getLong("resolution_proposal"));
    }
    return new MessageDetail(summary(row), row.getString("auth_user"), row.getString("client_ip"), row.getString("helo"),
        row.getString("body_sha256"), row.getString("route"), row.getString("node_id"), row.getString("downstream_reply"),
        row.getString("last_error"), recipients, resolution, row.getString("dsn_ret"), row.getString("dsn_envid"),
        row.getString("sent_sha256"), row.getUUID("resubmission_of"), resubmissions);
  }

  /**
   * One pass over the resubmission claims (docs/contract.md §1.13, docs/data-model.md §5.32): a claim is a hash of who
   * sent what to whom, kept only while a retry can be recognised. V117's resubmission_claims_keep makes the next
   * week's daily partitions, builds the fingerprint index of each day that is over, drops every day that ended more
   * than the window ago and holds no live claim (a DROP, not a delete of its rows), and deletes a batch of expired
   * claims of the default partition (the days no partition was made for in time). Its DDL waits at most a few seconds
   * for the opens' locks on the table, and the next pass tries again.
   */
  private static final String PRUNE_CLAIMS = "SELECT dropped, deleted FROM resubmission_claims_keep($2, $1)";

  /**
   * The closed days' partitions without a valid fingerprint index yet. Their indexes are built CONCURRENTLY, each in
   * its own statement outside any transaction, before the pass: every open's statement holds a lock on each
   * partition (its takeover's DELETE names the parent), which a plain CREATE INDEX would make wait for the build.
   */
  private static final String UNINDEXED = """
      SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'resubmission_claims'::regclass
         AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(([0-9]+)\\)'))[1]::int <= resubmission_claim_hour(now()) / 24 * 24
         AND NOT EXISTS (SELECT 1 FROM pg_index x WHERE x.indexrelid = to_regclass(c.relname || '_fingerprint') AND x.indisvalid)""";
  private static final java.util.regex.Pattern DAY_PARTITION = java.util.regex.Pattern.compile("resubmission_claims_p[0-9]{8}");

  public Future<LedgerMessages.PrunedClaims> pruneClaims(LedgerMessages.PruneClaims p) {
    return pool.query(UNINDEXED).execute().compose(rows -> {
      Future<Void> built = Future.succeededFuture();
      for (Row r : rows) {
        String part = r.getString(0);
        if (DAY_PARTITION.matcher(part).matches()) {
          built = built.compose(x -> pool.query("DROP INDEX CONCURRENTLY IF EXISTS " + part + "_fingerprint").execute())
              .compose(x -> pool.query("CREATE INDEX CONCURRENTLY " + part + "_fingerprint ON " + part + " (fingerprint)").execute())
              .mapEmpty();
        }
      }
      return built;
    }).compose(built -> prunePass(p));
  }

  private Future<LedgerMessages.PrunedClaims> prunePass(LedgerMessages.PruneClaims p) {
    return pool.withTransaction(conn -> conn.query("SET LOCAL lock_timeout = '5s'").execute()
        .compose(x -> conn.preparedQuery(PRUNE_CLAIMS).execute(io.vertx.sqlclient.Tuple.of(p.batch(), p.window().toMillis() / 1000.0))))
        .map(r -> {
          Row row = r.iterator().next();
          int deleted = row.getInteger("deleted");
          // A full batch of the default partition's asks for another pass at once; the dropped days are counted too.
          return new LedgerMessages.PrunedClaims(deleted == p.batch() ? deleted : (int) Math.min(Integer.MAX_VALUE - 1,
              deleted + row.getLong("dropped")));
        });
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
        row.getString("first_recipient"),
        row.getOffsetDateTime("received_at"),
        row.getOffsetDateTime("settled_at"),
        tags(row));
  }

  /** The row's tags and metadata as the open wrote them (MessageTags checked them then; read back as they are). */
  private static MessageTags tags(Row row) {
    String[] tags = row.getArrayOfStrings("tags");
    Object metadata = row.getValue("metadata");
    if (tags == null && metadata == null) {
      return MessageTags.NONE;
    }
    java.util.Map<String, String> meta = new java.util.LinkedHashMap<>();
    if (metadata instanceof JsonObject o) {
      o.forEach(e -> meta.put(e.getKey(), String.valueOf(e.getValue())));
    }
    return new MessageTags(tags == null ? List.of() : List.of(tags), meta);
  }

  private static StoreException persistence(String kind, UUID id, Throwable e) {
    if (e instanceof StoreException le) {
      return le;
    }
    return new StoreException(StoreException.Kind.PERSISTENCE, "ledger " + kind + " of " + id + " failed: " + e.getMessage(), e);
  }

  /** Keyset position (the last id of a page), opaque to API clients. */
  record Cursor(UUID id) {
    String encode() {
      return Base64.getUrlEncoder().withoutPadding().encodeToString(id.toString().getBytes(StandardCharsets.UTF_8));
    }

    static Cursor decode(String text) {
      if (text == null || text.isEmpty()) {
        return null;
      }
      try {
        String raw = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.UTF_8);
        return new Cursor(UUID.fromString(raw.substring(raw.indexOf('|') + 1))); // an older cursor carried "time|id"
      } catch (RuntimeException e) {
        throw new StoreException(StoreException.Kind.BAD_REQUEST, "cursor is not one this server issued");
      }
    }
  }
}
