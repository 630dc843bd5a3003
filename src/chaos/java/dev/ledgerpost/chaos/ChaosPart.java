package dev.ledgerpost.chaos;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chaos mode (only with {@code chaos.enabled}): {@code POST /api/v1/chaos/locks} holds ledger table locks on demand, so
 * a load test can make lock contention (k6/lock-contention.js). A production gateway has neither the route nor the
 * address.
 */
public final class ChaosPart implements Part {
  private static final Logger LOG = LoggerFactory.getLogger(ChaosPart.class);

  @Override
  public String name() {
    return "chaos";
  }

  @Override
  public Future<Void> start(Assembly a) {
    LOG.warn("chaos mode is ON: POST /api/v1/chaos/locks holds ledger table locks on demand (test environments only)");
    return a.deploy(new ChaosVerticle(a.get(Database.class)));
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    Bus bus = Bus.of(api.vertx());
    return Optional.of(HttpFace.admin(router -> router.post("/api/v1/chaos/locks").handler(ctx -> lock(ctx, bus))));
  }

  private static void lock(RoutingContext ctx, Bus bus) {
    JsonObject body = Input.of(ctx).body();
    List<String> tables = new ArrayList<>();
    body.getJsonArray("tables").forEach(t -> tables.add((String) t));
    ChaosMessages.ChaosLock request = new ChaosMessages.ChaosLock(tables, body.getLong("millis"));
    bus.request(ChaosMessages.LOCK, request, ChaosMessages.ChaosLocked.class, Duration.ofSeconds(15))
        .onComplete(ar -> {
          if (ar.succeeded()) {
            Problem.json(ctx, 202, new JsonObject().put("tables", ar.result().tables()).put("millis", ar.result().millis()));
          } else if (ar.cause() instanceof StoreException le && le.kind() == StoreException.Kind.STALE) {
            Problem.send(ctx, 409, "Conflict", le.getMessage());
          } else if (ar.cause() instanceof StoreException le && le.kind() == StoreException.Kind.BAD_REQUEST) {
            Problem.send(ctx, 400, "Bad Request", le.getMessage());
          } else {
            Problem.send(ctx, 503, "Service Unavailable", "lock not obtained: " + ar.cause().getMessage());
          }
        });
  }
}
