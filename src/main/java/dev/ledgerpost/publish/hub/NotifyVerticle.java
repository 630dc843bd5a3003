package dev.ledgerpost.publish.hub;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;

/**
 * The WebSocket hub as a part of its own (docs/design.md §6.4): its subscribers' bookkeeping, history paging and
 * fan-out run on this verticle's context, so a slow subscriber never shares an event loop's work with a
 * send. The sockets themselves are accepted by the HTTP API's instances, on the API's port and origin,
 * and handed over here.
 */
public final class NotifyVerticle extends VerticleBase {
  private final NotifyHub hub;
  private final Duration poll;

  public NotifyVerticle(NotifyHub hub, Duration poll) {
    this.hub = hub;
    this.poll = poll;
  }

  @Override
  public Future<?> start() {
    return hub.start(context, poll);
  }
}
