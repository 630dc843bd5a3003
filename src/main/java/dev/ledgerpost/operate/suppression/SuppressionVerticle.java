package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Clock;
import io.vertx.ext.web.Router;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The suppression list (docs/design.md §8.8) on a context of its own: its statements ({@link SuppressionStore}) and the
 * refresh of this node's copy ({@link SuppressionRefresh}). The copy ({@link Suppressions}) is what the intakes read;
 * the refused recipients they hand it are written here ({@link RefusalWriter}) and feed the list ({@link RefusalFeed}).
 */
public final class SuppressionVerticle extends VerticleBase {
  private final Database db;
  private final GatewayConfig.Suppression config;
  private final Clock clock;
  private final Suppressions list;
  private final RefusalWriter refusals;
  private long timer = -1;

  /**
   * The suppression list as a part of the gateway: before both intakes, which take its copy ({@link Suppressions}) from
   * the assembly, and before retention, whose expiry job asks it to prune. Its first read is done before it is ready, so
   * no mail is taken while the copy is still empty.
   */
  public static Part part() {
    AtomicReference<EventTokens> tokens = new AtomicReference<>();
    AtomicReference<ApiKeys> keys = new AtomicReference<>();
    return Part.of("suppression", a -> {
      // The refusal log exists before the intakes take the list: what they hand it waits until this part has started.
      RefusalWriter refusals = new RefusalWriter(a.nodeId(), a.metrics());
      Suppressions list = new Suppressions(a.clock(), a.metrics(), refusals);
      a.provide(Suppressions.class, list);
      a.metrics().gauge("ledgerpost.suppression.entries", "Suppression list entries in this node's copy (expired ones not yet deleted included)",
          list::size);
      tokens.set(a.get(EventTokens.class));
      keys.set(a.get(ApiKeys.class));
      return a.deploy(new SuppressionVerticle(a.get(Database.class), a.config().suppression(), a.clock(), list, refusals));
    }, api -> Optional.of(new HttpFace() {
      @Override
      public void open(Router router) { // the admin token or a send API key (its own scope): they authenticate themselves
        new SuppressionApi(Bus.of(api.vertx())).mount(router, tokens.get(), keys.get(), api.contract());
      }
    }));
  }

  SuppressionVerticle(Database db, GatewayConfig.Suppression config, Clock clock, Suppressions list, RefusalWriter refusals) {
    this.db = db;
    this.config = config;
    this.clock = clock;
    this.list = list;
    this.refusals = refusals;
  }

  @Override
  public Future<?> start() {
    SuppressionRefresh refresh = new SuppressionRefresh(db.pool(), list);
    SuppressionStore store = new SuppressionStore(db, Bus.of(vertx), clock, config, refresh::now);
    new RefusalStore(db, Bus.of(vertx), clock, config.refusalRetention());
    refusals.start(context, db.pool(), new RefusalFeed(db.pool(), config, list, store));
    timer = vertx.setPeriodic(config.refreshInterval().toMillis(), t -> refresh.poll());
    return refresh.now().compose(v -> list.version() < 0
        ? Future.failedFuture("the suppression list could not be read at start") : Future.succeededFuture());
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }
}
