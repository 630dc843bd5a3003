package dev.ledgerpost.ledger.db;

/** The ledger could not do what was asked; {@link #kind()} says why, so callers never read message text. */
public final class LedgerException extends RuntimeException {
  public enum Kind {
    /** The transaction failed after the retry policy gave up, or with an error that is never retried. */
    PERSISTENCE,
    /** A settle found the row at another version or status: a newer fact exists. */
    STALE,
    NOT_FOUND,
    BAD_REQUEST
  }

  private final Kind kind;

  public LedgerException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  public LedgerException(Kind kind, String message) {
    this(kind, message, null);
  }

  public Kind kind() {
    return kind;
  }
}
