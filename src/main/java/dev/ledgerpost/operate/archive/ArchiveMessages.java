package dev.ledgerpost.operate.archive;

import java.time.Instant;

/** The archive part's address on the bus: an export of a time range into {@code ledger.archiveDir} (docs/data-model.md §5.13). */
public final class ArchiveMessages {
  public static final String EXPORT = "archive.export";

  private ArchiveMessages() {}

  /** The messages received (by id: UUIDv7) from {@code from}, inclusive, to {@code to}, exclusive, and their rows. */
  public record Export(Instant from, Instant to) {}

  /** The manifest written, and where the export and its manifest are. */
  public record Exported(Manifest manifest, java.nio.file.Path data, java.nio.file.Path manifestFile) {}
}
