package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/** Manual resolutions and the operation status ({@link OperatorStore}): the operator's SQL on a context of its own. */
public final class ResolutionsVerticle extends VerticleBase {
  private final Database db;

  public ResolutionsVerticle(Database db) {
    this.db = db;
  }

  @Override
  public Future<?> start() {
    new OperatorStore(db, Bus.of(vertx));
    return Future.succeededFuture();
  }
}
