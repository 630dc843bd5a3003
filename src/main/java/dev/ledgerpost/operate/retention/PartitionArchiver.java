package dev.ledgerpost.operate.retention;

import io.vertx.core.Future;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;

/**
 * Writes every ledger row of one partition's id range to a file before retention drops it (docs/data-model.md §5.12). The
 * gateway's is the archive part's export into {@code ledger.archiveDir}; retention knows only this.
 */
public interface PartitionArchiver {
  /**
   * What an export says it holds, from its authenticated manifest: retention compares it with the partition inside the
   * transaction that drops it, so that no export stands in for rows it does not hold.
   *
   * @param ledgerId the ledger that wrote it (null: it does not say)
   * @param rows rows per table
   * @param erasures the erasures the ledger had recorded when it was written (null: it does not say)
   */
  record Archived(Path file, UUID ledgerId, UUID fromId, UUID toId, Map<String, Long> rows, Long erasures) {}

  /**
   * Exports the rows of messages with {@code fromId <= id < toId} (and their recipients, resolutions, stale raises and
   * reconcile proposals) as one file named after {@code name}; completes with what it holds once it is durable, and
   * fails if it could not be written whole. {@code fromId} is the nil UUID for the first partition (MINVALUE).
   */
  Future<Archived> archive(UUID fromId, UUID toId, String name);
}
