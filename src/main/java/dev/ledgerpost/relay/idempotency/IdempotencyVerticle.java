package dev.ledgerpost.relay.idempotency;

import dev.ledgerpost.platform.part.Part;
import java.util.Optional;

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

  /**
   * The send API's Idempotency-Keys as a part of the gateway (docs/design.md §7): right after the ledger, since the
   * retry part releases keys while it replays its journal at start.
   */
  public static Part part() {
    return Part.of("idempotency", a -> a.deploy(new IdempotencyVerticle(a.get(Database.class))), api -> Optional.empty());
  }

  public IdempotencyVerticle(Database db) {
    this.db = db;
  }

  @Override
  public Future<?> start() {
    new IdempotencyStore(db, Bus.of(vertx));
    return Future.succeededFuture();
  }
}
