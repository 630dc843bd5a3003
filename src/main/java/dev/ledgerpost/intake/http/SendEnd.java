package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import java.util.List;

/** How one send ended: before the ledger was opened (nothing recorded, nothing sent), or with a relay outcome. */
sealed interface SendEnd {

  /** The relay contract ran to its end: the ledger was opened, or could not be (NotRecorded). */
  record Delivered(DeliveryOutcome outcome) implements SendEnd {}

  /** The downstream could not be reached, or dropped the connection before DATA. */
  record Unavailable(String reason) implements SendEnd {}

  /** The downstream refused MAIL FROM. */
  record SenderRefused(DownstreamReply reply) implements SendEnd {}

  /** One verdict per recipient, at least one of them a refusal: the transaction was reset, nothing sent. */
  record RecipientsRefused(List<Verdict> verdicts) implements SendEnd {}

  record Verdict(String address, DownstreamReply reply) {}

  /** A bug: deliver() is contracted never to fail. What happened downstream is not known here. */
  record Broken(Throwable cause) implements SendEnd {}
}
