package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Rollup;
import dev.ledgerpost.operate.stats.StatsMessages.StatsQuery;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.Job;
import dev.ledgerpost.platform.cluster.JobSchedule;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.ext.web.Router;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Usage statistics (docs/design.md §8.12) on a context of their own: the query ({@link StatsQueries}) and the roll-up
 * job ({@link StatsRollup}), which one node of the cluster runs at a time ({@link Job#STATS_ROLLUP}).
 */
public final class StatsVerticle extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StatsVerticle.class);
  /** Hours close by the hour; five minutes keeps the live part of a query at most DELAY + 1 h + 5 min of rows. */
  static final Duration INTERVAL = Duration.ofMinutes(5);
  /** Hours rolled per pass at most (each its own short transaction): a first pass over a year's ledger takes a few. */
  static final int HOURS_PER_PASS = 1000;

  private final NodeServices node;
  private final Database db;
  private JobSchedule schedule;
  private boolean running;

  /** After the node (its leadership) and the ledger; its routes are open ones that authenticate themselves. */
  public static Part part() {
    AtomicReference<EventTokens> tokens = new AtomicReference<>();
    AtomicReference<ApiKeys> keys = new AtomicReference<>();
    AtomicReference<java.time.Clock> clock = new AtomicReference<>();
    return Part.of("stats", a -> {
      tokens.set(a.get(EventTokens.class));
      clock.set(a.clock());
      keys.set(a.get(ApiKeys.class));
      return a.deploy(new StatsVerticle(a.get(NodeServices.class), a.get(Database.class)));
    }, api -> Optional.of(new HttpFace() {
      @Override
      public void open(Router router) { // the admin token or a send API key (its own user): they authenticate themselves
        new StatsApi(Bus.of(api.vertx()), clock.get()).mount(router, tokens.get(), keys.get(), api.contract());
      }
    }));
  }

  public StatsVerticle(NodeServices node, Database db) {
    this.node = node;
    this.db = db;
  }

  @Override
  public Future<?> start() {
    StatsQueries queries = new StatsQueries(db.pool());
    StatsRollup rollup = new StatsRollup(db.pool());
    Bus bus = Bus.of(vertx);
    bus.serve(StatsMessages.QUERY, StatsQuery.class, queries::run);
    bus.serve(StatsMessages.ROLLUP, Rollup.class, rollup::pass);
    schedule = new JobSchedule(vertx, node.leadership());
    schedule.lead(Job.STATS_ROLLUP, INTERVAL, () -> {
      if (running) { // a long first pass is not started twice
        return;
      }
      running = true;
      rollup.pass(new Rollup(node.clock().instant(), HOURS_PER_PASS))
          .onSuccess(done -> LOG.debug("stats roll-up: {}", done))
          .onFailure(e -> LOG.warn("stats roll-up pass failed: {}; the next pass tries again", e.getMessage()))
          .onComplete(ar -> running = false);
    });
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    schedule.stop();
    return Future.succeededFuture();
  }
}
