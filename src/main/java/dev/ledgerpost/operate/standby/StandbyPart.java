package dev.ledgerpost.operate.standby;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/**
 * The check of the ledger's synchronous standbys (docs/design.md §8.7), in the gateway only with
 * {@code ledger.requireSynchronousStandby}: a gauge, and a remark on readiness while there is none (the gateway stays
 * ready: it still takes mail).
 */
public final class StandbyPart implements Part {
  private StandbyVerticle verticle;

  @Override
  public String name() {
    return "standby";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new StandbyVerticle(a.config().node().heartbeatInterval(), a.get(Database.class));
    return a.deploy(verticle);
  }

  @Override
  public Optional<String> readinessRemark() {
    return verticle.readinessRemark();
  }

  /** NaN, not 0, before the first check and while it cannot tell: 0 is the alert's condition. */
  @Override
  public void gauges(GatewayMetrics metrics) {
    metrics.gauge("ledgerpost.ledger.synchronous.standbys", "Standbys of the ledger's server in sync or quorum state"
        + " (pg_stat_replication; NaN while it cannot be read)", verticle::standbys);
  }
}
