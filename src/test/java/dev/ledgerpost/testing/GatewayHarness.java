package dev.ledgerpost.testing;

import dev.ledgerpost.Gateway;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A gateway started in-process for a test, on port 0, against a fresh test database and a scripted
 * downstream. Blocking helpers are for the test thread only.
 *
 * <p>Most tests register one as a JUnit extension, which makes the whole set-up: a Vert.x, a scripted smarthost
 * ({@link ScriptedSmtpServer}) and the gateway in front of it, started before and stopped after. On a static
 * field it serves the whole class (nested classes too); on an instance field, every test gets its own:
 *
 * <pre>
 * &#64;RegisterExtension
 * static final GatewayHarness gateway = GatewayHarness.extension().with("smtp.maxConnections", 3);
 * </pre>
 *
 * A script or a step that needs the running parts gets the harness itself ({@code g -> g.vertx()...}). With
 * {@link #manual} the extension makes the Vert.x and the smarthost only, and each test starts its gateway with a
 * configuration of its own ({@link #begin}); a test that runs several gateways or restarts them calls {@link #start}.
 */
public final class GatewayHarness implements AutoCloseable, BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
    AfterEachCallback {
  /** What a set-up step may throw. */
  public interface Step {
    void run(GatewayHarness gateway) throws Exception;
  }

  /** A configuration step: may start something on the harness's Vert.x and name it in the configuration. */
  public interface Configuring {
    void configure(GatewayHarness gateway, Map<String, Object> config) throws Exception;
  }

  // HTTP/1.1: the JDK client otherwise tries an h2c upgrade, and a large upgraded response (/metrics) was seen to hang.
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private Vertx vertx;
  private Gateway gateway;
  private String databaseUrl;

  // As an extension: what to start, and what it started.
  private final Map<String, Object> overrides = new LinkedHashMap<>();
  private final List<Configuring> configure = new ArrayList<>();
  private Function<GatewayHarness, ScriptedSmtpServer.Script> script = g -> new ScriptedSmtpServer.Script() {};
  private Clock clock = Clock.systemUTC();
  private Step afterStart = g -> { };
  /** Class levels entered (nested classes inherit a static extension): the outermost starts and stops. */
  private int classLevels;
  /** The test starts the gateway itself ({@link #begin}); the extension makes the Vert.x and the smarthost. */
  private boolean manual;
  private ScriptedSmtpServer downstream;
  private SendClient sendClient;
  /** The smarthost of {@link #locking}, whose lock is released before the gateway stops. */
  private LockingSmarthost locking;
  /** What the test started around the gateway (proxies, receivers), closed after it, last first. */
  private final List<AutoCloseable> closeAfter = new ArrayList<>();

  private GatewayHarness() {}

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
    return start(vertx, overrides, Clock.systemUTC());
  }

  /** With the clock the stale watch reads. */
  public static GatewayHarness start(Vertx vertx, Map<String, Object> overrides, Clock clock) throws Exception {
    GatewayHarness h = new GatewayHarness();
    h.startGateway(vertx, overrides, clock);
    return h;
  }

  private void startGateway(Vertx on, Map<String, Object> config, Clock time) throws Exception {
    GatewayConfig parsed = ConfigLoader.fromSources(Map.of(), Map.of(), config);
    gateway = await(Gateway.start(on, parsed, time));
    vertx = on;
    databaseUrl = parsed.ledger().url();
  }

  /** A fresh directory under target/, so every gateway of a test run has its own outcome journal. */
  public static java.nio.file.Path tempDir(String prefix) {
    return GatewayHarnessDirs.fresh(prefix);
  }

  /** A harness to register as an extension ({@code @RegisterExtension}); it starts everything itself. */
  public static GatewayHarness extension() {
    return new GatewayHarness();
  }

  /** One configuration key over {@link #defaults}. */
  public GatewayHarness with(String key, Object value) {
    overrides.put(key, value);
    return this;
  }

  /** Configuration computed at start (files, databases); runs after {@link #with}'s keys are in. */
  public GatewayHarness configure(Configuring step) {
    configure.add(step);
    return this;
  }

  /** The smarthost's script; it may call back into the harness (its Vert.x, the database) when it runs. */
  public GatewayHarness script(Function<GatewayHarness, ScriptedSmtpServer.Script> smarthost) {
    this.script = smarthost;
    return this;
  }

  /** The clock the stale watch and the smarthosts' back-off read. */
  public GatewayHarness clock(Clock time) {
    this.clock = time;
    return this;
  }

  /**
   * A smarthost that locks ledger tables when told to ({@link LockingSmarthost}), reading {@code databaseUrl} when a
   * body arrives; its lock is released when the extension stops, before the gateway does (the settle it blocks would
   * otherwise hold the gateway's stop). For an extension made per test.
   */
  public LockingSmarthost locking(java.util.function.Supplier<String> databaseUrl) {
    locking = new LockingSmarthost(this::vertx, databaseUrl);
    script = g -> locking;
    return locking;
  }

  /** No gateway at start: each test calls {@link #begin} (the extension still stops it). */
  public GatewayHarness manual() {
    this.manual = true;
    return this;
  }

  /** Runs once the gateway is up, before the tests (seeding messages, a first request). */
  public GatewayHarness afterStart(Step step) {
    this.afterStart = step;
    return this;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (classLevels++ == 0) {
      startAll();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (--classLevels == 0) {
      stopAll();
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    if (classLevels == 0) {
      startAll();
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (classLevels == 0) {
      stopAll();
    }
  }

  private void startAll() throws Exception {
    Vertx own = Vertx.vertx();
    try {
      vertx = own;
      downstream = await(ScriptedSmtpServer.start(own, script.apply(this)));
      if (!manual) {
        Map<String, Object> config = defaults(downstream.port());
        config.putAll(overrides);
        for (Configuring c : configure) {
          c.configure(this, config);
        }
        begin(config, clock);
      }
      afterStart.run(this);
    } catch (Exception | Error e) {
      stopAll();
      throw e;
    }
  }

  /** Another scripted smarthost on this harness's Vert.x, from now on its {@link #downstream}. */
  public ScriptedSmtpServer smarthost(ScriptedSmtpServer.Script smarthost) throws Exception {
    downstream = await(ScriptedSmtpServer.start(vertx, smarthost));
    return downstream;
  }

  /** Starts the gateway of a {@link #manual} extension with {@code config} (built from {@link #defaults}). */
  public void begin(Map<String, Object> config) throws Exception {
    begin(config, Clock.systemUTC());
  }

  public void begin(Map<String, Object> config, Clock time) throws Exception {
    startGateway(vertx, config, time);
    sendClient = new SendClient(httpPort());
  }

  /**
   * Has the extension close {@code resource} when it stops: after the gateway (which may still be using it, a proxy
   * in front of the ledger or a webhook receiver), before the Vert.x. Answers the resource.
   */
  public <T extends AutoCloseable> T closeAfter(T resource) {
    closeAfter.add(resource);
    return resource;
  }

  private void stopAll() throws Exception {
    try {
      if (locking != null) {
        locking.release();
      }
    } finally {
      stopGatewayAndVertx();
    }
  }

  private void stopGatewayAndVertx() throws Exception {
    try {
      if (gateway != null) {
        close();
      }
    } finally {
      gateway = null;
      try {
        closeAll();
      } finally {
        await(vertx.close());
      }
    }
  }

  /** Closes each of {@link #closeAfter}'s resources, last first, even when one fails (then throws its exception). */
  private void closeAll() throws Exception {
    Exception failed = null;
    for (int i = closeAfter.size() - 1; i >= 0; i--) {
      try {
        closeAfter.get(i).close();
      } catch (Exception e) {
        if (failed == null) {
          failed = e;
        } else {
          failed.addSuppressed(e);
        }
      }
    }
    closeAfter.clear();
    if (failed != null) {
      throw failed;
    }
  }

  public Vertx vertx() {
    return vertx;
  }

  public Gateway gateway() {
    return gateway;
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

  /** A client of the send API on this gateway's port (an extension's). */
  public SendClient sendClient() {
    return sendClient;
  }

  public int smtpPort() {
    return gateway.smtpPort();
  }

  public int httpPort() {
    return gateway.httpPort();
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

  public String databaseUrl() {
    return databaseUrl;
  }

  /** The scripted smarthost (an extension's; a harness from {@link #start} has none). */
  public ScriptedSmtpServer downstream() {
    return downstream;
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
