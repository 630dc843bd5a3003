package dev.ledgerpost.delivery;

import dev.ledgerpost.ledger.LedgerMessages.Settle;

/**
 * A downstream verdict the gateway knows but could not write to the ledger. It is handed to the
 * retry part at {@link #ADDRESS}; the retry part can only re-persist it, never send mail.
 */
public record KnownOutcome(Settle settle, String messageIdHeader, boolean downstreamAccepted) {
  public static final String ADDRESS = "retry.outcome";
}
