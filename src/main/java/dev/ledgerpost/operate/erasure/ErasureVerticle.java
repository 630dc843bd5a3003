package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.bus.Bus;
import java.util.Optional;

import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/** Erasure ({@link ErasureStore}, docs/design.md §8.6) on a context of its own: a long erasure never holds up the ledger's loop. */
public final class ErasureVerticle extends VerticleBase {
  private final Database db;
  private final ErasureKey key;

  /** Erasure of one person's address (docs/design.md §8.6) as a part of the gateway, with its admin route. */
  public static Part part() {
    return Part.of("erasure", a -> a.deploy(new ErasureVerticle(a.get(Database.class), ErasureKey.of(a.config().ledger()))),
        api -> Optional.of(HttpFace.admin(new ErasureApi(Bus.of(api.vertx()))::mount)));
  }

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
