package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.TransactionPolicy;

import dev.ledgerpost.ledger.LedgerMessages.OpenKeyed;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.util.List;

/**
 * A keyed send's open (docs/design.md §7.2): the ledger's open statement with the binding of the claimed
 * Idempotency-Key in it, so that one commit writes both. It stays beside the open it extends; the rest of
 * the keys' SQL is the idempotency part's.
 *
 * @param nodeId recorded on the rows a keyed send opens, as on every other open
 * @param committed called after a keyed open committed: it wrote an outbox row
 * @param quota the users' quotas, counted in the same statement as by the batched open (docs/design.md §8.9)
 */
record KeyedOpen(Pool pool, String nodeId, TransactionPolicy policy, GatewayMetrics metrics, Runnable committed,
    QuotaCounting quota) {
  KeyedOpen(Pool pool, String nodeId, TransactionPolicy policy, GatewayMetrics metrics, Runnable committed) {
    this(pool, nodeId, policy, metrics, committed, QuotaCounting.OFF);
  }

  /**
   * The ledger's open statement plus the key's binding: one statement, so one commit for both. The
   * second alternative lets a retry after an ambiguous commit find its own binding. A claim that was
   * taken over (its lease ran out) binds nothing, and ledger_abort then rolls the whole open back.
   */
  private static final String OPEN_KEYED = (OpenBatch.writes(OpenBatch.ON_CONFLICT) + """
      ,
      k AS (
        UPDATE idempotency_keys
           SET state = 'OPENED', message_id = ($1::uuid[])[1], lease_until = now() + make_interval(secs => $LEASE::float8),
               updated_at = now()
         WHERE owner = $OWNER AND key = $KEY AND operation_id = ($1::uuid[])[1]
           AND (state = 'IN_FLIGHT' OR (state = 'OPENED' AND message_id = ($1::uuid[])[1]))
           AND NOT EXISTS (SELECT 1 FROM qa WHERE ($1::uuid[])[1] = ANY(qa.refused))
        RETURNING 1)
      SELECT m.id, NULL::text AS quota, NULL::bigint AS lim, NULL::timestamptz AS resets_at, NULL::int AS aborted FROM m
      UNION ALL
      SELECT *, NULL::int FROM (""" + OpenBatch.REFUSED + """
      ) refusals
      UNION ALL
      SELECT NULL, NULL, NULL, NULL,
             ledger_abort('the idempotency key of operation ' || ($1::uuid[])[1]::text || ' is no longer held by it')
       WHERE (SELECT count(*) FROM k) = 0 AND (SELECT cardinality(refused) FROM qa) = 0""")
      // The key's three parameters come after the open's, however many those are.
      .replace("$OWNER", "$" + (OpenBatch.PARAMETERS + 1)).replace("$KEY", "$" + (OpenBatch.PARAMETERS + 2))
      .replace("$LEASE", "$" + (OpenBatch.PARAMETERS + 3));

  /** The ledger entry and the key's binding commit together, or neither does. A batch of one: keyed sends are few. */
  Future<Opened> open(OpenKeyed o) {
    if (!o.ref().operationId().equals(o.open().id())) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST,
          "a key binds the ledger entry its claimant chose: " + o.ref().operationId() + " is not " + o.open().id()));
    }
    List<Object> params = OpenBatch.params(List.of(o.open()), nodeId, quota);
    params.add(o.ref().owner());
    params.add(o.ref().key());
    params.add(seconds(o.lease()));
    Tuple tuple = Tuple.tuple(params);
    long started = System.nanoTime();
    return policy.run("open", () -> pool.preparedQuery(OPEN_KEYED).execute(tuple)
            .compose(rows -> OpenBatch.answers(pool, List.of(o.open()), OpenBatch.inserted(rows), OpenBatch.refused(rows),
                Duration.ZERO))
            .compose(answers -> answers.get(0).failure() != null
                ? Future.<Opened>failedFuture(answers.get(0).failure())
                : Future.succeededFuture(answers.get(0).value())))
        .onComplete(ar -> metrics.ledgerTransaction(GatewayMetrics.TxKind.OPEN, System.nanoTime() - started, ar.succeeded()))
        .onSuccess(opened -> committed.run())
        .recover(e -> Future.failedFuture(LedgerWriter.persistence("open", o.open().id(), e)));
  }

  private static double seconds(java.time.Duration d) {
    return d.toMillis() / 1000.0;
  }
}
