package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The downstream follower's reads (docs/design.md §8.13, "Downstream Ledgerpost"): which of our rows it asks the
 * downstream Ledgerpost about, with their accepted recipients. Their facts are written by {@link TrackingStore#recordMatched}.
 */
final class DownstreamStore {
  /** A downstream Ledgerpost's ledger id as its 250 names it ("250 2.0.0 Ok: queued as 0193..."), the first one. */
  static final String DOWNSTREAM_ID = "queued as ([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})";
  /**
   * The downstream follower's next rows (docs/design.md §8.13, "Downstream Ledgerpost"): relayed rows after {@code $1}
   * (its cursor, or the horizon) whose reply names a downstream ledger id and that have an accepted recipient without a
   * final fact (delivered, bounced, expired; from any source), oldest first: a range of the primary key, stopping at the
   * {@code $2}th.
   */
  private static final String AWAITING = """
      SELECT m.id, substring(m.downstream_reply from '%1$s') AS downstream_id
        FROM messages m
       WHERE m.id > $1 AND m.status = 'SENT' AND m.downstream_reply ~ '%1$s'
         AND EXISTS (SELECT 1 FROM recipients r WHERE r.message_id = m.id AND r.status = 'ACCEPTED'
                        AND NOT EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = r.message_id AND f.idx = r.idx
                                           AND f.state IN ('delivered', 'bounced', 'expired')))
       ORDER BY m.id LIMIT $2""".formatted(DOWNSTREAM_ID);
  /** Those rows' accepted recipients, and whether each has a final fact already. */
  private static final String AWAITING_RECIPIENTS = """
      SELECT r.message_id, r.idx, r.address,
             EXISTS (SELECT 1 FROM delivery_facts f WHERE f.message_id = r.message_id AND f.idx = r.idx
                        AND f.state IN ('delivered', 'bounced', 'expired')) AS final
        FROM recipients r WHERE r.message_id = ANY($1) AND r.status = 'ACCEPTED' ORDER BY r.message_id, r.idx""";

  /** One of our accepted recipients as the downstream follower sees it: whether it has its final fact. */
  record Awaited(int idx, String address, boolean fin) {}

  /** A row the downstream follower asks about: its downstream ledger id and its accepted recipients. */
  record Awaiting(UUID id, String downstreamId, List<Awaited> recipients) {}

  private final Pool pool;

  DownstreamStore(Database db) {
    this.pool = db.pool();
  }

  /** The next {@code limit} rows after {@code after} the downstream follower asks about, with their recipients. */
  Future<List<Awaiting>> awaiting(UUID after, int limit) {
    return pool.preparedQuery(AWAITING).execute(Tuple.of(after, limit)).compose(rows -> {
      Map<UUID, String> ids = new LinkedHashMap<>();
      rows.forEach(r -> ids.put(r.getUUID("id"), r.getString("downstream_id")));
      if (ids.isEmpty()) {
        return Future.succeededFuture(List.<Awaiting>of());
      }
      return pool.preparedQuery(AWAITING_RECIPIENTS).execute(Tuple.tuple().addValue(ids.keySet().toArray(new UUID[0])))
          .map(recipients -> {
            Map<UUID, List<Awaited>> of = new HashMap<>();
            recipients.forEach(r -> of.computeIfAbsent(r.getUUID("message_id"), k -> new ArrayList<>())
                .add(new Awaited(r.getInteger("idx"), r.getString("address"), r.getBoolean("final"))));
            List<Awaiting> out = new ArrayList<>();
            ids.forEach((id, downstream) -> out.add(new Awaiting(id, downstream, List.copyOf(of.getOrDefault(id, List.of())))));
            return out;
          });
    });
  }
}
