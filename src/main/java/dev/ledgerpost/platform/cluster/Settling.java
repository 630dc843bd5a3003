package dev.ledgerpost.platform.cluster;

import io.vertx.core.Future;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;

/**
 * What this node is settling, as its heartbeat records it (docs/design.md §8.1, §9.2): the outcomes the retry part
 * holds and the rows in delivery. The retry part says it ({@link NodeVerticle#settlingFrom}); the node only asks, so the
 * cluster part knows nothing of retries.
 */
@FunctionalInterface
public interface Settling {
  /** Fails (or times out) when the one who knows cannot answer now: the heartbeat then leaves the marks as they were. */
  Future<Marks> now(Duration timeout);

  /** The held outcomes and the rows in delivery. */
  record Marks(Set<UUID> held, Set<UUID> delivering) {}

  /** Until the retry part says otherwise: nobody answers. */
  Settling UNKNOWN = timeout -> Future.failedFuture("no part says what this node is settling");
}
