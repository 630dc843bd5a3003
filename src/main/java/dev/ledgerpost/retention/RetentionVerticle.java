package dev.ledgerpost.retention;

import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.cluster.Job;
import dev.ledgerpost.cluster.Leadership;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.idempotency.IdempotencyMessages;
import dev.ledgerpost.outbox.OutboxMessages;
import dev.ledgerpost.ledger.DatabaseTarget;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The ledger's retention jobs, each run by one node of the cluster at a time (docs/design.md §9.2): published
 * outbox events past {@code notify.retention}, idempotency keys past {@code api.idempotencyRetention}, and the ledger's
 * weekly partitions ({@link LedgerRetention}: made ahead, dropped past {@code ledger.retention}). The node that takes a
 * job runs it at once, then every interval while it leads.
 */
public final class RetentionVerticle extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RetentionVerticle.class);
  static final int BATCH = 1000;
  static final int MAX_BATCHES = 100;
  /** Keys expire by the day; looking every ten minutes keeps the table near its retention. */
  static final Duration IDEMPOTENCY_INTERVAL = Duration.ofMinutes(10);
  /** Partitions are made weeks ahead and dropped by the week: hourly is plenty. */
  static final Duration PARTITION_INTERVAL = Duration.ofHours(1);

  private final GatewayConfig config;
  private final Leadership leadership;
  private final DatabaseTarget target;
  private final Clock clock;
  /** Null when no ledger.archiveDir is set. */
  private final PartitionArchiver archiver;
  private final List<Long> timers = new ArrayList<>();
  private boolean stopped;

  public RetentionVerticle(GatewayConfig config, Leadership leadership, DatabaseTarget target, Clock clock,
      PartitionArchiver archiver) {
    this.config = config;
    this.leadership = leadership;
    this.target = target;
    this.clock = clock;
    this.archiver = archiver;
  }

  @Override
  public Future<?> start() {
    Bus bus = Bus.of(vertx);
    GatewayConfig.Notify notify = config.notifications();
    BoundedPrune outbox = new BoundedPrune("outbox", BATCH, MAX_BATCHES, n -> bus
        .request(OutboxMessages.PRUNE, new OutboxMessages.Prune(notify.retention(), n), OutboxMessages.Pruned.class)
        .map(OutboxMessages.Pruned::deleted));
    Duration retention = config.api().idempotencyRetention();
    BoundedPrune keys = new BoundedPrune("idempotency key", BATCH, MAX_BATCHES, n -> bus
        .request(IdempotencyMessages.PRUNE, new IdempotencyMessages.Prune(retention, n), IdempotencyMessages.Pruned.class)
        .map(IdempotencyMessages.Pruned::deleted));
    long outboxEvery = Math.max(1000, Math.min(notify.retention().toMillis(), notify.pruneInterval().toMillis()));
    schedule(Job.OUTBOX_RETENTION, outboxEvery, outbox);
    schedule(Job.IDEMPOTENCY_RETENTION, IDEMPOTENCY_INTERVAL.toMillis(), keys);
    LedgerRetention partitions = new LedgerRetention(vertx, target, new LedgerRetention.Policy(config.ledger().retention(),
        archiver, config.ledger().retentionWithoutArchive()));
    boolean[] running = {false};
    Runnable partitionPass = () -> {
      if (stopped || running[0] || !leadership.leads(Job.LEDGER_PARTITIONS)) {
        return;
      }
      running[0] = true;
      partitions.run(clock.instant())
          .onFailure(e -> LOG.warn("ledger partition pass failed: {}; the next pass tries again", e.getMessage()))
          .onComplete(ar -> running[0] = false);
    };
    timers.add(vertx.setPeriodic(PARTITION_INTERVAL.toMillis(), t -> partitionPass.run()));
    leadership.whenGained(Job.LEDGER_PARTITIONS, partitionPass);
    return Future.succeededFuture();
  }

  private void schedule(Job job, long everyMillis, BoundedPrune prune) {
    Runnable pass = () -> {
      if (!stopped && leadership.leads(job)) {
        prune.run();
      }
    };
    timers.add(vertx.setPeriodic(everyMillis, t -> pass.run()));
    leadership.whenGained(job, pass);
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    timers.forEach(vertx::cancelTimer);
    return Future.succeededFuture();
  }
}
