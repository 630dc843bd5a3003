package dev.ledgerpost.relay.capture;

import dev.ledgerpost.relay.ContractTransaction;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.RelayTransaction;
import io.vertx.core.Future;

/**
 * A smarthost transaction whose body may be kept here instead ({@link RelayTransaction#keep}): a returned DSN that
 * tracking keeps (docs/design.md §8.13, "Returned DSNs") is settled as a captured message is (docs/design.md §8.10), its
 * bytes in {@code captures} and its row CAPTURED with the reply that says why, and the smarthost's transaction is reset.
 * Everything else is the smarthost transaction's own.
 */
final class KeepingTransaction extends ForwardingTransaction {
  private final ContractTransaction smarthost;
  private final Capture capture;
  private final String user;

  KeepingTransaction(ContractTransaction smarthost, Capture capture, String user) {
    super(smarthost);
    this.smarthost = smarthost;
    this.capture = capture;
    this.user = user;
  }

  @Override
  public Future<DeliveryOutcome> keep(MessageData message, DownstreamReply kept) {
    CaptureWire wire = capture.keeping(user, message.size(), kept);
    if (wire == null) {
      return smarthost.deliver(message); // too big to keep: relayed, as every DSN was before
    }
    Opening opening = Opening.fresh();
    wire.id(opening.id());
    return smarthost.deliverOver(wire, Capture.ROUTE, message, opening);
  }
}
