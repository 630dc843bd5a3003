package dev.ledgerpost.relay.idempotency;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * The send API's Idempotency-Keys (docs/design.md §7): claimed before the downstream transaction, bound to the ledger
 * row by its open, completed or released after. Right after the ledger: the retry part releases keys while it replays
 * its journal at start.
 */
public final class IdempotencyPart implements Part {
  @Override
  public String name() {
    return "idempotency";
  }

  @Override
  public Future<Void> start(Assembly a) {
    return a.deploy(new IdempotencyVerticle(a.get(Database.class)));
  }
}
