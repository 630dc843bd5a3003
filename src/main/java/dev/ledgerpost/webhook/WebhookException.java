package dev.ledgerpost.webhook;

/** A webhook request the part refuses, by kind, so the API answers it without parsing a message. */
public final class WebhookException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public enum Kind { NOT_FOUND, RANGE_GONE, BAD_REQUEST }

  private final Kind kind;
  /** For {@link Kind#RANGE_GONE}: the oldest pub_seq still in the outbox. */
  private final long oldestAvailable;

  WebhookException(Kind kind, String message) {
    this(kind, message, 0);
  }

  WebhookException(Kind kind, String message, long oldestAvailable) {
    super(message, null, false, false);
    this.kind = kind;
    this.oldestAvailable = oldestAvailable;
  }

  public Kind kind() {
    return kind;
  }

  public long oldestAvailable() {
    return oldestAvailable;
  }
}
