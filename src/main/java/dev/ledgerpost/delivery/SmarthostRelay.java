package dev.ledgerpost.delivery;

import dev.ledgerpost.config.GatewayConfig;
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

  public SmarthostRelay(Vertx vertx, GatewayConfig.Downstream config, String hostname, RelayContract contract,
      DownstreamSlots slots, SmarthostHealth health) {
    this.config = config;
    this.contract = contract;
    this.pool = new DownstreamPool(vertx, config, hostname, slots, health);
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
    StringBuilder cmd = new StringBuilder(64).append("MAIL FROM:<").append(mailFrom).append('>');
    if (p.declaredSize() > 0 && c.supports("SIZE")) {
      cmd.append(" SIZE=").append(p.declaredSize());
    }
    if (p.eightBitMime() && c.supports("8BITMIME")) {
      cmd.append(" BODY=8BITMIME");
    }
    if (p.smtpUtf8()) {
      cmd.append(" SMTPUTF8");
    }
    return c.command(cmd.toString(), config.replyTimeout()).map(reply -> {
      if (reply.positive()) {
        return new ContractTransaction(contract, new SmtpClientTransaction(c, pool, config), submission, mailFrom, reply,
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

  public Future<Void> close() {
    return pool.close();
  }
}
