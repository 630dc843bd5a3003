package dev.ledgerpost.delivery;

import dev.ledgerpost.ledger.IdempotencyMessages;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.UUID;

/** One mail transaction mirrored on the downstream. Ends with {@link #deliver} or {@link #abort}. */
public interface RelayTransaction {

  /** The downstream's answer to MAIL FROM. */
  DownstreamReply mailReply();

  /** The route this transaction is bound to; every recipient of it must share the route. */
  String route();

  /** The route a recipient would take. */
  String routeFor(String recipient);

  /** Forwards RCPT TO; the reply is the downstream's verdict, to be mirrored to the client. */
  Future<DownstreamReply> rcpt(String recipient);

  /** Opens the ledger, sends the body, settles the ledger; never fails, every end is an outcome. */
  Future<DeliveryOutcome> deliver(MessageData message);

  /**
   * {@link #deliver(MessageData)} under a ledger id the intake chose (the HTTP API's operation id), with
   * the intake's idempotency key bound to the entry in the very transaction that opens the ledger.
   * A relay that cannot do that fails instead of delivering without the key.
   */
  default Future<DeliveryOutcome> deliver(MessageData message, UUID ledgerId, IdempotencyMessages.KeyRef key,
      Duration keyLease) {
    return Future.failedFuture(new UnsupportedOperationException(getClass().getName() + " cannot bind idempotency keys"));
  }

  /** Resets the downstream transaction (RSET) and releases the connection. Never fails. */
  Future<Void> abort();
}
