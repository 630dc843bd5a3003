package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/** Reconciliation with evidence (docs/design.md §8.4): proposals from the smarthost's log and the gateways' own rows. */
public final class ReconcilePart implements Part {
  private ReconcileVerticle verticle;

  @Override
  public String name() {
    return "reconcile";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new ReconcileVerticle(a.get(NodeServices.class), a.get(Database.class));
    return a.deploy(verticle);
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.of(HttpFace.admin(new ReconcileApi(Bus.of(api.vertx()))::mount));
  }

  /** The reconcile job's part on this node (docs/design.md §8.4). */
  public ReconcileVerticle verticle() {
    return verticle;
  }
}
