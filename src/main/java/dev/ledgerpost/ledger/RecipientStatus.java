package dev.ledgerpost.ledger;

/**
 * A recipient's fact. REJECTED recipients were refused at RCPT and are recorded only because the
 * transaction reached DATA; the others follow the message's final reply.
 */
public enum RecipientStatus {
  PENDING,
  ACCEPTED,
  REJECTED,
  FAILED_TEMP,
  FAILED_PERM,
  UNKNOWN,
  RESOLVED_DELIVERED,
  RESOLVED_NOT_DELIVERED,
  /** Its message was captured (docs/design.md §8.10): kept by the gateway, never relayed. */
  CAPTURED;

  /** What a PENDING recipient becomes when its message settles to the given status. */
  public static RecipientStatus settledFor(MessageStatus status) {
    return switch (status) {
      case SENT -> ACCEPTED;
      case FAILED_TEMP -> FAILED_TEMP;
      case FAILED_PERM -> FAILED_PERM;
      case UNKNOWN -> UNKNOWN;
      case RESOLVED_DELIVERED -> RESOLVED_DELIVERED;
      case RESOLVED_NOT_DELIVERED -> RESOLVED_NOT_DELIVERED;
      case CAPTURED -> CAPTURED;
      case PENDING -> throw new IllegalArgumentException("PENDING is not a settled status");
    };
  }
}
