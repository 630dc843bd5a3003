package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.OutboxMessages.History;
import dev.ledgerpost.ledger.OutboxMessages.HistoryPage;
import dev.ledgerpost.ledger.OutboxMessages.OperationFacts;
import dev.ledgerpost.ledger.OutboxMessages.Prune;
import dev.ledgerpost.ledger.OutboxMessages.Pruned;
import dev.ledgerpost.ledger.OutboxMessages.Published;
import dev.ledgerpost.ledger.OutboxMessages.Receipt;
import dev.ledgerpost.ledger.OutboxMessages.ReceiptView;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** The outbox's SQL: publishing in one serialised transaction, history for resuming, retention, receipts. */
final class OutboxStore {
  private static final String EVENT_COLUMNS =
      "o.pub_seq, o.event_id, o.message_id, o.type, o.payload::text AS payload, m.auth_user, o.created_at";
  private static final String LOCK_PUBLISHER = "SELECT last_pub_seq FROM outbox_publisher WHERE id = 1 FOR UPDATE";
  private static final String UNPUBLISHED = """
      SELECT o.seq, o.event_id, o.message_id, o.type, o.payload::text AS payload, m.auth_user, o.created_at
        FROM outbox o LEFT JOIN messages m ON m.id = o.message_id
       WHERE o.published_at IS NULL
       ORDER BY o.seq
       LIMIT #{limit}""";
  private static final String MARK = "UPDATE outbox SET pub_seq = $1, published_at = now() WHERE seq = $2";
  private static final String ADVANCE = "UPDATE outbox_publisher SET last_pub_seq = #{last} WHERE id = 1";
  private static final String HISTORY = "SELECT " + EVENT_COLUMNS + """

        FROM outbox o LEFT JOIN messages m ON m.id = o.message_id
       WHERE o.pub_seq > #{since} AND (#{user}::text IS NULL OR m.auth_user = #{user})
       ORDER BY o.pub_seq
       LIMIT #{limit}""";
  private static final String STATE = "SELECT last_pub_seq, pruned_through FROM outbox_publisher WHERE id = 1";
  private static final String PRUNE = """
      WITH doomed AS (
        SELECT seq, pub_seq FROM outbox
         WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => #{seconds})
         ORDER BY pub_seq LIMIT #{batch})
      DELETE FROM outbox o USING doomed WHERE o.seq = doomed.seq RETURNING doomed.pub_seq""";
  private static final String PRUNED_THROUGH =
      "UPDATE outbox_publisher SET pruned_through = GREATEST(pruned_through, #{through}) WHERE id = 1";
  private static final String RECEIPT = """
      INSERT INTO notify_receipts (pub_seq, message_id, subscriber, state)
      SELECT o.pub_seq, o.message_id, #{subscriber}, #{state} FROM outbox o WHERE o.pub_seq = #{seq}
      ON CONFLICT DO NOTHING""";
  private static final String EVENT_COUNTS = """
      SELECT count(*) AS events, count(pub_seq) AS published, coalesce(max(pub_seq), 0) AS last
        FROM outbox WHERE message_id = #{id}""";
  private static final String RECEIPTS = """
      SELECT subscriber, state, pub_seq, at FROM notify_receipts WHERE message_id = #{id} ORDER BY at, subscriber""";

  private static final String LAG =
      "SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM outbox WHERE published_at IS NULL";

  private final Pool pool;

  OutboxStore(Pool pool) {
    this.pool = pool;
  }

  /**
   * Takes the publisher row lock (so only one publisher in any process runs at a time), then every
   * committed row not yet published, in seq order, and numbers them after the last published one.
   */
  Future<Published> publish(int limit) {
    return pool.withTransaction(conn -> conn.query(LOCK_PUBLISHER).execute().compose(lock -> {
      long last = lock.iterator().next().getLong(0);
      return SqlTemplate.forQuery(conn, UNPUBLISHED).execute(Map.of("limit", limit)).compose(rows -> {
        List<OutboxEvent> events = new ArrayList<>();
        List<Tuple> marks = new ArrayList<>();
        long next = last;
        for (Row row : rows) {
          next++;
          marks.add(Tuple.of(next, row.getLong("seq")));
          events.add(new OutboxEvent(next, row.getString("event_id"), row.getUUID("message_id"), row.getString("type"),
              row.getString("payload"), row.getString("auth_user"), row.getOffsetDateTime("created_at")));
        }
        if (events.isEmpty()) {
          return Future.succeededFuture(new Published(List.of()));
        }
        long newLast = next;
        return conn.preparedQuery(MARK).executeBatch(marks)
            .compose(x -> SqlTemplate.forUpdate(conn, ADVANCE).execute(Map.of("last", newLast)))
            .map(x -> new Published(List.copyOf(events)));
      });
    }));
  }

  Future<HistoryPage> history(History h) {
    java.util.HashMap<String, Object> p = new java.util.HashMap<>();
    p.put("since", h.since());
    p.put("user", h.user());
    p.put("limit", h.limit());
    return pool.withConnection(conn -> conn.query(STATE).execute().compose(state -> {
      Row s = state.iterator().next();
      long last = s.getLong("last_pub_seq");
      long pruned = s.getLong("pruned_through");
      return SqlTemplate.forQuery(conn, HISTORY).mapTo(OutboxStore::event).execute(p).map(rows -> {
        List<OutboxEvent> events = new ArrayList<>();
        rows.forEach(events::add);
        return new HistoryPage(List.copyOf(events), pruned, last);
      });
    }));
  }

  /** Deletes one bounded batch of published events older than the retention. */
  Future<Pruned> prune(Prune p) {
    return pool.withTransaction(conn -> SqlTemplate.forQuery(conn, PRUNE)
        .execute(Map.of("seconds", (double) p.retention().toSeconds(), "batch", p.batch()))
        .compose(rows -> {
          long through = 0;
          for (Row r : rows) {
            through = Math.max(through, r.getLong(0));
          }
          int deleted = rows.rowCount();
          if (deleted == 0) {
            return Future.succeededFuture(new Pruned(0));
          }
          return SqlTemplate.forUpdate(conn, PRUNED_THROUGH).execute(Map.of("through", through)).map(x -> new Pruned(deleted));
        }));
  }

  Future<OutboxMessages.LagSeconds> lag() {
    return pool.query(LAG).execute().map(rows -> new OutboxMessages.LagSeconds(rows.iterator().next().getDouble(0)));
  }

  Future<Void> receipt(Receipt r) {
    return SqlTemplate.forUpdate(pool, RECEIPT)
        .execute(Map.of("seq", r.pubSeq(), "subscriber", r.subscriber(), "state", r.state()))
        .mapEmpty();
  }

  Future<OperationFacts> operation(Ledger ledger, UUID id) {
    return ledger.get(new LedgerMessages.Get(id)).compose(detail -> SqlTemplate.forQuery(pool, EVENT_COUNTS)
        .execute(Map.of("id", id))
        .compose(counts -> {
          Row c = counts.iterator().next();
          return SqlTemplate.forQuery(pool, RECEIPTS).execute(Map.of("id", id)).map(rows -> {
            List<ReceiptView> receipts = new ArrayList<>();
            for (Row r : rows) {
              receipts.add(new ReceiptView(r.getString("subscriber"), r.getString("state"), r.getLong("pub_seq"),
                  r.getOffsetDateTime("at")));
            }
            return new OperationFacts(detail, c.getLong("events").intValue(), c.getLong("published").intValue(),
                c.getLong("last"), List.copyOf(receipts));
          });
        }));
  }

  private static OutboxEvent event(Row row) {
    return new OutboxEvent(row.getLong("pub_seq"), row.getString("event_id"), row.getUUID("message_id"),
        row.getString("type"), row.getString("payload"), row.getString("auth_user"), row.getOffsetDateTime("created_at"));
  }

  static OffsetDateTime now() {
    return OffsetDateTime.now(ZoneOffset.UTC);
  }
}
