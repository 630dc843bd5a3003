package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.operate.retention.PartitionArchiver;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Retention's archiver (docs/data-model.md §5.12): a partition's rows exported into {@code ledger.archiveDir} before it is
 * dropped. An export of that name already there (a pass that exported, then failed to drop; or another ledger's, when
 * two share the directory) is offered when it verifies under the archive key, so the next pass can drop; retention
 * then compares what its manifest says with the partition itself before it drops anything. One that does not verify
 * keeps the partition until an operator looks.
 */
public record PartitionExport(Vertx vertx, DatabaseTarget target, Path dir, String nodeId, ArchiveKey.Location key)
    implements PartitionArchiver {
  @Override
  public Future<Archived> archive(UUID fromId, UUID toId, String name) {
    Path file = dir.resolve(name + Manifest.DATA_SUFFIX);
    return LedgerArchive.export(vertx, target, key, dir, fromId, toId, name, nodeId)
        .recover(e -> e instanceof ArchiveRefused r && r.reason() == ArchiveRefused.Reason.EXISTS
            ? LedgerArchive.verify(vertx, file, key).compose(v -> v.ok() ? Future.succeededFuture(v.manifest())
                : Future.failedFuture(new IllegalStateException("an export named " + name + " exists and does not verify: "
                    + v.line())))
            : Future.failedFuture(e))
        .map(m -> new Archived(file, m.ledgerId(), m.fromId(), m.toId(), m.rows(), m.erasures()));
  }
}
