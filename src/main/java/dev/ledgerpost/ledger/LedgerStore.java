package dev.ledgerpost.ledger;

import io.vertx.core.Future;

/**
 * A part's own SQL over the ledger's pool (docs/architecture.md §4.1). The outbox, the idempotency keys, the stale
 * watch and the operator's endpoints keep their statements and their bus messages in their own packages; the
 * gateway hands the ledger one constructor of each ({@code Function<LedgerAccess, LedgerStore>}), and the ledger
 * makes the stores on its context once the pool exists (before any other part is deployed) and stops them before
 * the pool closes. A store serves its addresses from its constructor.
 */
public interface LedgerStore {
  /** Completes once the store is ready (its LISTEN connection up, say); at once for most. */
  default Future<Void> started() {
    return Future.succeededFuture();
  }

  /** Releases what it holds of its own (a LISTEN connection); the pool is still open. */
  default Future<Void> stop() {
    return Future.succeededFuture();
  }
}
