package dev.ledgerpost.operate.retention;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.platform.part.Part;
import java.util.Optional;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.relay.capture.CaptureMessages;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.publish.webhook.WebhookMessages;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;

/**
 * The ledger's retention jobs, each run by one node of the cluster at a time (docs/design.md §9.2): published
 * outbox events past {@code notify.retention}, idempotency keys past {@code api.idempotencyRetention}, webhook deliveries
 * that ended longer than {@code webhooks.retention} ago, captured messages' bytes past {@code capture.retention}, and the ledger's
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

  private final NodeServices node;
  private final DatabaseTarget target;
  /** Null when no ledger.archiveDir is set. */
  private final PartitionArchiver archiver;
  private JobSchedule schedule;

  /**
   * Retention as a part of the gateway: after every part whose rows it prunes serves its addresses, since a job taken
   * at once runs its first pass at once.
   */
  public static Part part() {
    return Part.of("retention", a -> a.deploy(new RetentionVerticle(a.get(NodeServices.class), a.get(DatabaseTarget.class),
        a.find(PartitionArchiver.class).orElse(null))), api -> Optional.empty());
  }

  public RetentionVerticle(NodeServices node, DatabaseTarget target, PartitionArchiver archiver) {
    this.node = node;
    this.target = target;
    this.archiver = archiver;
  }

  @Override
  public Future<?> start() {
    Bus bus = Bus.of(vertx);
    GatewayConfig config = node.config();
    GatewayConfig.Notify notify = config.notifications();
    BoundedPrune outbox = new BoundedPrune("outbox", BATCH, MAX_BATCHES, n -> bus
        .request(OutboxMessages.PRUNE, new OutboxMessages.Prune(notify.retention(), n), OutboxMessages.Pruned.class)
        .map(OutboxMessages.Pruned::deleted));
    Duration retention = config.api().idempotencyRetention();
    BoundedPrune keys = new BoundedPrune("idempotency key", BATCH, MAX_BATCHES, n -> bus
        .request(IdempotencyMessages.PRUNE, new IdempotencyMessages.Prune(retention, n), IdempotencyMessages.Pruned.class)
        .map(IdempotencyMessages.Pruned::deleted));
    Duration webhookRetention = config.webhooks().retention();
    BoundedPrune deliveries = new BoundedPrune("webhook delivery", BATCH, MAX_BATCHES, n -> bus
        .request(WebhookMessages.PRUNE, new WebhookMessages.Prune(webhookRetention, n), WebhookMessages.Pruned.class)
        .map(WebhookMessages.Pruned::deleted));
    Duration window = config.smtp().resubmission().window();
    BoundedPrune claims = new BoundedPrune("resubmission claim", BATCH, MAX_BATCHES, n -> bus
        .request(LedgerMessages.PRUNE_CLAIMS, new LedgerMessages.PruneClaims(n, window), LedgerMessages.PrunedClaims.class)
        .map(LedgerMessages.PrunedClaims::deleted));
    BoundedPrune suppressions = new BoundedPrune("suppression entry", BATCH, MAX_BATCHES, n -> bus
        .request(SuppressionMessages.PRUNE, new SuppressionMessages.Prune(n), SuppressionMessages.Pruned.class)
        .map(SuppressionMessages.Pruned::deleted));
    BoundedPrune captures = new BoundedPrune("captured message", BATCH, MAX_BATCHES, n -> bus
        .request(CaptureMessages.PRUNE, new CaptureMessages.Prune(n), CaptureMessages.Pruned.class)
        .map(CaptureMessages.Pruned::deleted));
    schedule = new JobSchedule(vertx, node.leadership());
    schedule.lead(Job.OUTBOX_RETENTION, every(notify.retention(), notify.pruneInterval()), outbox::run);
    schedule.lead(Job.IDEMPOTENCY_RETENTION, IDEMPOTENCY_INTERVAL, keys::run);
    schedule.lead(Job.WEBHOOK_RETENTION, every(webhookRetention, notify.pruneInterval()), deliveries::run);
    schedule.lead(Job.RESUBMISSION_RETENTION, every(window, notify.pruneInterval()), claims::run);
    schedule.lead(Job.SUPPRESSION_EXPIRY, every(config.suppression().ttl(), notify.pruneInterval()), suppressions::run);
    schedule.lead(Job.CAPTURE_EXPIRY, every(config.capture().retention(), notify.pruneInterval()), captures::run);
    LedgerRetention partitions = new LedgerRetention(vertx, target, new LedgerRetention.Policy(config.ledger().retention(),
        archiver, config.ledger().retentionWithoutArchive()));
    boolean[] running = {false};
    schedule.lead(Job.LEDGER_PARTITIONS, PARTITION_INTERVAL, () -> {
      if (running[0]) {
        return;
      }
      running[0] = true;
      partitions.run(node.clock().instant())
          .onFailure(e -> LOG.warn("ledger partition pass failed: {}; the next pass tries again", e.getMessage()))
          .onComplete(ar -> running[0] = false);
    });
    return Future.succeededFuture();
  }

  /** Every {@code pruneInterval}, but at least once per {@code retention} and at most once a second. */
  static Duration every(Duration retention, Duration pruneInterval) {
    return Duration.ofMillis(Math.max(1000, Math.min(retention.toMillis(), pruneInterval.toMillis())));
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    return Future.succeededFuture();
  }
}
