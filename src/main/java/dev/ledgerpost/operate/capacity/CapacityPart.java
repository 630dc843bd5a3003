package dev.ledgerpost.operate.capacity;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/**
 * The ledger's size and its disk (docs/design.md §8.5), read every {@code ledger.sizeInterval}: gauges, and a remark on
 * readiness when the disk is nearly full (the gateway stays ready: it still takes mail, issue 20).
 */
public final class CapacityPart implements Part {
  private CapacityVerticle verticle;

  @Override
  public String name() {
    return "capacity";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new CapacityVerticle(a.config().ledger(), a.get(Database.class), a.clock());
    return a.deploy(verticle).onSuccess(x -> a.provide(CapacityGauges.class, verticle));
  }

  @Override
  public Optional<String> readinessRemark() {
    return verticle.readinessReason();
  }

  /** From the capacity watch's last reading. */
  @Override
  public void gauges(GatewayMetrics metrics) {
    CapacityGauges c = verticle;
    metrics.gauge("ledgerpost.ledger.bytes", "Size of the ledger's database on disk (pg_database_size: tables, indexes, TOAST; not WAL)",
        c::databaseBytes);
    for (String table : CapacityGauges.TABLES) {
      metrics.gauge("ledgerpost.ledger.rows", "Rows of a ledger table, the planner's estimate (pg_class.reltuples over its partitions)",
          "table", table, () -> c.rows(table));
    }
    metrics.gauge("ledgerpost.ledger.oldest.seconds", "Age of the oldest message in the ledger (the time in its UUIDv7 id)",
        c::oldestSeconds);
    if (c.seesDisk()) { // absent, not 0, when the database's file system is out of sight
      metrics.gauge("ledgerpost.ledger.disk.free.bytes", "Free bytes of the file system holding the ledger's database",
          () -> c.diskFreeBytes().orElse(Double.NaN));
      metrics.gauge("ledgerpost.ledger.disk.total.bytes", "Size of the file system holding the ledger's database",
          () -> c.diskTotalBytes().orElse(Double.NaN));
    }
  }

  /** The ledger's size and disk gauges, and the readiness remark. */
  public CapacityGauges gauges() {
    return verticle;
  }
}
