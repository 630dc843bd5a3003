package dev.ledgerpost.operate.stale;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * The stale watch (docs/design.md §8.1): how old the PENDING entries get, which ones nobody is settling, and the
 * UNKNOWN ones waiting for an operator. Provides its {@link StaleGauges} and their last hour ({@link PendingHistory}).
 */
public final class StalePart implements Part {
  /** The gauges over the last hour, for the operator console's chart: one per process. */
  private final PendingHistory history = new PendingHistory();
  private StaleVerticle verticle;

  @Override
  public String name() {
    return "stale";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new StaleVerticle(a.get(NodeServices.class), a.get(Database.class), history);
    return a.deploy(verticle).onSuccess(x -> {
      a.provide(StaleGauges.class, verticle);
      a.provide(PendingHistory.class, history);
    });
  }

  /** Read at scrape time without waiting for the database (docs/design.md §8.1). */
  @Override
  public void gauges(GatewayMetrics metrics) {
    StaleGauges g = verticle;
    metrics.gauge("ledgerpost.pending.messages", "Ledger entries still PENDING", g::pendingMessages);
    metrics.gauge("ledgerpost.pending.oldest.age.seconds", "Age of the oldest PENDING ledger entry", g::oldestPendingAgeSeconds);
    metrics.gauge("ledgerpost.pending.stale.messages",
        "PENDING entries older than stale.threshold that the retry part does not hold", g::stalePendingMessages);
    metrics.gauge("ledgerpost.unknown.messages", "Ledger entries whose outcome is UNKNOWN, waiting for an operator",
        g::unknownMessages);
  }

  /** Pending, oldest pending and stale gauges. */
  public StaleGauges gauges() {
    return verticle;
  }
}
