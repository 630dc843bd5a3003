package dev.ledgerpost.relay;

import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.List;

/**
 * A client transaction relayed to the smarthost: RCPT verdicts are collected as the client gives them,
 * and DATA runs the relay contract over the wire transaction.
 */
public final class ContractTransaction implements RelayTransaction {
  private final RelayContract contract;
  private final WireTransaction wire;
  private final Submission submission;
  private final String mailFrom;
  private final Relay.MailParameters mailParameters;
  private final DownstreamReply mailReply;
  private final String route;
  /** The RCPT verdicts so far, in order: what the ledger is opened with. */
  private final List<RelayContract.Verdict> recipients;

  public ContractTransaction(RelayContract contract, WireTransaction wire, Submission submission, String mailFrom,
      Relay.MailParameters mailParameters, DownstreamReply mailReply, String route) {
    this.contract = contract;
    this.wire = wire;
    this.submission = submission;
    this.recipients = new ArrayList<>();
    this.mailFrom = mailFrom;
    this.mailParameters = mailParameters;
    this.mailReply = mailReply;
    this.route = route;
  }

  /** A transaction the downstream refused at MAIL: it holds no connection. */
  public static RelayTransaction refused(DownstreamReply reply, String route) {
    return new Refused(reply, route);
  }

  /** What {@link #refused} answers: its MAIL reply and route; nothing more can be done with it. */
  private record Refused(DownstreamReply mailReply, String route) implements RelayTransaction {
    @Override
    public String routeFor(String recipient) {
      return route;
    }

    @Override
    public boolean offers(String keyword) {
      return false;
    }

    @Override
    public Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters) {
      return Future.failedFuture(new IllegalStateException("transaction was refused at MAIL"));
    }

    @Override
    public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
      return Future.failedFuture(new IllegalStateException("transaction was refused at MAIL"));
    }

    @Override
    public Future<Void> abort() {
      return Future.succeededFuture();
    }
  }

  @Override
  public String route() {
    return route;
  }

  @Override
  public String routeFor(String recipient) {
    return route; // one smarthost: every recipient takes the one route there is
  }

  @Override
  public boolean offers(String keyword) {
    return wire.offers(keyword);
  }

  @Override
  public DownstreamReply mailReply() {
    return mailReply;
  }

  @Override
  public Future<DownstreamReply> rcpt(String address, RcptParameters parameters) {
    return wire.rcpt(address, parameters)
        .onSuccess(reply -> recipients.add(new RelayContract.Verdict(address, reply, parameters)));
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
    RelayContract.Envelope envelope = new RelayContract.Envelope(submission, mailFrom, mailParameters.ret(),
        mailParameters.envid(), route, List.copyOf(recipients));
    return contract.deliver(wire, envelope, message, opening);
  }

  /**
   * The contract for this envelope over {@code other} instead of this transaction's wire, recorded with {@code route}:
   * this wire's transaction is reset first, nothing of the body having gone down it (a returned DSN kept, {@link #keep}).
   */
  public Future<DeliveryOutcome> deliverOver(WireTransaction other, String route, MessageData message, Opening opening) {
    RelayContract.Envelope envelope = new RelayContract.Envelope(submission, mailFrom, mailParameters.ret(),
        mailParameters.envid(), route, List.copyOf(recipients));
    return wire.abort().compose(v -> contract.deliver(other, envelope, message, opening));
  }

  @Override
  public Future<Void> abort() {
    return wire.abort();
  }
}
