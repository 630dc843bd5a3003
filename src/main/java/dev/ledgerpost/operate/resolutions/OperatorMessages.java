package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.MessageStatus;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** The operator's addresses, served on its own verticle ({@link OperatorStore}): manual resolution, operation status. */
public final class OperatorMessages {
  public static final String RESOLVE = "resolutions.resolve";
  public static final String OPERATION = "resolutions.operation";

  private OperatorMessages() {}

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

  /** {@code nodeDeadAfter}: the outcomes held by nodes whose heartbeat is younger than this count as being settled. */
  public record Operation(UUID id, Duration nodeDeadAfter) {}

  public record ReceiptView(String subscriber, String state, long pubSeq, OffsetDateTime at) {}

  /**
   * What the ledger knows of one operation, for GET /api/v1/operations/{id}; {@code heldBy}: the live nodes whose
   * retry part holds its outcome (docs/design.md §9.2).
   */
  public record OperationFacts(
      LedgerMessages.MessageDetail message, int events, int publishedEvents, long lastPubSeq, List<ReceiptView> receipts,
      List<String> heldBy) {}
}
