package dev.ledgerpost.platform.part;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Reloadable;
import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.function.ToIntFunction;

/**
 * What the parts of one gateway share while it starts and runs: the process-wide settings (configuration, metrics,
 * clock, node id, host name), what each part made for the parts after it (by type: the ledger's writer, the node's
 * leadership, the relay contract), and the deployments of each part, kept for the stop in reverse. One per gateway;
 * written while the parts start (one after the other, never concurrently), read afterwards.
 */
public final class Assembly {
  /** Numbers for Vert.x's shared random ports, unique in this JVM. */
  private static final AtomicInteger SHARED_RANDOM_PORTS = new AtomicInteger();

  private final Vertx vertx;
  private final GatewayConfig config;
  private final GatewayMetrics metrics;
  private final Clock clock;
  private final String nodeId;
  private final String hostname;
  private final List<Part> parts;
  private final Map<Class<?>, Object> provided = new LinkedHashMap<>();
  /** Deployment ids by part, in start order; the intakes' groups are also in {@link #intakes}. */
  private final List<List<String>> deployments = new ArrayList<>();
  private final List<List<String>> intakes = new ArrayList<>();
  /** The credential sources the parts registered, in that order. */
  private final List<Reloadable<?>> credentials = new ArrayList<>();

  public Assembly(Vertx vertx, GatewayConfig config, GatewayMetrics metrics, Clock clock, String nodeId, String hostname,
      List<Part> parts) {
    this.vertx = vertx;
    this.config = config;
    this.metrics = metrics;
    this.clock = clock;
    this.nodeId = nodeId;
    this.hostname = hostname;
    this.parts = List.copyOf(parts);
  }

  public Vertx vertx() {
    return vertx;
  }

  public GatewayConfig config() {
    return config;
  }

  public GatewayMetrics metrics() {
    return metrics;
  }

  /** The clock the stale watch and the smarthosts' back-off read; tests move it to age rows. */
  public Clock clock() {
    return clock;
  }

  /** node.id, or the host's name (docs/design.md §9.1). */
  public String nodeId() {
    return nodeId;
  }

  /** smtp.hostname, or the host's canonical name: the gateway's name in greetings and Received: lines. */
  public String hostname() {
    return hostname;
  }

  /** Every part of the gateway, in start order (the API mounts their routes and asks their readiness). */
  public List<Part> parts() {
    return parts;
  }

  /** Makes {@code service} what later parts find under {@code type}; one of each type. */
  public synchronized <T> void provide(Class<T> type, T service) {
    if (provided.putIfAbsent(type, service) != null) {
      throw new IllegalStateException(type.getSimpleName() + " is provided twice");
    }
  }

  /** What an earlier part provided under {@code type}; a part asking for what no part before it made is a wiring error. */
  public synchronized <T> T get(Class<T> type) {
    Object s = provided.get(type);
    if (s == null) {
      throw new IllegalStateException("no part before this one provides " + type.getSimpleName());
    }
    return type.cast(s);
  }

  /** Like {@link #get}, for what a part may run without (a configured option's service). */
  public synchronized <T> java.util.Optional<T> find(Class<T> type) {
    return java.util.Optional.ofNullable(provided.get(type)).map(type::cast);
  }

  /**
   * A credential file (or key pair) a part read, to be read again on SIGHUP (docs/design.md §11.2); a part registers
   * each where it reads it, as it registers its gauges.
   */
  public synchronized void reloadOnHangup(Reloadable<?> source) {
    credentials.add(source);
  }

  /** Every credential source registered so far, for the SIGHUP reload. */
  public synchronized List<Reloadable<?>> credentials() {
    return List.copyOf(credentials);
  }

  /** Deploys one verticle of a part, stopped with the part's other deployments in reverse start order. */
  public Future<Void> deploy(VerticleBase verticle) {
    List<String> group = new ArrayList<>();
    synchronized (this) {
      deployments.add(group);
    }
    return vertx.deployVerticle(verticle).map(id -> {
      group.add(id);
      return null;
    });
  }

  /**
   * Deploys {@code n} instances of a listening verticle that share one socket: Vert.x binds it once and hands the
   * connections to the instances in turn, each on its own event loop. For port 0 they bind a negative port, Vert.x's
   * "one random port shared by every server that names this number"; the number is this gateway's own, so two gateways
   * in one Vert.x never share. An intake: stopped before every other part, together with the other intakes. Answers
   * the actual port. {@code key} ("smtp", "http") names the settings {@code key.host} and {@code key.port}: a listener
   * that could not bind is an operator's problem, said in one line naming the one to change (docs/design.md §11.1).
   */
  public <V extends VerticleBase> Future<Integer> listen(String key, String host, int n, int port, IntFunction<V> make,
      ToIntFunction<V> actualPort) {
    int bind = port == 0 ? -SHARED_RANDOM_PORTS.incrementAndGet() : port;
    List<V> made = new ArrayList<>();
    List<String> group = new ArrayList<>();
    synchronized (this) {
      deployments.add(group);
      intakes.add(group);
    }
    Future<Void> chain = Future.succeededFuture();
    for (int i = 0; i < n; i++) {
      V v = make.apply(bind);
      made.add(v);
      chain = chain.compose(x -> vertx.deployVerticle(v).map(id -> {
        group.add(id);
        return (Void) null;
      }));
    }
    return chain.map(x -> actualPort.applyAsInt(made.get(0))).recover(e -> Future.failedFuture(bindFailure(e, key, host, port)));
  }

  /** A failure to bind as one line naming the key to change; anything else unchanged. */
  private static Throwable bindFailure(Throwable e, String key, String host, int port) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = String.valueOf(t.getMessage());
      if (t instanceof java.net.BindException || m.contains("Address already in use") || m.contains("Cannot assign requested address")) {
        return new StartFailure(m.contains("already in use")
            ? key + ".port " + port + ": " + host + ":" + port + " is already in use by another program; stop it or set "
                + key + ".port to a free port"
            : key + ".host " + host + ": cannot listen there (" + m + "); set " + key + ".host to an address of this machine",
            e);
      }
    }
    return e;
  }

  /** The deployments of the intakes, every instance (stopped first, together). */
  public synchronized List<String> intakeDeployments() {
    return intakes.stream().flatMap(List::stream).toList();
  }

  /** The other deployments, in reverse start order, one group (a part's verticle) each. */
  public synchronized List<List<String>> otherDeploymentsReversed() {
    List<List<String>> out = new ArrayList<>();
    for (int i = deployments.size() - 1; i >= 0; i--) {
      List<String> group = deployments.get(i);
      if (intakes.stream().noneMatch(intake -> intake == group)) { // by identity: two groups may hold equal lists
        out.add(List.copyOf(group));
      }
    }
    return out;
  }

  /** Forgets every deployment (after the stop). */
  public synchronized void clearDeployments() {
    deployments.clear();
    intakes.clear();
  }
}
