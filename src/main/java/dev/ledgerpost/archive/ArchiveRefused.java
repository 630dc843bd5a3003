package dev.ledgerpost.archive;

/** An export that was not started, and why; nothing was written. The API answers these as problems (400 or 409). */
public final class ArchiveRefused extends RuntimeException {
  /** BAD_RANGE: the caller's mistake (400); the others: the gateway's or the directory's state (409). */
  public enum Reason { BAD_RANGE, NO_ARCHIVE_DIR, EXISTS }

  private final Reason reason;

  public ArchiveRefused(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
