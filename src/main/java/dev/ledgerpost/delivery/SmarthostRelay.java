package dev.ledgerpost.delivery;

import dev.ledgerpost.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * The relay to the configured smarthost: every recipient takes the one route there is. One per event
 * loop (each SMTP and HTTP verticle instance has its own, with its own connection pool); they share the
 * process-wide {@link RelayContract} and {@link DownstreamSlots}.
 */
public final class SmarthostRelay implements Relay {
  private final GatewayConfig.Downstream config;
  private final DownstreamPool pool;
  private final RelayContract contract;

  public SmarthostRelay(Vertx vertx, GatewayConfig.Downstream config, String hostname, RelayContract contract,
      DownstreamSlots slots) {
    this.config = config;
    this.contract = contract;
    this.pool = new DownstreamPool(vertx, config, hostname, slots);
  }

  @Override
  public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters) {
    return pool.borrow().compose(lease -> mail(lease, submission, mailFrom, parameters)
        .recover(e -> {
          if (lease.reused() && e instanceof DownstreamConnection.Lost) {
            // An idle connection died unnoticed; nothing was sent in this transaction, so a fresh one is safe.
            return pool.fresh().compose(l -> mail(l, submission, mailFrom, parameters));
          }
          return Future.failedFuture(e);
        }))
        .recover(e -> Future.failedFuture(e instanceof DownstreamUnavailable
            ? e
            : new DownstreamUnavailable("downstream failed at MAIL: " + e.getMessage(), e)));
  }

  private Future<RelayTransaction> mail(DownstreamPool.Lease lease, Submission submission, String mailFrom,
      MailParameters p) {
    DownstreamConnection c = lease.connection();
    if (p.smtpUtf8() && !c.supports("SMTPUTF8")) {
      pool.release(c);
      return Future.succeededFuture(ContractTransaction.refused(
          new DownstreamReply(553, "5.6.7", "Downstream does not support SMTPUTF8"), config.route()));
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
            config.route());
      }
      if (reply.code() == 421) {
        c.close();
      } else {
        pool.release(c);
      }
      return ContractTransaction.refused(reply, config.route());
    });
  }

  public Future<Void> close() {
    return pool.close();
  }
}
