package dev.ledgerpost.relay.capture;

import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.RelayTransaction;
import io.vertx.core.Future;

/**
 * A captured client transaction: the relay contract's own transaction over a {@link CaptureWire}, which learns the
 * ledger id the contract opens under before the body comes (the id its bytes are kept by).
 */
final class CapturedTransaction implements RelayTransaction {
  private final RelayTransaction contract;
  private final CaptureWire wire;

  CapturedTransaction(RelayTransaction contract, CaptureWire wire) {
    this.contract = contract;
    this.wire = wire;
  }

  @Override
  public DownstreamReply mailReply() {
    return contract.mailReply();
  }

  @Override
  public String route() {
    return contract.route();
  }

  @Override
  public String routeFor(String recipient) {
    return contract.routeFor(recipient);
  }

  @Override
  public boolean offers(String keyword) {
    return contract.offers(keyword);
  }

  @Override
  public Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters) {
    return contract.rcpt(recipient, parameters);
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
    wire.id(opening.id());
    return contract.deliver(message, opening);
  }

  @Override
  public Future<Void> abort() {
    return contract.abort();
  }
}
