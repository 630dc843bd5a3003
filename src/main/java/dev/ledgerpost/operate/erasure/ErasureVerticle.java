package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/** Erasure ({@link ErasureStore}, docs/design.md §8.6) on a context of its own: a long erasure never holds up the ledger's loop. */
public final class ErasureVerticle extends VerticleBase {
  private final Database db;
  private final ErasureKey key;

  public ErasureVerticle(Database db, ErasureKey key) {
    this.db = db;
    this.key = key;
  }

  @Override
  public Future<?> start() {
    new ErasureStore(db, vertx, key);
    return Future.succeededFuture();
  }
}
