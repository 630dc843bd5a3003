package dev.ledgerpost.relay.retry;

import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.LedgerMessages.Settle;

/**
 * A fact about one message the gateway knows and must get into the ledger: the versioned settle that
 * records it, and what the audit log needs. The relay contract journals it while it settles
 * (docs/contract.md §1.5: whichever is durable first holds the fact) and hands it over to the retry part
 * when that settle failed. The retry part can only re-persist it, never send mail.
 *
 * <p>{@code notSent} marks the one fact that is not a downstream verdict: the ledger open was not
 * confirmed, so nothing was sent (the client heard 451 4.3.0). Its open may still have committed; the
 * settle closes that row as FAILED_TEMP 4.3.0, and finding no row means the open never committed,
 * which is the end of it too. {@code key} is the HTTP send's Idempotency-Key, released once the
 * ledger is back (it could not be released while the ledger was down).
 */
public record KnownOutcome(Settle settle, String messageIdHeader, boolean downstreamAccepted, boolean notSent, KeyRef key) {
  /** The enhanced code and reason a not-sent row is closed with. */
  public static final String NOT_SENT_CODE = "4.3.0";
  public static final String NOT_SENT_REASON = "not sent: the ledger open was not confirmed";

  /** A downstream verdict (or a lost connection) to record. */
  public KnownOutcome(Settle settle, String messageIdHeader, boolean downstreamAccepted) {
    this(settle, messageIdHeader, downstreamAccepted, false, null);
  }

  /** Nothing was sent because the open was not confirmed. */
  public static KnownOutcome notSent(Settle settle, String messageIdHeader, KeyRef key) {
    return new KnownOutcome(settle, messageIdHeader, false, true, key);
  }
}
