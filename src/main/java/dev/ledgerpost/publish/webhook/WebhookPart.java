package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.util.Optional;

/** Webhooks (docs/design.md §6.6): every event POSTed, signed, to each configured endpoint, in order, with retries. */
public final class WebhookPart implements Part {
  private WebhookVerticle verticle;

  @Override
  public String name() {
    return "webhook";
  }

  @Override
  public Future<Void> start(Assembly a) {
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
    return Optional.of(HttpFace.admin(new WebhookApi(Bus.of(api.vertx()))::mount));
  }

  /** Claim passes per endpoint, for tests that move the clock. */
  public WebhookVerticle verticle() {
    return verticle;
  }
}
