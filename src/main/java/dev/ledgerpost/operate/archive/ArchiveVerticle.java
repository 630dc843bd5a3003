package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.operate.retention.PartitionArchiver;
import java.util.Optional;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * Exports on demand (the API's {@code POST /api/v1/ledger/exports}) into {@code ledger.archiveDir}, named after their
 * time range; without an archive directory every export is refused (docs/data-model.md §5.13).
 */
public final class ArchiveVerticle extends VerticleBase {
  private final Path archiveDir;
  private final String nodeId;
  private final DatabaseTarget target;
  private final ArchiveKey.Location key;

  /** Without {@code ledger.archiveDir}, every export is refused. */
  /**
   * Ledger exports on demand (docs/data-model.md §5.13) as a part of the gateway, with retention's export of a
   * partition before its drop when {@code ledger.archiveDir} is set.
   */
  public static Part part() {
    return Part.of("archive", a -> {
      DatabaseTarget target = a.get(DatabaseTarget.class);
      if (a.config().ledger().archivePath() != null) {
        a.provide(PartitionArchiver.class, new PartitionExport(a.vertx(), target, a.config().ledger().archivePath(),
            a.nodeId(), ArchiveKey.Location.of(a.config().ledger())));
      }
      return a.deploy(new ArchiveVerticle(a.config().ledger(), a.nodeId(), target));
    }, api -> Optional.of(HttpFace.admin(new ArchiveApi(Bus.of(api.vertx()))::mount)));
  }

  public ArchiveVerticle(GatewayConfig.Ledger ledger, String nodeId, DatabaseTarget target) {
    this.archiveDir = ledger.archivePath();
    this.nodeId = nodeId;
    this.target = target;
    this.key = ArchiveKey.Location.of(ledger);
  }

  @Override
  public Future<?> start() {
    Bus.of(vertx).serve(ArchiveMessages.EXPORT, ArchiveMessages.Export.class, this::export);
    return Future.succeededFuture();
  }

  private Future<ArchiveMessages.Exported> export(ArchiveMessages.Export request) {
    if (archiveDir == null) {
      return Future.failedFuture(ArchiveRefused.noArchiveDir());
    }
    Instant from = request.from().truncatedTo(ChronoUnit.MILLIS);
    Instant to = request.to().truncatedTo(ChronoUnit.MILLIS);
    if (!from.isBefore(to)) {
      return Future.failedFuture(ArchiveRefused.emptyRange(from, to, ""));
    }
    String name = name(from, to);
    return LedgerArchive.export(vertx, target, key, archiveDir, LedgerIds.lowest(from), LedgerIds.lowest(to), name, nodeId)
        .map(m -> new ArchiveMessages.Exported(m, archiveDir.resolve(m.file()), archiveDir.resolve(name + Manifest.SUFFIX)));
  }

  /** "ledger-20261130T100000Z-20261130T110000Z" (milliseconds too when a bound has them): one range, one name. */
  static String name(Instant from, Instant to) {
    return "ledger-" + compact(from) + "-" + compact(to);
  }

  private static String compact(Instant t) {
    return t.toString().replace("-", "").replace(":", "");
  }
}
