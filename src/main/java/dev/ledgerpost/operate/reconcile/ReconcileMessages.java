package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.ledger.MessageStatus;

import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolved;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;

/**
 * The ledger's addresses for reconciliation (docs/design.md §8.4): the rows to reconcile, the facts the ledger
 * itself holds about them, proposals, and their acceptance (through the resolution path of §8.2) or rejection.
 */
public final class ReconcileMessages {
  public static final String CANDIDATES = "reconcile.candidates";
  public static final String CLAIMED = "reconcile.claimed";
  public static final String PROPOSE = "reconcile.propose";
  public static final String ACCEPT = "reconcile.accept";
  public static final String REJECT = "reconcile.reject";
  public static final String LIST = "reconcile.list";
  public static final String COUNTS = "reconcile.counts";
  public static final String OF_MESSAGE = "reconcile.ofMessage";

  private ReconcileMessages() {}


  /** How sure a proposal is: {@code exact} (Message-ID, envelope and time, or the sent bytes' hash and time), {@code weak} (less). */
  public enum Confidence {
    EXACT, WEAK;

    /** As stored and shown: lower case. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }

    public static Confidence of(String label) {
      return valueOf(label.toUpperCase(Locale.ROOT));
    }
  }

  /** OPEN until an operator (or the job, for an exact one under autoResolve) decides; SUPERSEDED when the row moved on. */
  public enum ProposalState { OPEN, ACCEPTED, REJECTED, SUPERSEDED }

  /**
   * UNKNOWN rows, and PENDING rows received before {@code pendingBefore}, that no live node's retry part holds
   * ({@code excluded}: this node's; the others' from their heartbeats younger than {@code nodeDeadAfter}) and that
   * have no open proposal; by id after {@code after} (null: from the start), at most {@code limit}.
   */
  public record CandidateQuery(OffsetDateTime pendingBefore, Set<UUID> excluded, Duration nodeDeadAfter, UUID after, int limit) {}

  /**
   * A row to reconcile and what the ledger knows of it: the recipients whose fate is open (PENDING or UNKNOWN), the
   * hash of the bytes sent (null unless the settle recorded one), and the downstream's reply as the answer stored
   * for its Idempotency-Key recorded it ({@code storedReply}, {@code storedAt}; null for SMTP and for keys without one).
   */
  public record Candidate(UUID id, MessageStatus status, int version, String messageIdHeader, String mailFrom,
      List<String> recipients, OffsetDateTime receivedAt, String sentSha256, String storedReply, OffsetDateTime storedAt) {}

  public record Candidates(List<Candidate> rows) {}

  /**
   * Which of {@code evidence} other rows hold: the smarthost replies other rows recorded for copies of the same message
   * (same Message-ID, or for a row without one the same sender and none; received between {@code from} and {@code to};
   * another id) that name one of the refs, and the other messages' proposals of that evidence. A queue id named there is
   * another row's, not this one's.
   */
  public record ClaimedQuery(UUID id, String messageIdHeader, String mailFrom, OffsetDateTime from, OffsetDateTime to,
      Set<EvidenceRef> evidence) {}

  /** A piece of evidence as proposals name it: the source's configured name and its ref (a queue id, a downstream id). */
  public record EvidenceRef(String source, String ref) {}

  public record Claimed(List<String> replies, Set<String> proposedRefs) {}

  /** A proposal for the row at {@code version}; written with a {@code message.reconcile_proposed} outbox event. */
  public record Propose(UUID messageId, int version, ResolutionOutcome outcome, Confidence confidence, String source,
      String evidenceRef, JsonObject evidence, String node) {}

  /** {@code proposal} null: nothing written (the row has an open proposal, or the evidence explains another row, or was rejected). */
  public record Proposed(ProposalView proposal) {}

  /** Accepts an open proposal: resolves its message as the proposal says, by {@code operator}, with an optional note. */
  public record Accept(long proposalId, String operator, String note) {}

  public record Accepted(ProposalView proposal, Resolved resolved) {}

  public record Reject(long proposalId, String operator, String note) {}

  /** Newest first; {@code state} and {@code messageId} null for any; {@code before} null or the previous page's last id. */
  public record ProposalQuery(ProposalState state, UUID messageId, Long before, int limit) {}

  public record ProposalPage(List<ProposalView> items, Long next) {}

  public record ProposalView(long id, UUID messageId, int messageVersion, ResolutionOutcome outcome, Confidence confidence,
      String source, String evidenceRef, JsonObject evidence, ProposalState state, OffsetDateTime proposedAt, String proposedBy,
      OffsetDateTime decidedAt, String decidedBy, String decisionNote) {}

  /** For the gauges: {@code pendingBefore} as in {@link CandidateQuery}. */
  public record CountsQuery(OffsetDateTime pendingBefore) {}

  /** Open proposals; and rows UNKNOWN or PENDING before the cut-off that no open proposal covers ("still unknown"). */
  public record Counts(long openProposals, long unresolved) {}

  /** A proposal that is not OPEN cannot be accepted or rejected; carries its state. */
  public static final class ProposalConflict extends RuntimeException {
    private final ProposalState state;

    public ProposalConflict(String message, ProposalState state) {
      super(message);
      this.state = state;
    }

    public ProposalState state() {
      return state;
    }
  }

  /** Every proposal of one message, newest first (the message detail and the operation status show them). */
  public record OfMessage(UUID messageId) {}

  public record Proposals(List<ProposalView> items) {}
}
