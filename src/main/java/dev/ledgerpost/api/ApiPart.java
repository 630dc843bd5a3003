package dev.ledgerpost.api;

import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;

/**
 * The HTTP API's listeners ({@code http.instances}, one shared socket): health, metrics, the console, and the routes of
 * every part. After the parts whose routes it mounts, before SMTP.
 */
public final class ApiPart implements Part {
  private int port;

  @Override
  public String name() {
    return "api";
  }

  @Override
  public Future<Void> start(Assembly a) {
    ApiVerticle.Shared shared = new ApiVerticle.Shared(a.config(), a.get(EventTokens.class),
        a.get(PrometheusMeterRegistry.class)::scrape, a.parts());
    return a.listen("http", a.config().http().host(), a.config().http().effectiveInstances(), a.config().http().port(), p -> new ApiVerticle(p, shared),
        ApiVerticle::actualPort).map(p -> {
          port = p;
          return null;
        });
  }

  /** The port the listeners share. */
  public int port() {
    return port;
  }
}
