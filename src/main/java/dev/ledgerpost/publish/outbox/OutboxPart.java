package dev.ledgerpost.publish.outbox;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/** The outbox relay (docs/design.md §6.2): gives each committed event its pub_seq, in commit order. */
public final class OutboxPart implements Part {
  @Override
  public String name() {
    return "outbox";
  }

  @Override
  public Future<Void> start(Assembly a) {
    return a.deploy(new OutboxVerticle(a.get(NodeServices.class), a.get(Database.class)));
  }
}
