package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import java.util.List;

/**
 * How one send ended: before the ledger was opened (nothing recorded, nothing sent), or with a relay outcome.
 * Consumers go through {@link #accept(Visitor)}, as for {@link DeliveryOutcome}: a new end is a compile error
 * wherever it is not handled.
 */
sealed interface SendEnd {

  /** One method per end; implement all of them, there is no default. */
  interface Visitor<R> {
    R delivered(Delivered d);

    R unavailable(Unavailable u);

    R senderRefused(SenderRefused s);

    R recipientsRefused(RecipientsRefused r);

    R broken(Broken b);
  }

  <R> R accept(Visitor<R> visitor);

  /** The relay contract ran to its end: the ledger was opened, or could not be (NotRecorded). */
  record Delivered(DeliveryOutcome outcome) implements SendEnd {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.delivered(this);
    }
  }

  /** The downstream could not be reached, or dropped the connection before DATA. */
  record Unavailable(String reason) implements SendEnd {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.unavailable(this);
    }
  }

  /** The downstream refused MAIL FROM. */
  record SenderRefused(DownstreamReply reply) implements SendEnd {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.senderRefused(this);
    }
  }

  /** One verdict per recipient, at least one of them a refusal: the transaction was reset, nothing sent. */
  record RecipientsRefused(List<Verdict> verdicts) implements SendEnd {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.recipientsRefused(this);
    }
  }

  record Verdict(String address, DownstreamReply reply) {}

  /** A bug: deliver() is contracted never to fail. What happened downstream is not known here. */
  record Broken(Throwable cause) implements SendEnd {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.broken(this);
    }
  }
}
