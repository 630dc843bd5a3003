package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/** Erasure of one person's address from the ledger (docs/design.md §8.6). */
public final class ErasurePart implements Part {
  @Override
  public String name() {
    return "erasure";
  }

  @Override
  public Future<Void> start(Assembly a) {
    return a.deploy(new ErasureVerticle(a.get(Database.class), ErasureKey.of(a.config().ledger())));
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.of(HttpFace.admin(new ErasureApi(Bus.of(api.vertx()))::mount));
  }
}
