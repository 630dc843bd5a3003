package dev.ledgerpost.delivery;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.metrics.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.concurrent.atomic.AtomicLong;

/** The relay to the configured smarthost: every recipient takes the one route there is. */
public final class SmarthostRelay implements Relay {
  private final Vertx vertx;
  private final Bus bus;
  private final GatewayConfig.Downstream config;
  private final GatewayConfig.Delivery delivery;
  private final String hostname;
  private final DownstreamPool pool;
  private final AtomicLong handovers;
  private final GatewayMetrics metrics;

  /** {@code slots} is the process-wide cap on smarthost connections, shared by every relay. */
  public SmarthostRelay(Vertx vertx, GatewayConfig.Downstream config, GatewayConfig.Delivery delivery, String hostname,
      AtomicLong handovers, GatewayMetrics metrics, DownstreamSlots slots) {
    this.metrics = metrics;
    this.vertx = vertx;
    this.bus = Bus.of(vertx);
    this.config = config;
    this.delivery = delivery;
    this.hostname = hostname;
    this.pool = new DownstreamPool(vertx, config, hostname, slots);
    this.handovers = handovers;
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
      return Future.succeededFuture(SmarthostTransaction.refused(
          new DownstreamReply(553, "5.6.7", "Downstream does not support SMTPUTF8"), route()));
    }
    StringBuilder cmd = new StringBuilder("MAIL FROM:<").append(mailFrom).append('>');
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
        return new SmarthostTransaction(this, c, submission, mailFrom, reply);
      }
      if (reply.code() == 421) {
        c.close();
      } else {
        pool.release(c);
      }
      return SmarthostTransaction.refused(reply, route());
    });
  }

  String route() {
    return config.route();
  }

  Vertx vertx() {
    return vertx;
  }

  Bus bus() {
    return bus;
  }

  GatewayConfig.Downstream config() {
    return config;
  }

  GatewayConfig.Delivery delivery() {
    return delivery;
  }

  String hostname() {
    return hostname;
  }

  DownstreamPool pool() {
    return pool;
  }

  GatewayMetrics metrics() {
    return metrics;
  }

  void handedOver() {
    handovers.incrementAndGet();
  }

  public Future<Void> close() {
    return pool.close();
  }
}
