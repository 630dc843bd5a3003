package dev.ledgerpost.archive;

import dev.ledgerpost.ledger.DatabaseTarget;
import dev.ledgerpost.retention.PartitionArchiver;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Retention's archiver (docs/design.md §5.12): a partition's rows exported into {@code ledger.archiveDir} before it is
 * dropped. An export of that name already there (a pass that exported, then failed to drop) is taken when it verifies,
 * so the next pass can drop; one that does not verify keeps the partition until an operator looks.
 */
public record PartitionExport(Vertx vertx, DatabaseTarget target, Path dir, String nodeId) implements PartitionArchiver {
  @Override
  public Future<Path> archive(UUID fromId, UUID toId, String name) {
    Path file = dir.resolve(name + Manifest.DATA_SUFFIX);
    return LedgerArchive.export(vertx, target, dir, fromId, toId, name, nodeId).map(file)
        .recover(e -> e instanceof ArchiveRefused r && r.reason() == ArchiveRefused.Reason.EXISTS
            ? LedgerArchive.verify(vertx, file).compose(v -> v.ok() ? Future.succeededFuture(file)
                : Future.failedFuture(new IllegalStateException("an export named " + name + " exists and does not verify: "
                    + v.line())))
            : Future.failedFuture(e));
  }
}
