package dev.ledgerpost.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Gateway nodes as real child JVMs on one test database (docs/design.md §9): each with its own node.id,
 * directory (journal) and SMTP port, which it keeps across a restart so that a load balancer in front
 * (see {@link Haproxy}) finds it again. Options are YAML lines added to every node's configuration.
 */
public final class Cluster implements AutoCloseable {
  public static final Duration START = Duration.ofSeconds(90); // three JVMs starting at once on 2 cores
  private final Path dir;
  private final String ledgerUrl;
  private final int downstreamPort;
  private final Map<String, List<String>> sections;
  private final Map<String, Integer> smtpPorts = new LinkedHashMap<>();
  private final Map<String, ChildGateway> running = new LinkedHashMap<>();
  private final Map<String, String> ledgerRoutes = new LinkedHashMap<>();

  private Cluster(Path dir, String ledgerUrl, int downstreamPort, Map<String, List<String>> sections) {
    this.dir = dir;
    this.ledgerUrl = ledgerUrl;
    this.downstreamPort = downstreamPort;
    this.sections = sections;
  }

  /**
   * A cluster on a fresh database. {@code options} maps a section ("smtp", "node", "stale"...) to its lines
   * (e.g. {@code "heartbeatInterval: 500ms"}); node.id, the ports, the ledger and the journal are set here.
   */
  public static Cluster create(int downstreamPort, Map<String, List<String>> options) throws IOException {
    return new Cluster(GatewayHarness.tempDir("cluster-"), TestDatabase.newDatabase(), downstreamPort, options);
  }

  /** A cluster on a ledger of the test's own (a {@link PatroniLedger}'s HAProxy), which the first node migrates. */
  public static Cluster on(String ledgerUrl, int downstreamPort, Map<String, List<String>> options) {
    return new Cluster(GatewayHarness.tempDir("cluster-"), ledgerUrl, downstreamPort, options);
  }

  public String ledgerUrl() {
    return ledgerUrl;
  }

  /** The SMTP port a node has (or will have) for its whole life, restarts included. */
  public int smtpPort(String id) throws IOException {
    Integer port = smtpPorts.get(id);
    if (port == null) {
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort(); // picked at run time, kept for restarts: a balancer's server line names it
      }
      smtpPorts.put(id, port);
    }
    return port;
  }

  /**
   * The ledger as one node reaches it: the same database through {@code host:port} (a {@link TcpProxy} the test
   * cuts), from the node's next start on.
   */
  public void routeLedger(String id, String host, int port) {
    java.net.URI u = java.net.URI.create(ledgerUrl);
    ledgerRoutes.put(id, u.getScheme() + "://" + u.getUserInfo() + "@" + host + ":" + port + u.getPath());
  }

  /** Where this test's PostgreSQL listens (host, port). */
  public java.net.InetSocketAddress ledgerAddress() {
    java.net.URI u = java.net.URI.create(ledgerUrl);
    return java.net.InetSocketAddress.createUnresolved(u.getHost(), u.getPort());
  }

  /** Starts the nodes at once and waits until each is ready. */
  public void start(String... ids) throws Exception {
    for (String id : ids) {
      launch(id);
    }
    for (String id : ids) {
      running.get(id).awaitReady(START);
    }
  }

  /** Starts (or restarts, on the same directory, journal and port) one node without waiting for it. */
  public ChildGateway launch(String id) throws IOException {
    Path home = Files.createDirectories(dir.resolve(id));
    ChildGateway node = ChildGateway.start(home, yaml(id, home), null);
    running.put(id, node);
    return node;
  }

  /** A second process that claims a running node's id, from a directory (and port) of its own. */
  public ChildGateway launchTwin(String id, String twin) throws IOException {
    Path home = Files.createDirectories(dir.resolve(twin));
    String yaml = yaml(id, home).replace("port: " + smtpPort(id), "port: " + smtpPort(twin));
    ChildGateway node = ChildGateway.start(home, yaml, null);
    running.put(twin, node);
    return node;
  }

  public ChildGateway node(String id) {
    return java.util.Optional.ofNullable(running.get(id)).orElseThrow(() -> new IllegalArgumentException("no node " + id));
  }

  /** SIGKILL, as a crash or the OOM killer would. */
  public void kill(String id) throws InterruptedException {
    node(id).kill();
  }

  private String yaml(String id, Path home) throws IOException {
    Map<String, List<String>> all = new LinkedHashMap<>();
    all.put("node", new ArrayList<>(List.of("id: " + id)));
    all.put("smtp", new ArrayList<>(List.of("port: " + smtpPort(id), "hostname: " + id + ".test")));
    all.put("http", new ArrayList<>(List.of("port: 0")));
    all.put("downstream", new ArrayList<>(List.of("host: 127.0.0.1", "port: " + downstreamPort, "starttls: none")));
    all.put("ledger", new ArrayList<>(List.of("url: \"" + ledgerRoutes.getOrDefault(id, ledgerUrl) + "\"",
        "lockTimeout: 250ms")));
    all.put("retry", new ArrayList<>(List.of("journalDir: \"" + home.resolve("journal") + "\"")));
    all.put("api", new ArrayList<>(List.of("adminToken: child-token")));
    sections.forEach((section, lines) -> all.computeIfAbsent(section, s -> new ArrayList<>()).addAll(lines));
    StringBuilder y = new StringBuilder();
    all.forEach((section, lines) -> {
      y.append(section).append(":\n");
      lines.forEach(l -> y.append("  ").append(l).append('\n'));
    });
    return y.toString();
  }

  /** The node.id that holds a single-active job's advisory lock right now, as PostgreSQL sees it; null if none. */
  public String leaderOf(int jobId) throws Exception {
    String app = LedgerRows.string(ledgerUrl, """
        SELECT coalesce(max(a.application_name), '') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.classid = x'4C50'::int AND l.objid = %d AND l.granted""".formatted(jobId));
    return app.isEmpty() ? null : app.substring(app.lastIndexOf(' ') + 1);
  }

  /** A node's GET /metrics, in Prometheus's text format. */
  public String metrics(String id) throws Exception {
    java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().version(java.net.http.HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + node(id).httpPort() + "/metrics")).timeout(Duration.ofSeconds(20)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new AssertionError("GET /metrics of node " + id + " answered " + r.statusCode());
    }
    return r.body();
  }

  /**
   * What a node itself says it leads: its {@code ledgerpost_node_leads} gauges (1 while it acts on the job), by job
   * label, from its /metrics. PostgreSQL's view ({@link #leaderOf}) says who holds a lock; this says who acts.
   */
  public Map<String, Integer> leads(String id) throws Exception {
    String body = metrics(id);
    java.util.regex.Pattern gauge = java.util.regex.Pattern.compile("^ledgerpost_node_leads\\{.*job=\"([^\"]+)\".*\\} (\\S+)$");
    Map<String, Integer> leads = new java.util.TreeMap<>();
    body.lines().map(gauge::matcher).filter(java.util.regex.Matcher::matches)
        .forEach(m -> leads.put(m.group(1), (int) Double.parseDouble(m.group(2))));
    return leads;
  }

  @Override
  public void close() throws InterruptedException {
    for (ChildGateway node : running.values()) {
      node.close();
    }
  }
}
