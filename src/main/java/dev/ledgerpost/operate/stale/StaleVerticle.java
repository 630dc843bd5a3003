package dev.ledgerpost.operate.stale;

import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.relay.retry.RetryMessages;
import dev.ledgerpost.relay.retry.RetryMessages.HeldOutcomes;
import dev.ledgerpost.relay.retry.RetryMessages.HeldQuery;
import dev.ledgerpost.operate.stale.StaleMessages.Attention;
import dev.ledgerpost.operate.stale.StaleMessages.AttentionQuery;
import dev.ledgerpost.operate.stale.StaleMessages.OpenCounts;
import dev.ledgerpost.operate.stale.StaleMessages.OpenCountsQuery;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRows;
import dev.ledgerpost.operate.stale.StaleMessages.OpenRowsQuery;
import dev.ledgerpost.operate.stale.StaleMessages.RaiseStale;
import dev.ledgerpost.operate.stale.StaleMessages.StaleList;
import dev.ledgerpost.operate.stale.StaleMessages.StaleQuery;
import dev.ledgerpost.operate.stale.StaleMessages.StaleRaised;
import dev.ledgerpost.operate.stale.StaleMessages.StaleReport;
import dev.ledgerpost.operate.stale.StaleMessages.StaleRow;
import dev.ledgerpost.operate.stale.StaleMessages.StaleListQuery;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * docs/contract.md §3.3 invariant 5: a PENDING row that nobody is settling does not age silently. At start and
 * every {@code stale.scanInterval} this finds PENDING rows older than {@code stale.threshold} that the
 * retry part of no live node holds, and raises each once per threshold period: a CRITICAL audit line and a
 * {@code message.stale} outbox event. It never changes a row's outcome: that is an operator's call.
 *
 * <p>Every node counts (its gauges are its own /metrics); one node of a cluster raises ({@link Job#STALE_WATCH},
 * docs/design.md §9.2), and the raise's own WHERE keeps "once per period" even if two ever overlapped.
 */
public final class StaleVerticle extends VerticleBase implements StaleGauges {
  private static final Logger LOG = LoggerFactory.getLogger(StaleVerticle.class);
  /** Rows raised per scan at most; the rest follow on the next scans (the counts always cover all). */
  static final int RAISES_PER_SCAN = 500;
  private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(30);
  /** The gauges' counts are at most this old while someone reads them (a scrape sees a new PENDING row). */
  static final Duration COUNTS_INTERVAL = Duration.ofSeconds(1);
  /** Counting stops when nobody has read a gauge for this long: an idle gateway does not query for nobody. */
  private static final long READERS_GONE_NANOS = Duration.ofMinutes(5).toNanos();

  private final NodeServices node;
  /** Where its SQL ({@link StaleRows}) runs, on this verticle's context. */
  private final Database db;
  private final GatewayConfig.Stale config;
  private final PendingHistory history;
  private final AtomicLong scans = new AtomicLong();
  private volatile long pending;
  private volatile long stale;
  private volatile OffsetDateTime oldest;
  private volatile long unknown;
  /** When a gauge was last read (System.nanoTime), from whatever thread scrapes. */
  private volatile long lastRead = System.nanoTime();
  /** Start time of the query whose counts are shown: an older answer arriving late does not replace a newer one. */
  private long countsAsOf = Long.MIN_VALUE;
  private Bus bus;
  private JobSchedule schedule;
  private boolean scanning;
  /** The counts query in flight, which a second caller joins; null when none is. */
  private Future<Void> counting;

  /**
   * Reads {@code stale.*}, and {@code node.deadAfter} for the outcomes other nodes hold; {@code history} receives a
   * sample of the gauges every {@link PendingHistory#INTERVAL} (the console's chart).
   */
  public StaleVerticle(NodeServices node, Database db, PendingHistory history) {
    this.node = node;
    this.db = db;
    this.config = node.config().stale();
    this.history = history;
  }

  @Override
  public Future<?> start() {
    bus = Bus.of(vertx);
    new StaleRows(db, bus);
    bus.serve(StaleMessages.LIST, StaleListQuery.class, this::list);
    bus.serve(StaleMessages.ATTENTION, AttentionQuery.class, this::attention);
    schedule = new JobSchedule(vertx, node.leadership());
    schedule.every(config.scanInterval(), this::scan); // every node scans (its gauges); only the leader raises
    schedule.every(COUNTS_INTERVAL, () -> {
      if (System.nanoTime() - lastRead < READERS_GONE_NANOS) {
        count();
      }
    });
    // The chart's samples are taken whether or not anybody reads the gauges: one cheap indexed query per interval.
    schedule.every(PendingHistory.INTERVAL, () -> count().onComplete(ar -> sample()));
    Future<Void> first = scan().onComplete(ar -> count().onComplete(x -> sample())); // the scan does not count UNKNOWN rows
    node.leadership().whenGained(Job.STALE_WATCH, this::scan); // a node that takes the job over scans at once
    return first;
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    return Future.succeededFuture();
  }

  /** The gauges as they are now, without counting as a reader (a sample must not keep the counts query alive). */
  private void sample() {
    OffsetDateTime o = oldest;
    OffsetDateTime now = now();
    history.add(new PendingHistory.Sample(now.toInstant(), pending, o == null ? 0 : Math.max(0, Duration.between(o, now).toSeconds()),
        stale, unknown));
  }

  /**
   * The pending and unknown counts, from the indexed open-rows query. Never overlaps itself; a failure keeps
   * the last values (a gauge that reads 0 because the ledger did not answer would be a lie).
   */
  private Future<Void> count() {
    if (counting != null) {
      return counting;
    }
    long started = System.nanoTime();
    counting = bus.request(StaleMessages.OPEN_COUNTS, new OpenCountsQuery(), OpenCounts.class, QUERY_TIMEOUT)
        .onSuccess(c -> {
          unknown = c.unknown();
          counted(started, c.pending(), c.oldestPendingAt());
        })
        .onFailure(e -> LOG.debug("open counts not refreshed: {}", e.getMessage()))
        .<Void>mapEmpty()
        .onComplete(ar -> counting = null);
    return counting;
  }

  /** Applies pending counts read by a query that started at {@code started}, unless newer ones are shown already. */
  private void counted(long started, long pendingNow, OffsetDateTime oldestNow) {
    if (started - countsAsOf > 0 || countsAsOf == Long.MIN_VALUE) {
      countsAsOf = started;
      pending = pendingNow;
      oldest = oldestNow;
    }
  }

  /** One scan; a failed scan is logged and the next one tries again. Never overlaps itself. */
  Future<Void> scan() {
    if (scanning) {
      return Future.succeededFuture();
    }
    scanning = true;
    OffsetDateTime now = now();
    OffsetDateTime cutoff = now.minus(config.threshold());
    long started = System.nanoTime();
    boolean raising = node.leadership().leads(Job.STALE_WATCH);
    return held()
        .compose(ids -> bus.request(StaleMessages.STALE, new StaleQuery(cutoff, cutoff, ids, nodeDeadAfter(),
            raising ? RAISES_PER_SCAN : 0), StaleReport.class, QUERY_TIMEOUT))
        .compose(report -> {
          counted(started, report.pending(), report.oldestPendingAt());
          stale = report.stale();
          Future<Void> raises = Future.succeededFuture();
          for (StaleRow row : report.rows()) {
            // Leadership is asked again per row: a node fenced mid-scan stops raising at once.
            raises = raises.compose(v -> node.leadership().leads(Job.STALE_WATCH) ? raise(row, now) : Future.succeededFuture());
          }
          return raises;
        })
        .otherwise(e -> {
          LOG.warn("stale scan failed: {}; the next scan in {} tries again", e.getMessage(), config.scanInterval());
          return null;
        })
        .onComplete(ar -> {
          scanning = false;
          scans.incrementAndGet();
        });
  }

  private Future<Void> raise(StaleRow row, OffsetDateTime now) {
    return bus.request(StaleMessages.RAISE_STALE, new RaiseStale(row.id(), now, config.threshold()), StaleRaised.class,
        QUERY_TIMEOUT).map(r -> {
          if (r.raised()) {
            AuditLog.of(AuditEvent.STALE_PENDING).with("message_id", r.id()).with("msg_id", r.messageIdHeader())
                .with("age_seconds", Math.max(0, Duration.between(r.receivedAt(), now).toSeconds()))
                .with("raise", r.raise()).with("threshold_seconds", config.threshold().toSeconds())
                .with("clients_waiting", r.clientsWaiting()).log();
          }
          return null;
        });
  }

  /**
   * What the retry part holds is not stale: it knows the outcome and is getting it into the ledger; nor is a row this
   * node is still delivering (its reply may take downstream.replyTimeout + dataTimeout). Other nodes say the same of
   * theirs in their heartbeats (nodes.held, nodes.delivering).
   */
  private Future<Set<UUID>> held() {
    return bus.request(RetryMessages.HELD, new HeldQuery(), HeldOutcomes.class, QUERY_TIMEOUT)
        .map(HeldOutcomes::all)
        .otherwise(e -> {
          // Better a false alarm about a held row than silence about a stale one.
          LOG.warn("retry part did not say which outcomes it holds ({}); scanning as if it held none", e.getMessage());
          return Set.of();
        });
  }

  private Future<StaleList> list(StaleListQuery q) {
    OffsetDateTime now = now();
    OffsetDateTime cutoff = now.minus(config.threshold());
    return held()
        .compose(ids -> bus.request(StaleMessages.STALE, new StaleQuery(cutoff, null, ids, nodeDeadAfter(), q.limit()), StaleReport.class,
            QUERY_TIMEOUT))
        .map(r -> new StaleList(config.threshold(), now, r.pending(), r.stale(), r.rows()));
  }

  /** What waits for an operator: the stale rows as {@link #list} finds them, and the UNKNOWN ones. */
  private Future<Attention> attention(AttentionQuery q) {
    OffsetDateTime now = now();
    OffsetDateTime cutoff = now.minus(config.threshold());
    boolean pendingToo = q.status() == null || q.status() == MessageStatus.PENDING;
    boolean unknownToo = q.status() == null || q.status() == MessageStatus.UNKNOWN;
    return (pendingToo ? held() : Future.succeededFuture(Set.<UUID>of()))
        .compose(ids -> bus.request(StaleMessages.OPEN_ROWS, new OpenRowsQuery(pendingToo, unknownToo, q.sender(), q.since(),
            q.until(), cutoff, ids, nodeDeadAfter(), q.limit()), OpenRows.class, QUERY_TIMEOUT))
        .map(r -> new Attention(config.threshold(), now, r.matching(), r.rows()));
  }

  /** Past this, another node's heartbeat no longer protects the outcomes it holds. */
  private Duration nodeDeadAfter() {
    return node.config().node().deadAfter();
  }

  private OffsetDateTime now() {
    return OffsetDateTime.ofInstant(node.clock().instant(), ZoneOffset.UTC);
  }

  @Override
  public long pendingMessages() {
    return read(pending);
  }

  @Override
  public long stalePendingMessages() {
    return stale;
  }

  @Override
  public long oldestPendingAgeSeconds() {
    OffsetDateTime o = oldest;
    return read(o == null ? 0 : Math.max(0, Duration.between(o, now()).toSeconds()));
  }

  @Override
  public long scans() {
    return scans.get();
  }

  @Override
  public long unknownMessages() {
    return read(unknown);
  }

  /** A gauge's value, noting that the gauges are being read (the counts are refreshed while they are). */
  private long read(long value) {
    lastRead = System.nanoTime();
    return value;
  }

}
