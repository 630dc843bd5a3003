package dev.ledgerpost.operate.retention;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * Retention (docs/data-model.md §5.12): old partitions exported (when {@code ledger.archiveDir} is set) and dropped, and
 * the other parts' old rows pruned. After every part whose rows it prunes serves its addresses: a job taken at once
 * runs its first pass at once.
 */
public final class RetentionPart implements Part {
  @Override
  public String name() {
    return "retention";
  }

  @Override
  public Future<Void> start(Assembly a) {
    return a.deploy(new RetentionVerticle(a.get(NodeServices.class), a.get(DatabaseTarget.class),
        a.find(PartitionArchiver.class).orElse(null)));
  }
}
