package dev.ledgerpost.platform.cluster;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * This process as a node of the cluster (docs/design.md §9): its heartbeat and the single-active jobs it leads.
 * Provides the {@link NodeServices} every part that runs on each node is made with.
 */
public final class NodePart implements Part {
  private NodeVerticle verticle;

  @Override
  public String name() {
    return "node";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new NodeVerticle(a.nodeId(), a.hostname(), a.config().node(), a.get(DatabaseTarget.class), a.metrics());
    return a.deploy(verticle).onSuccess(x -> {
      a.provide(NodePart.class, this);
      a.provide(NodeServices.class, new NodeServices(a.config(), a.nodeId(), verticle.leadership(), a.metrics(), a.clock()));
    });
  }

  /** The retry part says what this node is settling, for the heartbeat. */
  public void settlingFrom(Settling source) {
    verticle.settlingFrom(source);
  }

  /** Which cluster jobs this node leads now. */
  public Leadership leadership() {
    return verticle.leadership();
  }
}
