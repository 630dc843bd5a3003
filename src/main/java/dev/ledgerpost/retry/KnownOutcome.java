package dev.ledgerpost.retry;

import dev.ledgerpost.ledger.LedgerMessages.Settle;

/**
 * A downstream verdict the gateway knows and must get into the ledger: the versioned settle that
 * records it, and what the audit log needs. The delivery part asks the retry part to journal it
 * before its first settle ({@link RetryMessages#JOURNAL}) and hands it over at {@link #ADDRESS} when
 * that settle failed. The retry part can only re-persist it, never send mail.
 */
public record KnownOutcome(Settle settle, String messageIdHeader, boolean downstreamAccepted) {
  public static final String ADDRESS = "retry.outcome";
}
