package dev.ledgerpost.chaos;

import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/** Chaos mode's part ({@link ChaosLocks}); deployed only when {@code chaos.enabled} is set. */
public final class ChaosVerticle extends VerticleBase {
  private final Database db;

  public ChaosVerticle(Database db) {
    this.db = db;
  }

  @Override
  public Future<?> start() {
    new ChaosLocks(db, vertx);
    return Future.succeededFuture();
  }
}
