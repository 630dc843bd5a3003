package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.ledger.Ledger;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Operation;
import dev.ledgerpost.operate.resolutions.OperatorMessages.OperationFacts;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ReceiptView;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolve;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The operator's SQL, on the resolutions part's context ({@link ResolutionsVerticle}): the facts of one operation
 * (docs/contract.md §1.11) and manual resolution ({@link Resolutions}, §8.2).
 */
public final class OperatorStore {
  /**
   * A message's events: its single-event rows, the batch rows of its open and settle, and its tracking facts' events
   * (V115: in batch rows written by each fact's transaction, so at the fact's recorded_at; an event per fact that is not
   * {@code queued}, at the fact's place in the row). A row's number is in outbox_pub once it is published (V118).
   */
  private static final String EVENT_COUNTS = """
      WITH found AS (
        SELECT seq, 1 AS pos FROM outbox WHERE message_id = $1
        UNION ALL
        SELECT o.seq, array_position(o.message_ids, $1) FROM messages m JOIN outbox o ON o.seq IN (m.open_seq, m.settle_seq)
         WHERE m.id = $1 AND o.message_ids IS NOT NULL
        UNION ALL
        SELECT o.seq, array_position(o.fact_ids, f.id) FROM delivery_facts f
          JOIN outbox o ON o.created_at = f.recorded_at AND o.fact_ids IS NOT NULL AND f.id = ANY(o.fact_ids)
         WHERE f.message_id = $1 AND f.state <> 'queued'),
      rows AS (
        SELECT found.pos, p.pub_seq FROM found LEFT JOIN outbox_pub p ON p.seq = found.seq)
      SELECT count(*) AS events, count(pub_seq) AS published, coalesce(max(pub_seq + pos - 1), 0) AS last,
             (SELECT coalesce(array_agg(n.id ORDER BY n.id), '{}') FROM nodes n
               WHERE $1 = ANY(n.held) AND n.stopped_at IS NULL
                 AND n.heartbeat_at > now() - make_interval(secs => $2::float8)) AS held_by
        FROM rows""";
  private static final String RECEIPTS = """
      SELECT subscriber, state, pub_seq, at FROM notify_receipts WHERE message_id = #{id} ORDER BY at, subscriber""";

  private final Pool pool;
  private final Ledger ledger;

  /** Serves its addresses on the context it is made on. */
  public OperatorStore(Database db, Bus bus) {
    pool = db.pool();
    ledger = new Ledger(pool);
    bus.serve(OperatorMessages.RESOLVE, Resolve.class, new Resolutions(pool, db.policy())::resolve);
    bus.serve(OperatorMessages.OPERATION, Operation.class, this::operation);
  }

  Future<OperationFacts> operation(Operation o) {
    UUID id = o.id();
    return ledger.get(new LedgerMessages.Get(id)).compose(detail -> pool.preparedQuery(EVENT_COUNTS)
        .execute(Tuple.of(id, o.nodeDeadAfter().toMillis() / 1000.0))
        .compose(counts -> {
          Row c = counts.iterator().next();
          return SqlTemplate.forQuery(pool, RECEIPTS).execute(Map.of("id", id)).map(rows -> {
            List<ReceiptView> receipts = new ArrayList<>();
            for (Row r : rows) {
              receipts.add(new ReceiptView(r.getString("subscriber"), r.getString("state"), r.getLong("pub_seq"),
                  r.getOffsetDateTime("at")));
            }
            return new OperationFacts(detail, c.getLong("events").intValue(), c.getLong("published").intValue(),
                c.getLong("last"), List.copyOf(receipts), List.of(c.getArrayOfStrings("held_by")));
          });
        }));
  }
}
