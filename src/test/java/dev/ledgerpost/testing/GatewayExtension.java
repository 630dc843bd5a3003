package dev.ledgerpost.testing;

import dev.ledgerpost.Gateway;
import io.vertx.core.Vertx;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The set-up most end-to-end tests share: a Vert.x, a scripted smarthost ({@link ScriptedSmtpServer}) and a
 * gateway in front of it ({@link GatewayHarness}: port 0, a fresh database), started before and stopped after.
 * On a static field it serves the whole class; on an instance field, every test gets its own:
 *
 * <pre>
 * &#64;RegisterExtension
 * static final GatewayExtension gateway = GatewayExtension.create().with("smtp.maxConnections", 3);
 * </pre>
 *
 * A script or a value that needs the running parts gets the extension itself ({@code g -> g.vertx()...}).
 */
public final class GatewayExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
  /** What a set-up step may throw. */
  public interface Step {
    void run(GatewayExtension gateway) throws Exception;
  }

  private final Map<String, Object> overrides = new LinkedHashMap<>();
  private final List<Consumer<Map<String, Object>>> configure = new ArrayList<>();
  private Function<GatewayExtension, ScriptedSmtpServer.Script> script = g -> new ScriptedSmtpServer.Script() {};
  private Clock clock = Clock.systemUTC();
  private Step afterStart = g -> { };
  /** Class levels entered (nested classes inherit a static extension): the outermost starts and stops. */
  private int classLevels;

  private Vertx vertx;
  private ScriptedSmtpServer downstream;
  private Map<String, Object> config;
  private GatewayHarness harness;
  private SendClient sendClient;

  private GatewayExtension() {}

  public static GatewayExtension create() {
    return new GatewayExtension();
  }

  /** One configuration key over {@link GatewayHarness#defaults}. */
  public GatewayExtension with(String key, Object value) {
    overrides.put(key, value);
    return this;
  }

  /** Configuration computed at start (files, databases); runs after {@link #with}'s keys are in. */
  public GatewayExtension configure(Consumer<Map<String, Object>> step) {
    configure.add(step);
    return this;
  }

  /** The smarthost's script; it may call back into the extension (its Vert.x, the database) when it runs. */
  public GatewayExtension script(Function<GatewayExtension, ScriptedSmtpServer.Script> script) {
    this.script = script;
    return this;
  }

  /** The clock the stale watch and the smarthosts' back-off read. */
  public GatewayExtension clock(Clock clock) {
    this.clock = clock;
    return this;
  }

  /** Runs once the gateway is up, before the tests (seeding messages, a first request). */
  public GatewayExtension afterStart(Step step) {
    this.afterStart = step;
    return this;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (classLevels++ == 0) {
      start();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (--classLevels == 0) {
      stop();
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    if (classLevels == 0) {
      start();
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (classLevels == 0) {
      stop();
    }
  }

  private void start() throws Exception {
    vertx = Vertx.vertx();
    try {
      downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, script.apply(this)));
      config = GatewayHarness.defaults(downstream.port());
      config.putAll(overrides);
      configure.forEach(c -> c.accept(config));
      harness = GatewayHarness.start(vertx, config, clock);
      sendClient = new SendClient(harness.httpPort());
      afterStart.run(this);
    } catch (Exception | Error e) {
      stop();
      throw e;
    }
  }

  private void stop() throws Exception {
    try {
      if (harness != null) {
        harness.close();
      }
    } finally {
      harness = null;
      GatewayHarness.await(vertx.close());
    }
  }

  public Vertx vertx() {
    return vertx;
  }

  public ScriptedSmtpServer downstream() {
    return downstream;
  }

  /** The configuration the gateway was started with (defaults, then this extension's keys). */
  public Map<String, Object> config() {
    return config;
  }

  public GatewayHarness harness() {
    return harness;
  }

  /** A client of the send API on this gateway's port. */
  public SendClient sendClient() {
    return sendClient;
  }

  public Gateway gateway() {
    return harness.gateway();
  }

  public int smtpPort() {
    return harness.smtpPort();
  }

  public int httpPort() {
    return harness.httpPort();
  }

  public String databaseUrl() {
    return harness.databaseUrl();
  }

  public HttpResponse<String> get(String path) throws Exception {
    return harness.get(path);
  }

  public HttpResponse<String> get(String path, String token) throws Exception {
    return harness.get(path, token);
  }

  public HttpResponse<String> post(String path, String json, String... headers) throws Exception {
    return harness.post(path, json, headers);
  }
}
