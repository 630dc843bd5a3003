package dev.ledgerpost.delivery;

import java.util.UUID;

/**
 * What happened to one message after its ledger entry was (or could not be) opened. The SMTP reply
 * table and the HTTP API each map these to what their client hears; nothing else decides it.
 */
public sealed interface DeliveryOutcome {

  /** The ledger could not be opened; the downstream never received DATA. */
  record NotRecorded() implements DeliveryOutcome {}

  /** The downstream accepted. {@code settled} is false when the settle failed after its retries. */
  record Accepted(UUID ledgerId, DownstreamReply reply, boolean settled) implements DeliveryOutcome {}

  /** The downstream answered the message with 4xx. */
  record Deferred(UUID ledgerId, DownstreamReply reply, boolean settled) implements DeliveryOutcome {}

  /** The downstream answered the message with 5xx. */
  record Rejected(UUID ledgerId, DownstreamReply reply, boolean settled) implements DeliveryOutcome {}

  /** The connection was lost or timed out before the final dot was written: nothing was delivered. */
  record LostBeforeDot(UUID ledgerId, String reason, boolean settled) implements DeliveryOutcome {}

  /** The connection was lost or timed out after the final dot: the downstream may or may not have it. */
  record Unknown(UUID ledgerId, String reason, boolean settled) implements DeliveryOutcome {}
}
