package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Smarthost connections kept open between transactions, so a busy gateway does not pay a TCP
 * connect, greeting, EHLO (and TLS, AUTH) per message. Lives on one event loop; not thread-safe.
 * Every connection it opens holds one of the process-wide {@link DownstreamSlots} until its socket closes.
 *
 * <p>A new connection goes to the smarthosts in {@link SmarthostHealth#order()}: when one cannot be
 * opened (refused, timed out, a greeting other than 220, a failed EHLO, STARTTLS or AUTH) the next is
 * tried. Nothing has been sent for a message then, so moving on cannot make a second copy; once a
 * connection is open, whatever happens on it is that host's. An idle connection belongs to the host it
 * was opened to, and is reused only while that host is the one new connections go to first: when the
 * primary answers again, connections to a fallback are closed as they come back.
 */
final class DownstreamPool {
  /** A connection and whether it came from the pool (a reused one may have died while idle). */
  record Lease(DownstreamConnection connection, boolean reused) {}

  private final Vertx vertx;
  private final GatewayConfig.Downstream config;
  private final String hostname;
  private final NetClient client;
  private final DownstreamSlots slots;
  private final SmarthostHealth health;
  private final Deque<DownstreamConnection> idle = new ArrayDeque<>();
  /** Every connection this pool opened that is not closed yet, idle or in use. */
  private final Set<DownstreamConnection> open = new LinkedHashSet<>();
  private final long evictTimer;
  /** {@link #stop} began: nothing new is opened or kept. */
  private boolean stopping;

  DownstreamPool(Vertx vertx, GatewayConfig.Downstream config, String hostname, DownstreamSlots slots, SmarthostHealth health) {
    this.vertx = vertx;
    this.slots = slots;
    this.health = health;
    this.config = config;
    this.hostname = hostname;
    this.client = vertx.createNetClient(new NetClientOptions()
        .setConnectTimeout((int) config.connectTimeout().toMillis())
        .setTcpNoDelay(true));
    long period = Math.max(1000, config.idleTtl().toMillis() / 2);
    this.evictTimer = vertx.setPeriodic(period, t -> evictExpired());
  }

  Future<Lease> borrow() {
    if (stopping) {
      return Future.failedFuture(new DownstreamUnavailable("the gateway is stopping", null));
    }
    GatewayConfig.Smarthost preferred = health.preferred();
    DownstreamConnection c;
    while ((c = idle.pollLast()) != null) {
      if (c.usable() && c.idleNanos() < config.idleTtl().toNanos() && c.target().equals(preferred)) {
        return Future.succeededFuture(new Lease(c, true));
      }
      c.quit();
    }
    return fresh();
  }

  /** A new connection, to the first smarthost in {@link SmarthostHealth#order()} that can be opened. */
  Future<Lease> fresh() {
    if (stopping) {
      return Future.failedFuture(new DownstreamUnavailable("the gateway is stopping", null));
    }
    return open(health.order(), 0, new ArrayList<>());
  }

  private Future<Lease> open(List<GatewayConfig.Smarthost> order, int i, List<String> failures) {
    DownstreamSlots.Slot slot = slots.tryAcquire();
    if (slot == null) {
      return Future.failedFuture(new DownstreamSlots.Exhausted(slots.max()));
    }
    GatewayConfig.Smarthost target = order.get(i);
    return DownstreamConnection.open(vertx, client, config, target, hostname).transform(ar -> {
      if (ar.succeeded()) {
        DownstreamConnection conn = ar.result();
        open.add(conn);
        conn.closedFuture().onComplete(v -> {
          open.remove(conn);
          slot.release();
        });
        if (stopping) { // the stop began while it was being opened: nothing was sent for a message on it
          conn.quit();
          return Future.failedFuture(new DownstreamUnavailable("the gateway is stopping", null));
        }
        health.answered(target);
        health.learned(target, conn.extensions());
        return Future.succeededFuture(new Lease(conn, false));
      }
      slot.release();
      String why = String.valueOf(ar.cause().getMessage());
      health.failed(target, why);
      failures.add(target + ": " + why);
      if (i + 1 < order.size()) {
        return open(order, i + 1, failures);
      }
      if (order.size() == 1) {
        slots.unreachable(target.toString(), ar.cause());
        return Future.failedFuture(new DownstreamUnavailable("cannot reach downstream " + target + ": " + why, ar.cause()));
      }
      DownstreamUnavailable none = new DownstreamUnavailable("cannot reach any smarthost: " + String.join("; ", failures),
          ar.cause());
      slots.unreachable(order.stream().map(Object::toString).collect(java.util.stream.Collectors.joining(", ")), none);
      return Future.failedFuture(none);
    });
  }

  /** Takes back a connection whose transaction ended cleanly (no transaction open downstream). */
  void release(DownstreamConnection c) {
    // At the cap an idle connection would keep another client (or another event loop's pool) from
    // opening one: close it instead, and its slot comes free. One to a host new connections no longer
    // go to first would not be reused: close it too.
    if (!stopping && c.usable() && idle.size() < config.maxIdle() && !slots.full() && c.target().equals(health.preferred())) {
      c.idle();
      idle.addLast(c);
    } else {
      c.quit();
    }
  }

  private void evictExpired() {
    GatewayConfig.Smarthost preferred = health.preferred();
    idle.removeIf(c -> {
      boolean expired = !c.usable() || c.idleNanos() >= config.idleTtl().toNanos() || slots.full()
          || !c.target().equals(preferred);
      if (expired) {
        c.quit();
      }
      return expired;
    });
  }

  /**
   * The end of a stop's grace (docs/design.md §11.1): nothing new is opened or kept, and every connection is closed
   * except one whose final dot is already at the smarthost. Cut, that one would leave its message UNKNOWN and its
   * client resending it; it is left to its verdict, bounded by {@code downstream.dataTimeout}, and closes when it
   * comes back. A transaction cut here had sent no final dot: nothing of it was delivered (its message settles
   * FAILED_TEMP "lost before the final dot", or its MAIL or RCPT fails, and its client hears a 451). Completes
   * when every connection is closed.
   */
  Future<Void> stop() {
    stopping = true;
    vertx.cancelTimer(evictTimer);
    List<DownstreamConnection> wereIdle = List.copyOf(idle);
    idle.clear();
    wereIdle.forEach(DownstreamConnection::quit);
    List<Future<Void>> finishing = new ArrayList<>();
    for (DownstreamConnection conn : List.copyOf(open)) {
      if (!conn.awaitingVerdict() && !wereIdle.contains(conn)) {
        conn.close();
      }
      finishing.add(conn.closedFuture());
    }
    return Future.join(finishing).mapEmpty();
  }

  /** How many connections are past their final dot and waiting for the smarthost's verdict. */
  int awaitingVerdict() {
    return (int) open.stream().filter(DownstreamConnection::awaitingVerdict).count();
  }

  Future<Void> close() {
    return stop().eventually(client::close);
  }
}
