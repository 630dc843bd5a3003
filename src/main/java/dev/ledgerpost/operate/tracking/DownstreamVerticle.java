package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.reconcile.Backoff;
import dev.ledgerpost.operate.reconcile.LedgerpostClient;
import dev.ledgerpost.operate.suppression.BounceFeed;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.Durations;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The downstream Ledgerpost follower (docs/design.md §8.13, "Downstream Ledgerpost"), run by the one node that leads
 * {@link Job#TRACKING_DOWNSTREAM}. Every {@code tracking.downstreamInterval} it takes the next {@link #BATCH} of our relayed
 * rows whose reply names a downstream ledger id and that still lack a final fact for an accepted recipient (a cursor,
 * oldest first, so none is starved), asks the downstream for each ({@code GET /api/v1/messages/{id}}, through
 * {@link LedgerpostClient}, the reconcile source's url and token), and records its facts as ours
 * ({@link DownstreamFacts}, {@link TrackingStore#recordMatched}: with their events and the suppression list's feed). A
 * row with news still to come is asked again after a pause that doubles up to an hour ({@link Backoff}); one older than
 * {@code tracking.downstreamHorizon} is not asked any more. A failure is logged once per kind until an answer comes,
 * counted, and tried again: a downstream nobody answers ends the pass where it is, and the next starts there.
 */
final class DownstreamVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(DownstreamVerticle.class);
  /** Rows asked about per pass at most. */
  static final int BATCH = 100;
  /**
   * Rows a whole pass from the horizon found nothing to ask about stay behind the floor, except the last hour's (a row
   * may become SENT late, by a retry) and except once an hour, when a pass starts from the horizon again: a long ledger's
   * finished rows are not scanned every pass.
   */
  static final Duration FLOOR_SLACK = Duration.ofHours(1);
  static final Duration FLOOR_RESET = Duration.ofHours(1);

  private final NodeServices node;
  private final Database db;
  private final Classifier classifier;
  private final BounceFeed bounces;
  private final GatewayConfig.Tracking config;
  private final Duration retention;
  private final List<GatewayConfig.ReconcileSource> sources;
  private final List<LedgerpostClient> clients = new ArrayList<>();
  private final Set<LedgerpostClient.Kind> failing = EnumSet.noneOf(LedgerpostClient.Kind.class);
  private final AtomicLong passes = new AtomicLong();
  private final AtomicLong answers = new AtomicLong();
  private Backoff backoff;
  private TrackingStore store;
  private DownstreamStore awaited;
  private JobSchedule schedule;
  private boolean running;
  /** The last row looked at by the pass before (null: the next starts at the floor). */
  private UUID cursor;
  /** Rows at or before it had nothing to ask about when last looked at (null: the horizon). */
  private UUID floor;
  private Instant floorSince;

  DownstreamVerticle(NodeServices node, Database db, Classifier classifier, BounceFeed bounces, Duration retention,
      List<GatewayConfig.ReconcileSource> sources) {
    this.node = node;
    this.db = db;
    this.classifier = classifier;
    this.bounces = bounces;
    this.config = node.config().tracking();
    this.retention = retention;
    this.sources = List.copyOf(sources);
  }

  @Override
  public Future<?> start() {
    store = new TrackingStore(db, bounces);
    awaited = new DownstreamStore(db);
    backoff = new Backoff(config.downstreamInterval());
    sources.forEach(s -> clients.add(new LedgerpostClient(vertx, s)));
    schedule = new JobSchedule(vertx, node.leadership());
    node.leadership().whenGained(Job.TRACKING_DOWNSTREAM, () -> {
      cursor = null; // a node taking the job over starts from the horizon: what another node did is in the facts
      floor = null;
    });
    schedule.lead(Job.TRACKING_DOWNSTREAM, config.downstreamInterval(), this::pass);
    LOG.info("tracking: downstream Ledgerpost {} asked every {} by the node that leads {}, rows back {}",
        clients.stream().map(c -> c.name() + " " + c.url()).toList(), Durations.format(config.downstreamInterval()),
        Job.TRACKING_DOWNSTREAM.label(), Durations.format(config.downstreamHorizon()));
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    return Future.join(clients.stream().map(LedgerpostClient::close).toList());
  }

  /** Passes completed on this node (whether or not it led), for tests. */
  long passes() {
    return passes.get();
  }

  /** Details the downstream answered on this node, for tests. */
  long answers() {
    return answers.get();
  }

  /** One pass; never overlaps itself, and does nothing on a node that does not lead the job. */
  Future<Void> pass() {
    if (running || schedule.stopped() || !node.leadership().leads(Job.TRACKING_DOWNSTREAM)) {
      return Future.succeededFuture();
    }
    running = true;
    Instant now = node.clock().instant();
    Duration back = config.downstreamHorizon().compareTo(retention) < 0 ? config.downstreamHorizon() : retention;
    UUID horizon = LedgerIds.lowest(now.minus(back));
    if (floorSince != null && Duration.between(floorSince, now).compareTo(FLOOR_RESET) >= 0) {
      floor = null;
    }
    UUID start = floor != null && floor.compareTo(horizon) > 0 ? floor : horizon;
    UUID after = cursor != null && cursor.compareTo(start) > 0 ? cursor : start;
    boolean fromStart = after.equals(start);
    return awaited.awaiting(after, BATCH)
        .compose(rows -> {
          if (fromStart && cursor == null) {
            // Everything between the start and the first row found (or now) had nothing to ask about.
            Instant upTo = rows.isEmpty() ? now : LedgerIds.instant(rows.get(0).id());
            Instant slack = now.minus(FLOOR_SLACK);
            UUID next = LedgerIds.lowest(upTo.isBefore(slack) ? upTo : slack);
            if (floor == null) {
              floorSince = now;
            }
            floor = next.compareTo(start) > 0 ? next : start;
          }
          return ask(rows, now);
        })
        .otherwise(e -> {
          LOG.warn("tracking: downstream pass failed: {}; the next one in {} tries again", e.getMessage(),
              Durations.format(config.downstreamInterval()));
          return null;
        })
        .onComplete(ar -> {
          running = false;
          passes.incrementAndGet();
        });
  }

  /** Asks about each row due, in order; records what came; moves the cursor past what was asked. */
  private Future<Void> ask(List<DownstreamStore.Awaiting> rows, Instant now) {
    List<Object[]> columns = new ArrayList<>();
    List<UUID> done = new ArrayList<>();
    List<UUID> waiting = new ArrayList<>();
    UUID[] last = {null};
    boolean[] stop = {false};
    Future<Void> chain = Future.succeededFuture();
    for (DownstreamStore.Awaiting row : rows) {
      chain = chain.compose(v -> {
        if (stop[0] || schedule.stopped() || !node.leadership().leads(Job.TRACKING_DOWNSTREAM)) {
          stop[0] = true;
          return Future.succeededFuture();
        }
        if (!backoff.due(row.id(), now)) {
          last[0] = row.id();
          return Future.succeededFuture();
        }
        return detail(row.downstreamId(), 0).map(found -> {
          answered();
          answers.incrementAndGet();
          DownstreamFacts.Read read = DownstreamFacts.of(row, found.detail(), found.client().url(), classifier);
          columns.addAll(read.columns());
          (read.done() ? done : waiting).add(row.id());
          last[0] = row.id();
          return (Void) null;
        }).recover(e -> {
          LedgerpostClient.Kind kind = e instanceof LedgerpostClient.Failure f ? f.kind()
              : e instanceof DownstreamFacts.Malformed || e instanceof ClassCastException ? LedgerpostClient.Kind.MALFORMED
              : LedgerpostClient.Kind.STATUS;
          failed(kind, row, e);
          if (kind == LedgerpostClient.Kind.UNREACHABLE) {
            stop[0] = true; // the rest would wait for the same silence: the next pass starts at this row
          } else {
            waiting.add(row.id());
            last[0] = row.id();
          }
          return Future.succeededFuture();
        });
      });
    }
    return chain.compose(v -> {
      cursor = stop[0] ? last[0] : rows.size() < BATCH ? null : last[0];
      if (columns.isEmpty() || !node.leadership().leads(Job.TRACKING_DOWNSTREAM)) {
        waiting.forEach(id -> backoff.later(id, now));
        return Future.succeededFuture();
      }
      return store.recordMatched(columns).map(r -> {
        for (String[] fact : r.facts()) {
          node.metrics().trackingFact(fact[0], fact[1]);
        }
        BounceFeed.audit(r.suppressed());
        if (!r.facts().isEmpty()) {
          db.outboxWritten(); // their events: publish them now rather than at the next poll
          LOG.debug("tracking: {} fact(s) from the downstream Ledgerpost", r.facts().size());
        }
        done.forEach(backoff::found);
        waiting.forEach(id -> backoff.later(id, now));
        return null;
      });
    });
  }

  private record Found(LedgerpostClient client, JsonObject detail) {}

  /**
   * The downstream's detail of {@code id}: asked of each configured downstream in turn until one has it (a 404 from one
   * is another's row); the last failure when none has.
   */
  private Future<Found> detail(String id, int i) {
    LedgerpostClient client = clients.get(i);
    return client.get("/api/v1/messages/" + LedgerpostClient.enc(id)).map(d -> new Found(client, d))
        .recover(e -> i + 1 < clients.size() && e instanceof LedgerpostClient.Failure f && f.kind() == LedgerpostClient.Kind.NOT_FOUND
            ? detail(id, i + 1) : Future.failedFuture(e));
  }

  private void failed(LedgerpostClient.Kind kind, DownstreamStore.Awaiting row, Throwable e) {
    node.metrics().trackingDownstreamError(kind.label());
    if (failing.add(kind)) {
      LOG.warn("tracking: the downstream Ledgerpost gave no facts for {} (its {}): {} ({}); tried again at later passes,"
          + " logged again once it answers", row.id(), row.downstreamId(), e.getMessage(), kind.label());
    } else {
      LOG.debug("tracking: still no facts from the downstream Ledgerpost for {}: {}", row.id(), e.getMessage());
    }
  }

  /**
   * An answer ends an outage (nobody answering, the token refused, another status): the next one is logged again. A row
   * it does not know or an answer it could not read is about that row: logged the first time only.
   */
  private void answered() {
    Set<LedgerpostClient.Kind> over = EnumSet.of(LedgerpostClient.Kind.UNREACHABLE, LedgerpostClient.Kind.UNAUTHORIZED,
        LedgerpostClient.Kind.STATUS);
    over.retainAll(failing);
    if (!over.isEmpty()) {
      LOG.info("tracking: the downstream Ledgerpost answers again (after {})", over.stream().map(LedgerpostClient.Kind::label).toList());
      failing.removeAll(over);
    }
  }
}
