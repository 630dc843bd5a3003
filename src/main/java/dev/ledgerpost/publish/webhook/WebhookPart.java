package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import java.util.Optional;

/**
 * Webhooks (docs/design.md §6.6): every event POSTed, signed, to each endpoint (configured, or made through the API by
 * a user's send key), with retries.
 */
public final class WebhookPart implements Part {
  private WebhookVerticle verticle;
  private EventTokens tokens;
  private ApiKeys keys;

  @Override
  public String name() {
    return "webhook";
  }

  @Override
  public Future<Void> start(Assembly a) {
    tokens = a.get(EventTokens.class);
    keys = a.get(ApiKeys.class);
    // Made on a worker: the endpoints' secret files are read in the constructor.
    return a.vertx().executeBlocking(() -> new WebhookVerticle(a.get(NodeServices.class), a.get(DatabaseTarget.class),
        a.get(Database.class).pool()))
        .compose(w -> {
          verticle = w;
          w.reloadable().forEach(a::reloadOnHangup);
          return a.deploy(w);
        });
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    WebhookApi routes = new WebhookApi(Bus.of(api.vertx()), tokens, keys, api.contract());
    return Optional.of(new HttpFace() {
      @Override
      public void open(Router router) {
        routes.mountOpen(router); // the admin token or a send key, each call scoped to its caller
      }

      @Override
      public void admin(Router router) {
        routes.mount(router);
      }
    });
  }

  /** Claim passes per endpoint, for tests that move the clock. */
  public WebhookVerticle verticle() {
    return verticle;
  }
}
