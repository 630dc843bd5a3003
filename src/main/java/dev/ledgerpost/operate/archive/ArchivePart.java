package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.operate.retention.PartitionArchiver;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/** Ledger exports on demand (docs/data-model.md §5.13), and retention's export of a partition before its drop. */
public final class ArchivePart implements Part {
  @Override
  public String name() {
    return "archive";
  }

  @Override
  public Future<Void> start(Assembly a) {
    DatabaseTarget target = a.get(DatabaseTarget.class);
    if (a.config().ledger().archivePath() != null) {
      a.provide(PartitionArchiver.class, new PartitionExport(a.vertx(), target, a.config().ledger().archivePath(), a.nodeId(),
          ArchiveKey.Location.of(a.config().ledger())));
    }
    return a.deploy(new ArchiveVerticle(a.config().ledger(), a.nodeId(), target));
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.of(HttpFace.admin(new ArchiveApi(Bus.of(api.vertx()))::mount));
  }
}
