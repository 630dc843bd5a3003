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
  // HTTP/1.1: the JDK client otherwise tries an h2c upgrade, and a large upgraded response (/metrics) was seen to hang.
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

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
    o.put("retry.journalDir", tempDir("journal-").toString());
    return o;
  }

  public static GatewayHarness start(Vertx vertx, Map<String, Object> overrides) throws Exception {
    return start(vertx, overrides, java.time.Clock.systemUTC());
  }

  /** With the clock the stale watch reads. */
  public static GatewayHarness start(Vertx vertx, Map<String, Object> overrides, java.time.Clock clock) throws Exception {
    GatewayConfig config = ConfigLoader.fromSources(Map.of(), Map.of(), overrides);
    Gateway g = await(Gateway.start(vertx, config, clock));
    return new GatewayHarness(vertx, g, config.ledger().url());
  }

  /** A fresh directory under target/, so every gateway of a test run has its own outcome journal. */
  public static java.nio.file.Path tempDir(String prefix) {
    return GatewayHarnessDirs.fresh(prefix);
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

  /** POST of a JSON body with the admin token and extra headers (name, value, name, value...). */
  public HttpResponse<String> post(String path, String json, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort() + path))
        .timeout(Duration.ofSeconds(10))
        .header("Authorization", "Bearer " + gateway.adminToken())
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
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
