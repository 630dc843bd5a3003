package dev.ledgerpost.operate.quota;

import dev.ledgerpost.operate.quota.QuotaMessages.Usage;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageList;
import dev.ledgerpost.operate.quota.QuotaMessages.UsageQuery;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.tenants.Tenants;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.ext.web.Router;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sending quotas' node side (docs/design.md §8.9 "Quotas") on a context of its own: it refreshes this node's copy of
 * the counters ({@link QuotaGate}) every {@code tenants.refreshInterval}, answers {@code quota.usage} for the tenants
 * API, and deletes the counter rows of days past every hour. Every node prunes: the delete is idempotent and touches a
 * handful of rows, cheaper than a single-active job's bookkeeping.
 */
public final class QuotaVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(QuotaVerticle.class);
  private static final Duration PRUNE_INTERVAL = Duration.ofHours(1);

  private final Database db;
  private final QuotaGate gate;
  private final Duration refreshInterval;
  private QuotaStore store;
  private long refreshTimer = -1;
  private long pruneTimer = -1;
  private boolean refreshing;
  /** The last refresh failed: said once, not every interval, until one succeeds again. */
  private boolean failing;

  /**
   * The quotas as a part of the gateway: after the ledger (its counter rows) and the tenants file, before both intakes,
   * which take its {@link QuotaGate} from the assembly. Its first read is done before it is ready.
   */
  public static Part part() {
    AtomicReference<EventTokens> tokens = new AtomicReference<>();
    AtomicReference<ApiKeys> keys = new AtomicReference<>();
    AtomicReference<QuotaGate> gates = new AtomicReference<>();
    return Part.of("quota", a -> {
      QuotaGate gate = new QuotaGate(a.get(Tenants.class), a.clock(), a.metrics());
      a.provide(QuotaGate.class, gate);
      gates.set(gate);
      tokens.set(a.get(EventTokens.class));
      keys.set(a.get(ApiKeys.class));
      a.metrics().gauge("ledgerpost.quota.users", "Users with a quota counter row of today in this node's copy", gate::size);
      return a.deploy(new QuotaVerticle(a.get(Database.class), gate, a.config().tenants().refreshInterval()));
    }, api -> Optional.of(new HttpFace() {
      @Override
      public void open(Router router) { // the admin token, or a send API key for its own user: they authenticate themselves
        new QuotaApi(Bus.of(api.vertx()), gates.get()).mount(router, tokens.get(), keys.get(), api.contract());
      }
    }));
  }

  public QuotaVerticle(Database db, QuotaGate gate, Duration refreshInterval) {
    this.db = db;
    this.gate = gate;
    this.refreshInterval = refreshInterval;
  }

  @Override
  public Future<?> start() {
    store = new QuotaStore(db.pool());
    Bus.of(vertx).serve(QuotaMessages.USAGE, UsageQuery.class, q -> store.usage(q, gate.now()));
    refreshTimer = vertx.setPeriodic(refreshInterval.toMillis(), t -> refresh());
    pruneTimer = vertx.setPeriodic(PRUNE_INTERVAL.toMillis(), t -> prune());
    prune();
    return read();
  }

  private void refresh() {
    if (refreshing) {
      return; // a slow read is still running: the next interval reads again
    }
    refreshing = true;
    read().onComplete(ar -> refreshing = false);
  }

  /** One statement; a failed read keeps the copy it has (the open's count decides anyway) and says so once. */
  private Future<Void> read() {
    return store.today(gate.now()).map(rows -> {
      Map<String, Usage> byUser = new HashMap<>();
      for (Usage u : rows) {
        byUser.put(u.user(), u);
      }
      gate.replace(byUser);
      failing = false;
      return (Void) null;
    }).recover(e -> {
      if (!failing) {
        LOG.warn("reading the quota counters failed; this node keeps its copy (the open still counts exactly): {}", e.getMessage());
      }
      failing = true;
      return Future.succeededFuture();
    });
  }

  private void prune() {
    store.prune(gate.now()).onFailure(e -> LOG.warn("pruning old quota counters failed: {}", e.getMessage()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(refreshTimer);
    vertx.cancelTimer(pruneTimer);
    return Future.succeededFuture();
  }
}
