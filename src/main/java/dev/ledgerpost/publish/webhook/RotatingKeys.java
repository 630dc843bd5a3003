package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.auth.WebhookSecrets;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.function.Supplier;

/**
 * The keys of an endpoint made through the API: its secret, and during a rotation's grace
 * ({@code webhooks.rotationGrace}) the one it replaced, so a receiver that has not switched yet still verifies
 * (docs/design.md §6.6). The replaced key stops signing when its grace ends on the gateway's clock; the row keeps it
 * until the next rotation overwrites it. Set on the webhook verticle's context, read by its {@link Signer}.
 */
final class RotatingKeys implements Supplier<List<byte[]>> {
  private final Clock clock;
  private volatile List<byte[]> current = List.of();
  private volatile byte[] previous;
  private volatile Instant previousUntil;

  RotatingKeys(Clock clock, ApiEndpointStore.Endpoint e) {
    this.clock = clock;
    set(e);
  }

  void set(ApiEndpointStore.Endpoint e) {
    previous = e.previousSecret() == null ? null : WebhookSecrets.decode(e.previousSecret());
    previousUntil = e.previousUntil();
    current = List.of(WebhookSecrets.decode(e.secret()));
  }

  @Override
  public List<byte[]> get() {
    byte[] old = previous;
    Instant until = previousUntil;
    if (old == null || until == null || !clock.instant().isBefore(until)) {
      return current;
    }
    return List.of(current.get(0), old);
  }
}
