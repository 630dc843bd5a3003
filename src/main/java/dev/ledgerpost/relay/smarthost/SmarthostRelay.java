package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.relay.ContractTransaction;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayContract;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * The relay to the configured smarthosts: a transaction takes the route of the smarthost its connection
 * was opened to (the primary, or a fallback when the ones before it could not be reached: {@link DownstreamPool}),
 * and every recipient of it takes that route. One per event loop (each SMTP and HTTP verticle instance has
 * its own, with its own connection pool); they share the process-wide {@link RelayContract},
 * {@link DownstreamSlots} and {@link SmarthostHealth}.
 */
public final class SmarthostRelay implements Relay {
  private final GatewayConfig.Downstream config;
  private final DownstreamPool pool;
  private final RelayContract contract;
  private final SmarthostHealth health;

  public SmarthostRelay(Vertx vertx, GatewayConfig.Downstream config, String hostname, RelayContract contract,
      DownstreamSlots slots, SmarthostHealth health) {
    this.config = config;
    this.contract = contract;
    this.health = health;
    this.pool = new DownstreamPool(vertx, config, hostname, slots, health);
  }

  @Override
  public boolean downstreamOffers(String keyword) {
    return health.offers(keyword);
  }

  /**
   * Opens one connection to the smarthosts as a client's would be (failing over, its failures counted),
   * so that its EHLO says what they offer before the first client asks, then says QUIT. Never fails: a
   * smarthost that cannot be reached now is a client's 451 later, not a reason not to start.
   */
  public Future<Void> probe() {
    return pool.fresh()
        .map(lease -> {
          lease.connection().quit();
          return (Void) null;
        })
        .otherwise(e -> null);
  }

  @Override
  public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters) {
    // A pooled connection may have died unnoticed while idle, or the smarthost hangs up on it at MAIL (421):
    // nothing was sent in this transaction, so a fresh connection is safe, and it fails over like any other.
    return pool.borrow().compose(lease -> mail(lease, submission, mailFrom, parameters).compose(
            txn -> lease.reused() && txn.mailReply().code() == 421
                ? pool.fresh().compose(l -> mail(l, submission, mailFrom, parameters))
                : Future.succeededFuture(txn),
            e -> lease.reused() && e instanceof DownstreamConnection.Lost
                ? pool.fresh().compose(l -> mail(l, submission, mailFrom, parameters))
                : Future.failedFuture(e)))
        .recover(e -> Future.failedFuture(e instanceof DownstreamUnavailable
            ? e
            : new DownstreamUnavailable("downstream failed at MAIL: " + e.getMessage(), e)));
  }

  private Future<RelayTransaction> mail(DownstreamPool.Lease lease, Submission submission, String mailFrom,
      MailParameters p) {
    DownstreamConnection c = lease.connection();
    String route = c.target().route(); // the smarthost actually used, recorded on the row
    if (p.smtpUtf8() && !c.supports("SMTPUTF8")) {
      pool.release(c);
      return Future.succeededFuture(ContractTransaction.refused(
          new DownstreamReply(553, "5.6.7", "Downstream does not support SMTPUTF8"), route));
    }
    // Offered to the client because the smarthost offered it at its last EHLO; this connection's (a fallback's,
    // or the smarthost changed) does not: the client tries again, and its next EHLO no longer offers it.
    if (p.dsn() && !c.supports("DSN")) {
      pool.release(c);
      return Future.succeededFuture(ContractTransaction.refused(NOT_NOW_DSN, route));
    }
    if (p.binaryMime() && !(c.supports("BINARYMIME") && c.supports("CHUNKING"))) {
      pool.release(c);
      return Future.succeededFuture(ContractTransaction.refused(
          new DownstreamReply(451, "4.3.3", "Downstream does not offer BINARYMIME now; try again"), route));
    }
    StringBuilder cmd = new StringBuilder(64).append("MAIL FROM:<").append(mailFrom).append('>');
    if (p.declaredSize() > 0 && c.supports("SIZE")) {
      cmd.append(" SIZE=").append(p.declaredSize());
    }
    if (p.binaryMime()) {
      cmd.append(" BODY=BINARYMIME");
    } else if (p.eightBitMime() && c.supports("8BITMIME")) {
      cmd.append(" BODY=8BITMIME");
    }
    if (p.smtpUtf8()) {
      cmd.append(" SMTPUTF8");
    }
    if (p.ret() != null) {
      cmd.append(" RET=").append(p.ret()); // verbatim: validated xtext or FULL/HDRS (RFC 3461)
    }
    if (p.envid() != null) {
      cmd.append(" ENVID=").append(p.envid());
    }
    return c.command(cmd.toString(), config.replyTimeout()).map(reply -> {
      if (reply.positive()) {
        return new ContractTransaction(contract, new SmtpClientTransaction(c, pool, config), submission, mailFrom, p, reply,
            route);
      }
      if (reply.code() == 421) {
        c.close();
      } else {
        pool.release(c);
      }
      return ContractTransaction.refused(reply, route);
    });
  }

  /** DSN parameters for a connection that does not offer DSN: refused for now (RFC 3461 leaves no silent drop to a relay that cannot notify). */
  static final DownstreamReply NOT_NOW_DSN = new DownstreamReply(451, "4.3.3", "Downstream does not offer DSN now; try again");

  /**
   * A stop's grace is over: connections are closed except those whose final dot is at the smarthost, which get
   * their verdict (at most {@code downstream.dataTimeout}). Completes when every connection is closed.
   */
  public Future<Void> stop() {
    return pool.stop();
  }

  /** Messages past their final dot whose smarthost verdict is awaited now. */
  public int awaitingVerdict() {
    return pool.awaitingVerdict();
  }

  /** {@link #stop}, then the client itself. */
  public Future<Void> close() {
    return pool.close();
  }
}
