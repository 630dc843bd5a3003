package dev.ledgerpost.relay.capture;

import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.RelayTransaction;
import io.vertx.core.Future;

/**
 * A transaction that passes every step to the one it wraps, for this package's wrappers to override the step they change
 * ({@link CapturedTransaction}'s deliver, {@link KeepingTransaction}'s keep). Only the interface's own methods are passed
 * on: its defaults ({@code rcpt(String)}, {@code deliver(MessageData)}, {@code keep}) still run on the wrapper, so a
 * wrapper's override is what they reach.
 */
abstract class ForwardingTransaction implements RelayTransaction {
  private final RelayTransaction wrapped;

  ForwardingTransaction(RelayTransaction wrapped) {
    this.wrapped = wrapped;
  }

  @Override
  public DownstreamReply mailReply() {
    return wrapped.mailReply();
  }

  @Override
  public String route() {
    return wrapped.route();
  }

  @Override
  public String routeFor(String recipient) {
    return wrapped.routeFor(recipient);
  }

  @Override
  public boolean offers(String keyword) {
    return wrapped.offers(keyword);
  }

  @Override
  public Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters) {
    return wrapped.rcpt(recipient, parameters);
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
    return wrapped.deliver(message, opening);
  }

  @Override
  public Future<Void> abort() {
    return wrapped.abort();
  }
}
