package dev.ledgerpost.delivery;

import dev.ledgerpost.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Smarthost connections kept open between transactions, so a busy gateway does not pay a TCP
 * connect, greeting, EHLO (and TLS, AUTH) per message. Lives on one event loop; not thread-safe.
 * Every connection it opens holds one of the process-wide {@link DownstreamSlots} until its socket closes.
 */
final class DownstreamPool {
  /** A connection and whether it came from the pool (a reused one may have died while idle). */
  record Lease(DownstreamConnection connection, boolean reused) {}

  private final Vertx vertx;
  private final GatewayConfig.Downstream config;
  private final String hostname;
  private final NetClient client;
  private final DownstreamSlots slots;
  private final Deque<DownstreamConnection> idle = new ArrayDeque<>();
  private final long evictTimer;

  DownstreamPool(Vertx vertx, GatewayConfig.Downstream config, String hostname, DownstreamSlots slots) {
    this.vertx = vertx;
    this.slots = slots;
    this.config = config;
    this.hostname = hostname;
    this.client = vertx.createNetClient(new NetClientOptions()
        .setConnectTimeout((int) config.connectTimeout().toMillis())
        .setTcpNoDelay(true));
    long period = Math.max(1000, config.idleTtl().toMillis() / 2);
    this.evictTimer = vertx.setPeriodic(period, t -> evictExpired());
  }

  Future<Lease> borrow() {
    DownstreamConnection c;
    while ((c = idle.pollLast()) != null) {
      if (c.usable() && c.idleNanos() < config.idleTtl().toNanos()) {
        return Future.succeededFuture(new Lease(c, true));
      }
      c.quit();
    }
    return fresh();
  }

  Future<Lease> fresh() {
    DownstreamSlots.Slot slot = slots.tryAcquire();
    if (slot == null) {
      return Future.failedFuture(new DownstreamSlots.Exhausted(slots.max()));
    }
    return DownstreamConnection.open(vertx, client, config, hostname)
        .onSuccess(conn -> conn.closedFuture().onComplete(v -> slot.release()))
        .onFailure(e -> {
          slot.release();
          slots.unreachable(config.host() + ":" + config.port(), e);
        })
        .map(conn -> new Lease(conn, false))
        .recover(e -> Future.failedFuture(new DownstreamUnavailable(
            "cannot reach downstream " + config.host() + ":" + config.port() + ": " + e.getMessage(), e)));
  }

  /** Takes back a connection whose transaction ended cleanly (no transaction open downstream). */
  void release(DownstreamConnection c) {
    // At the cap an idle connection would keep another client (or another event loop's pool) from
    // opening one: close it instead, and its slot comes free.
    if (c.usable() && idle.size() < config.maxIdle() && !slots.full()) {
      c.idle();
      idle.addLast(c);
    } else {
      c.quit();
    }
  }

  private void evictExpired() {
    idle.removeIf(c -> {
      boolean expired = !c.usable() || c.idleNanos() >= config.idleTtl().toNanos() || slots.full();
      if (expired) {
        c.quit();
      }
      return expired;
    });
  }

  Future<Void> close() {
    vertx.cancelTimer(evictTimer);
    DownstreamConnection c;
    while ((c = idle.poll()) != null) {
      c.quit();
    }
    return client.close();
  }
}
