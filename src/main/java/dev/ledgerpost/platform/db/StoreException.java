package dev.ledgerpost.platform.db;

/**
 * A statement of the ledger or of any part with its own SQL could not do what was asked: the one persistence exception
 * (issue 27). {@link #kind()} says why, so callers never read message text, and {@code platform.web.Problem} maps it to
 * one HTTP answer.
 */
public final class StoreException extends RuntimeException {
  public enum Kind {
    /** The transaction failed after the retry policy gave up, or with an error that is never retried. */
    PERSISTENCE,
    /** A settle found the row at another version or status: a newer fact exists. */
    STALE,
    NOT_FOUND,
    BAD_REQUEST
  }

  private final Kind kind;

  public StoreException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  public StoreException(Kind kind, String message) {
    this(kind, message, null);
  }

  public Kind kind() {
    return kind;
  }
}
