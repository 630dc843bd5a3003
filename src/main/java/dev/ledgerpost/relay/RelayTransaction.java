package dev.ledgerpost.relay;

import io.vertx.core.Future;

/** One mail transaction mirrored on the downstream, as intake sees it. Ends with {@link #deliver} or {@link #abort}. */
public interface RelayTransaction {

  /** RFC 3461's NOTIFY and ORCPT of one RCPT as the client wrote them (null when absent): passed on verbatim. */
  record RcptParameters(String dsnNotify, String dsnOrcpt) {
    public static final RcptParameters NONE = new RcptParameters(null, null);

    public boolean dsn() {
      return dsnNotify != null || dsnOrcpt != null;
    }
  }

  /** The downstream's answer to MAIL FROM. */
  DownstreamReply mailReply();

  /** The route this transaction is bound to; every recipient of it must share the route. */
  String route();

  /** The route a recipient would take. */
  String routeFor(String recipient);

  /** Whether the smarthost connection of this transaction offered an EHLO keyword (CHUNKING, BINARYMIME, DSN...). */
  boolean offers(String keyword);

  /** Forwards RCPT TO with its DSN parameters; the reply is the downstream's verdict, to be mirrored to the client. */
  Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters);

  default Future<DownstreamReply> rcpt(String recipient) {
    return rcpt(recipient, RcptParameters.NONE);
  }

  /** Runs the relay contract (docs/contract.md §1) for the body: never fails, every end is an outcome. */
  Future<DeliveryOutcome> deliver(MessageData message, Opening opening);

  /** {@link #deliver(MessageData, Opening)} under a fresh ledger id, as SMTP intake does. */
  default Future<DeliveryOutcome> deliver(MessageData message) {
    return deliver(message, Opening.fresh());
  }

  /**
   * Keeps the body here instead of relaying it: a returned DSN tracking keeps (docs/design.md §8.13, "Returned DSNs").
   * The downstream transaction is reset with nothing of the body sent, and the relay contract runs as for a captured
   * message (docs/design.md §8.10): the ledger opened, the bytes kept, the row settled CAPTURED with {@code kept} as its
   * reply. Never fails, as {@link #deliver}. A transaction that cannot keep (this default, or a body too big to keep)
   * delivers instead: relaying is what happened to every DSN before, never a lost message.
   */
  default Future<DeliveryOutcome> keep(MessageData message, DownstreamReply kept) {
    return deliver(message);
  }

  /** Resets the downstream transaction (RSET) and releases the connection. Never fails. */
  Future<Void> abort();
}
