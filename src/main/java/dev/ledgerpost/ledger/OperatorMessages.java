package dev.ledgerpost.ledger;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/** The ledger's address for operators: manual resolution. */
public final class OperatorMessages {
  public static final String RESOLVE = "ledger.resolve";

  private OperatorMessages() {}

  public static Class<?>[] types() {
    return new Class<?>[] {Resolve.class, Resolved.class};
  }

  /** What an operator found out about a message the gateway could not settle. */
  public enum ResolutionOutcome {
    DELIVERED(MessageStatus.RESOLVED_DELIVERED),
    NOT_DELIVERED(MessageStatus.RESOLVED_NOT_DELIVERED);

    private final MessageStatus status;

    ResolutionOutcome(MessageStatus status) {
      this.status = status;
    }

    public MessageStatus status() {
      return status;
    }
  }

  /**
   * Closes a PENDING or UNKNOWN message. {@code expectedVersion} (optional) refuses the resolution
   * when the row changed since the operator looked at it.
   */
  public record Resolve(UUID id, ResolutionOutcome outcome, String operator, String note, Integer expectedVersion) {}

  public record Resolved(UUID id, MessageStatus previousStatus, MessageStatus status, int version, ResolutionOutcome outcome,
      String operator, String note, OffsetDateTime resolvedAt) {}
}
