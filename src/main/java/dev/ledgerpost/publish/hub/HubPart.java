package dev.ledgerpost.publish.hub;

import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.web.Bearer;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Problem;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.Optional;

/**
 * The WebSocket hub (docs/design.md §6.4) on every node: the published events, from the ledger's outbox, to every
 * subscriber that may see them. Provides the {@link NotifyHub}.
 */
public final class HubPart implements Part {
  private NotifyHub hub;
  private EventTokens tokens;

  @Override
  public String name() {
    return "hub";
  }

  @Override
  public Future<Void> start(Assembly a) {
    tokens = a.get(EventTokens.class);
    hub = new NotifyHub(a.vertx(), tokens, a.config().notifications().sendQueueBytes());
    a.provide(NotifyHub.class, hub);
    return a.deploy(new NotifyVerticle(hub, a.config().notifications().pollInterval()));
  }

  @Override
  public void gauges(GatewayMetrics metrics) {
    metrics.gauge("ledgerpost.notify.clients", "Connected WebSocket subscribers", hub::clients);
  }

  /** {@code /api/v1/events}: authenticates itself, since browsers cannot send headers on a WebSocket upgrade. */
  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.of(new HttpFace() {
      @Override
      public void open(Router router) {
        router.get("/api/v1/events").handler(ctx -> events(ctx, api.contract()));
      }
    });
  }

  /**
   * The hub's WebSocket upgrade: a token in a header is checked first (401 before any upgrade; a browser sends
   * its token in the first frame instead), then the parameters against the contract, then the hub takes the socket.
   */
  private void events(RoutingContext ctx, ContractValidation contract) {
    EventTokens.Principal principal = null;
    if (Bearer.present(ctx.request())) {
      String token = Bearer.token(ctx.request());
      principal = tokens.authenticate(token == null ? "" : token).orElse(null);
      if (principal == null) {
        Problem.unauthorized(ctx, "ledgerpost", null);
        return;
      }
    }
    EventTokens.Principal known = principal;
    // The request must not end while the contract is checked on a worker: the upgrade (which resumes it) waits for its end.
    ctx.request().pause();
    contract.validate(ctx, "subscribeEvents").onComplete(ar -> {
      if (ar.failed()) {
        contract.badRequest(ctx, ar.cause());
        return;
      }
      hub.upgrade(ctx.request(), known, ar.result().number("since"), ar.result().string("client"));
    });
  }

  /** Connected WebSocket subscribers. */
  public int clients() {
    return hub.clients();
  }
}
