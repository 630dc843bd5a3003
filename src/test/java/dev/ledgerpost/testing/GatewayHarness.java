package dev.ledgerpost.testing;

import dev.ledgerpost.Gateway;
import dev.ledgerpost.config.ConfigLoader;
import dev.ledgerpost.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A gateway started in-process for a test, on port 0, against a fresh test database and a scripted
 * downstream. Blocking helpers are for the test thread only.
 */
public final class GatewayHarness implements AutoCloseable {
  private final Vertx vertx;
  private final Gateway gateway;
  private final String databaseUrl;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private GatewayHarness(Vertx vertx, Gateway gateway, String databaseUrl) {
    this.vertx = vertx;
    this.gateway = gateway;
    this.databaseUrl = databaseUrl;
  }

  /** Defaults for tests: loopback, port 0, a fresh database, the given downstream port, a fixed admin token. */
  public static Map<String, Object> defaults(int downstreamPort) {
    Map<String, Object> o = new HashMap<>();
    o.put("smtp.port", 0);
    o.put("http.port", 0);
    o.put("smtp.hostname", "gateway.test");
    o.put("downstream.host", "127.0.0.1");
    o.put("downstream.port", downstreamPort);
    o.put("downstream.starttls", "none");
    o.put("api.adminToken", "test-admin-token");
    o.put("ledger.url", TestDatabase.newDatabase());
    o.put("smtp.shutdownGrace", "10s");
    return o;
  }

  public static GatewayHarness start(Vertx vertx, Map<String, Object> overrides) throws Exception {
    GatewayConfig config = ConfigLoader.fromSources(Map.of(), Map.of(), overrides);
    Gateway g = await(Gateway.start(vertx, config));
    return new GatewayHarness(vertx, g, config.ledger().url());
  }

  public Gateway gateway() {
    return gateway;
  }

  public int smtpPort() {
    return gateway.smtpPort();
  }

  public int httpPort() {
    return gateway.httpPort();
  }

  public String databaseUrl() {
    return databaseUrl;
  }

  public Vertx vertx() {
    return vertx;
  }

  public HttpResponse<String> get(String path) throws Exception {
    return get(path, gateway.adminToken());
  }

  public HttpResponse<String> get(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort() + path))
        .timeout(Duration.ofSeconds(10));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  public static <T> T await(Future<T> f) throws Exception {
    try {
      return f.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof Exception cause) {
        throw cause;
      }
      throw e;
    }
  }

  @Override
  public void close() throws Exception {
    await(gateway.stop());
  }
}
