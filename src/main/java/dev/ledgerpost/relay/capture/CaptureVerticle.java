package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/** Capture mode's addresses on a context of their own: a capture's bytes for the API, and the expiry job's deletes. */
final class CaptureVerticle extends VerticleBase {
  private final CaptureStore store;

  CaptureVerticle(CaptureStore store) {
    this.store = store;
  }

  @Override
  public Future<?> start() {
    Bus bus = Bus.of(vertx);
    bus.serve(CaptureMessages.GET, CaptureMessages.Get.class, store::get);
    bus.serve(CaptureMessages.PRUNE, CaptureMessages.Prune.class, store::prune);
    return Future.succeededFuture();
  }
}
