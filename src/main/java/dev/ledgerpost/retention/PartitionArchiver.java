package dev.ledgerpost.retention;

import io.vertx.core.Future;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Writes every ledger row of one partition's id range to a file before retention drops it (docs/design.md §5.12). The
 * gateway's is the archive part's export into {@code ledger.archiveDir}; retention knows only this.
 */
public interface PartitionArchiver {
  /**
   * Exports the rows of messages with {@code fromId <= id < toId} (and their recipients, resolutions, stale raises and
   * reconcile proposals) as one file named after {@code name}; completes with its path once it is durable, and fails
   * if it could not be written whole. {@code fromId} is the nil UUID for the first partition (MINVALUE).
   */
  Future<Path> archive(UUID fromId, UUID toId, String name);
}
