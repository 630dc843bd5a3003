package dev.ledgerpost.operate.archive;

import java.nio.file.Path;
import java.time.Instant;

/** An export that was not started, and why; nothing was written. The API answers these as problems (400 or 409). */
public final class ArchiveRefused extends RuntimeException {
  /** BAD_RANGE: the caller's mistake (400); the others: the gateway's or the directory's state (409). */
  public enum Reason { BAD_RANGE, NO_ARCHIVE_DIR, EXISTS }

  private final Reason reason;

  private ArchiveRefused(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  static ArchiveRefused emptyRange(Instant from, Instant to, String ids) {
    return new ArchiveRefused(Reason.BAD_RANGE, "the range is empty: from (" + from + ids + ") must be before to (" + to + ")");
  }

  static ArchiveRefused badName(String name) {
    return new ArchiveRefused(Reason.BAD_RANGE, "export name " + name + " is not a plain file name (letters, digits, . _ -; "
        + "at most 200)");
  }

  static ArchiveRefused noArchiveDir() {
    return new ArchiveRefused(Reason.NO_ARCHIVE_DIR, "ledger.archiveDir is not set: this gateway has nowhere to write exports");
  }

  static ArchiveRefused exists(Path file, String why) {
    return new ArchiveRefused(Reason.EXISTS, file + why);
  }

  /** True when the request itself was wrong; false when the gateway's state refused it. */
  public boolean callersMistake() {
    return reason == Reason.BAD_RANGE;
  }

  public Reason reason() {
    return reason;
  }
}
