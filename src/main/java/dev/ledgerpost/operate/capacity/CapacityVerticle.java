package dev.ledgerpost.operate.capacity;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.operate.capacity.CapacityMessages.LedgerSize;
import dev.ledgerpost.operate.capacity.CapacityMessages.SizeQuery;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How big the ledger is and how full its disk (issue 20; docs/design.md §8.5): every {@code ledger.sizeInterval}, and
 * once before the gateway takes mail, it asks the ledger's {@link SizeStore} (catalog reads, never a table scan) and
 * reads the free space of the database's file system on a worker. Gauges and readiness read the last values, so a
 * scrape never waits for the database, and a reading that failed keeps the one before (a size that drops to 0 because
 * the ledger did not answer would be a lie). Every node reports the same ledger-wide size; the disk is each node's view.
 */
public final class CapacityVerticle extends VerticleBase implements CapacityGauges {
  private static final Logger LOG = LoggerFactory.getLogger(CapacityVerticle.class);
  private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(30);

  /** The free and total bytes of one file system. */
  record Space(long free, long total) {
    boolean below(int percent) {
      return total > 0 && free * 100 < total * percent;
    }
  }

  private final GatewayConfig.Ledger config;
  private final Optional<Path> disk;
  private final Clock clock;
  /** Where its SQL ({@link SizeStore}) runs, on this verticle's context. */
  private final Database db;
  private volatile LedgerSize size;
  private volatile Space space;
  private long timer = -1;
  private boolean reading;
  /** Whether the last disk reading was below ledger.diskLowPercent: the log says so once per crossing. */
  private boolean low;

  public CapacityVerticle(GatewayConfig.Ledger config, Database db, Clock clock) {
    this.config = config;
    this.db = db;
    this.disk = config.disk();
    this.clock = clock;
  }

  @Override
  public Future<?> start() {
    new SizeStore(db, Bus.of(vertx));
    return vertx.executeBlocking(this::checkDisk).compose(v -> read()).onSuccess(v ->
        timer = vertx.setPeriodic(config.sizeInterval().toMillis(), t -> read()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }

  /** A configured ledger.diskPath that is no directory is a typing error: one line at start, not a gauge that never shows. */
  private Void checkDisk() {
    if (!config.diskPath().isEmpty() && !Files.isDirectory(Path.of(config.diskPath()))) {
      throw new StartFailure("ledger.diskPath " + config.diskPath() + ": no such directory; name a directory on the file "
          + "system that holds the ledger's database, or leave it empty", null);
    }
    return null;
  }

  /** One reading of the size and the disk; never overlaps itself, never fails (the last values stay). */
  Future<Void> read() {
    if (reading) {
      return Future.succeededFuture();
    }
    reading = true;
    Future<Void> sized = Bus.of(vertx).request(CapacityMessages.SIZE, new SizeQuery(TABLES), LedgerSize.class, QUERY_TIMEOUT)
        .onSuccess(s -> size = s)
        .onFailure(e -> LOG.debug("ledger size not read: {}", e.getMessage()))
        .<Void>mapEmpty().otherwiseEmpty();
    Future<Void> spaced = disk.isEmpty() ? Future.succeededFuture() : vertx.executeBlocking(() -> space(disk.get()))
        .onSuccess(this::spaceRead)
        .onFailure(e -> LOG.warn("free space of {} (the ledger's disk) not read: {}", disk.get(), e.getMessage()))
        .<Void>mapEmpty().otherwiseEmpty();
    return Future.join(sized, spaced).<Void>mapEmpty().otherwiseEmpty().onComplete(ar -> reading = false);
  }

  /** On a worker: a statfs of the file system. */
  private static Space space(Path path) throws IOException {
    FileStore store = Files.getFileStore(path);
    return new Space(store.getUsableSpace(), store.getTotalSpace());
  }

  private void spaceRead(Space s) {
    space = s;
    boolean nowLow = s.below(config.diskLowPercent());
    if (nowLow != low) {
      low = nowLow;
      if (nowLow) {
        LOG.warn("{}", diskReason(s));
      } else {
        LOG.info("the ledger's disk at {} has {} free again", disk.get(), percentFree(s));
      }
    }
  }

  private String diskReason(Space s) {
    return "the ledger's disk is nearly full: " + percentFree(s) + " free (" + s.free() + " of " + s.total() + " bytes) at "
        + disk.get() + ", below ledger.diskLowPercent " + config.diskLowPercent() + "%; when it is full every message gets"
        + " 451 4.3.0";
  }

  private static String percentFree(Space s) {
    return String.format(Locale.ROOT, "%.1f%%", s.total() == 0 ? 0.0 : 100.0 * s.free() / s.total());
  }

  @Override
  public double databaseBytes() {
    LedgerSize s = size;
    return s == null ? Double.NaN : s.databaseBytes();
  }

  @Override
  public double rows(String table) {
    LedgerSize s = size;
    return s == null ? Double.NaN : s.rows().getOrDefault(table, 0L);
  }

  @Override
  public double oldestSeconds() {
    LedgerSize s = size;
    if (s == null) {
      return Double.NaN;
    }
    if (s.oldestId() == null) {
      return 0;
    }
    // The id's own time (UUIDv7): what time partitions and retention go by. Its received_at for an id of another kind.
    Instant oldest = LedgerIds.time(s.oldestId()).orElseGet(() -> s.oldestReceivedAt().toInstant());
    return Math.max(0, Duration.between(oldest, clock.instant()).toMillis() / 1000.0);
  }

  @Override
  public boolean seesDisk() {
    return disk.isPresent();
  }

  @Override
  public OptionalDouble diskFreeBytes() {
    Space s = space;
    return s == null ? OptionalDouble.empty() : OptionalDouble.of(s.free());
  }

  @Override
  public OptionalDouble diskTotalBytes() {
    Space s = space;
    return s == null ? OptionalDouble.empty() : OptionalDouble.of(s.total());
  }

  @Override
  public Optional<String> readinessReason() {
    Space s = space;
    return s != null && s.below(config.diskLowPercent()) ? Optional.of(diskReason(s)) : Optional.empty();
  }
}
