package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.RefusalMessages.ListQuery;
import dev.ledgerpost.operate.suppression.RefusalMessages.Page;
import dev.ledgerpost.operate.suppression.RefusalMessages.Prune;
import dev.ledgerpost.operate.suppression.RefusalMessages.Pruned;
import dev.ledgerpost.operate.suppression.RefusalMessages.Recorded;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.TransactionPolicy;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/** Reads and prunes {@code recipient_refusals} (docs/design.md §8.8), on the suppression part's context. */
final class RefusalStore {
  private static final String LIST = """
      SELECT id, at, node_id, user_name, client_ip, mail_from, recipient, stage, source, code, status, reply,
             suppression_id, message_id, door
        FROM recipient_refusals
       WHERE ($1::text IS NULL OR recipient = $1) AND ($2::timestamptz IS NULL OR at >= $2)
         AND ($3::text IS NULL OR user_name = $3)
       ORDER BY at DESC, id LIMIT $4 OFFSET $5""";
  /** Bounded: the retention job calls again while a batch comes back full. */
  private static final String PRUNE = """
      DELETE FROM recipient_refusals WHERE id IN (SELECT id FROM recipient_refusals WHERE at < $1 LIMIT $2)""";

  private final Pool pool;
  private final TransactionPolicy policy;
  private final Clock clock;
  private final Duration retention;

  RefusalStore(Database db, Bus bus, Clock clock, Duration retention) {
    this.pool = db.pool();
    this.policy = db.policy();
    this.clock = clock;
    this.retention = retention;
    bus.serve(RefusalMessages.LIST, ListQuery.class, this::list);
    bus.serve(RefusalMessages.PRUNE, Prune.class, this::prune);
  }

  Future<Page> list(ListQuery q) {
    String recipient = q.recipient() == null ? null : Suppressions.normalise(q.recipient());
    Tuple t = Tuple.of(recipient, q.since(), q.user(), q.limit() + 1, q.offset());
    return policy.run("refusals list", () -> pool.preparedQuery(LIST).execute(t)).map(rows -> {
      List<Recorded> found = new ArrayList<>();
      for (Row r : rows) {
        found.add(new Recorded(r.getUUID("id"), utc(r.getOffsetDateTime("at")), r.getString("node_id"),
            r.getString("user_name"), r.getString("client_ip"), r.getString("mail_from"), r.getString("recipient"),
            r.getString("stage"), r.getString("source"), r.getInteger("code"), r.getString("status"), r.getString("reply"),
            r.getUUID("suppression_id"), r.getUUID("message_id"), r.getString("door")));
      }
      boolean more = found.size() > q.limit();
      return new Page(more ? List.copyOf(found.subList(0, q.limit())) : List.copyOf(found), q.offset(), more);
    });
  }

  Future<Pruned> prune(Prune p) {
    OffsetDateTime before = OffsetDateTime.now(clock).minus(retention);
    return policy.run("refusals prune", () -> pool.preparedQuery(PRUNE).execute(Tuple.of(before, p.limit())))
        .map(RowSet::rowCount).map(Pruned::new);
  }

  private static OffsetDateTime utc(OffsetDateTime t) {
    return t == null ? null : t.withOffsetSameInstant(ZoneOffset.UTC);
  }
}
