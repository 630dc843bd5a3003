package dev.ledgerpost.relay.capture;

import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.RelayTransaction;
import io.vertx.core.Future;

/**
 * A captured client transaction: the relay contract's own transaction over a {@link CaptureWire}, which learns the
 * ledger id the contract opens under before the body comes (the id its bytes are kept by).
 */
final class CapturedTransaction extends ForwardingTransaction {
  private final CaptureWire wire;

  CapturedTransaction(RelayTransaction contract, CaptureWire wire) {
    super(contract);
    this.wire = wire;
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
    wire.id(opening.id());
    return super.deliver(message, opening);
  }
}
