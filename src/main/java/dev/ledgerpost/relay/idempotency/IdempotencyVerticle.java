package dev.ledgerpost.relay.idempotency;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/**
 * The idempotency keys' part: their SQL ({@link IdempotencyStore}) on a context of its own, so that claims, completions
 * and prunes never queue behind the ledger's group commits on its event loop. Deployed right after the ledger: the
 * retry part releases keys while it replays the journal at start.
 */
public final class IdempotencyVerticle extends VerticleBase {
  private final Database db;

  public IdempotencyVerticle(Database db) {
    this.db = db;
  }

  @Override
  public Future<?> start() {
    new IdempotencyStore(db, Bus.of(vertx));
    return Future.succeededFuture();
  }
}
