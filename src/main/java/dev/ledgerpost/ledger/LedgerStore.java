package dev.ledgerpost.ledger;

import io.vertx.core.Future;

/**
 * A part's own SQL over the ledger's pool (docs/design.md §4.1). The outbox, the idempotency keys, the stale
 * watch and the operator's endpoints keep their statements and their bus messages in their own packages and
 * hand the ledger one of these at start: the ledger registers the part's message codecs, then starts it on the
 * ledger's context once the pool exists (before any other part is deployed), and stops it before the pool closes.
 */
public interface LedgerStore {
  /** The records its addresses carry: registered as local codecs before {@link #start}. */
  Class<?>[] messageTypes();

  /** Serves its addresses; runs on the ledger's context. */
  Future<Void> start(LedgerAccess ledger);

  /** Releases what it holds of its own (a LISTEN connection); the pool is still open. */
  default Future<Void> stop() {
    return Future.succeededFuture();
  }
}
