package dev.ledgerpost.relay.idempotency;

import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.MessageStatus;
import java.time.Duration;
import java.util.UUID;

/**
 * Event-bus messages of the HTTP send API's idempotency keys ({@link IdempotencyStore}, on its own verticle).
 * A key is looked at before the downstream transaction begins ({@link #CLAIM}, a read: a duplicate hears 409, 422 or
 * its stored answer at once), claimed and bound to its ledger entry by the group-committed open's own statement, and
 * given its answer or released by the settle's (docs/design.md §7.2); {@link #COMPLETE} and {@link #RELEASE} serve a
 * send whose settle could not.
 */
public final class IdempotencyMessages {
  private IdempotencyMessages() {}

  public static final String CLAIM = "idempotency.claim";

  /**
   * What {@code key} says for a request whose canonical body hashes to {@code requestHash}, read without writing:
   * CLAIMED when the open may take it (docs/design.md §7.2). {@code lease} is the lease the open will give the key;
   * {@code retention} is how long a key is remembered at all (older rows count as absent).
   */
  public record Claim(KeyRef ref, String requestHash, Duration lease, Duration retention) {}

  public enum Decision {
    /** The key is this request's: go ahead. */
    CLAIMED,
    /** Another request holds the key and may still be running: 409. */
    BUSY,
    /** The key was used with a different request body: 422. */
    MISMATCH,
    /** The key's answer is stored: replay it, send nothing. */
    REPLAY,
    /** The key is bound to a ledger entry but its answer was never stored (a crash, a failed update): answer from the ledger. */
    DERIVED
  }

  /**
   * The claim's result. {@code operationId} is the claimant's for CLAIMED, else the earlier request's.
   * {@code response} is set for REPLAY; the message fields for DERIVED; {@code leaseLeft} for BUSY: how
   * long the holder's lease still runs by the ledger's clock (after it the key answers, whatever became
   * of its holder).
   */
  public record Claimed(
      Decision decision,
      UUID operationId,
      String response,
      MessageStatus messageStatus,
      String messageIdHeader,
      String downstreamReply,
      Duration leaseLeft) {
    public Claimed(Decision decision, UUID operationId, String response, MessageStatus messageStatus,
        String messageIdHeader, String downstreamReply) {
      this(decision, operationId, response, messageStatus, messageIdHeader, downstreamReply, null);
    }
  }

  public static final String COMPLETE = "idempotency.complete";

  /** Stores the answer given for a bound key (a JSON document: status, headers, body). */
  public record Complete(KeyRef ref, String response) {}

  public static final String RELEASE = "idempotency.release";

  /** Forgets a claim whose request ended without a stored answer: the key may be used again. */
  public record Release(KeyRef ref) {}

  /** {@code changed} is false when the row was no longer this claimant's (taken over or expired). */
  public record Done(boolean changed) {}

  public static final String PRUNE = "idempotency.prune";

  /** Deletes at most {@code batch} keys older than {@code retention}. */
  public record Prune(Duration retention, int batch) {}

  public record Pruned(int deleted) {}
}
