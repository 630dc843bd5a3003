package dev.ledgerpost.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * The HA ledger of deploy/ha/ for real, on loopback: one etcd member, two PostgreSQL 15 servers under Patroni
 * ({@code db1}, {@code db2}) and HAProxy routing the ledger port to whichever one Patroni's REST API calls the
 * primary. Every file is the shipped one (read as git holds it, {@link ShippedFile}) with only what is site-specific
 * replaced: addresses, ports, directories, the three-member etcd cluster cut to one member. So the TTLs, the
 * synchronous mode, the server parameters and HAProxy's checks under test are the ones users copy.
 *
 * <p>PostgreSQL refuses to run as root, so where the tests run as root (CI) Patroni runs as the {@code postgres} user
 * Debian's packages create ({@code runuser}), in a directory under /tmp that user owns. The faults are real: {@link
 * #killServer} SIGKILLs a member's Patroni and its postmaster together, as when the machine dies.
 */
public final class PatroniLedger implements AutoCloseable {
  public static final String DATABASE = "ledgerpost";
  public static final String USER = "ledgerpost";
  public static final String PASSWORD = "ledgerpost-test";
  public static final List<String> MEMBERS = List.of("db1", "db2");
  /** Bootstrap (initdb, a base backup) and a fail-over with the shipped 20 s TTL take seconds; a busy CI box more. */
  public static final Duration SETTLE = Duration.ofSeconds(120);

  private record Member(String name, int restPort, int pgPort, Path config, Path dataDir, Path log) {}

  private final Path dir;
  private final Map<String, Member> members = new LinkedHashMap<>();
  private final Map<String, Process> patroni = new LinkedHashMap<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final String superPassword;
  private Process etcd;
  private int etcdPort;
  private Haproxy haproxy;

  private PatroniLedger(Path dir, String superPassword) {
    this.dir = dir;
    this.superPassword = superPassword;
  }

  /** etcd, db1 (the first primary), db2 (its synchronous standby), the gateway's role and database, and HAProxy. */
  public static PatroniLedger start() throws Exception {
    ExternalTool.PATRONI.path();
    ExternalTool.ETCD.path();
    ExternalTool.POSTGRES_15.path();
    Path dir = Files.createTempDirectory("ledgerpost-ha-"); // /tmp: the postgres user cannot reach into target/ under /work
    Map<String, Object> db1 = yaml(ShippedFile.read("deploy/ha/patroni-db1.yml"));
    @SuppressWarnings("unchecked")
    Map<String, Object> auth = (Map<String, Object>) ((Map<String, Object>) db1.get("postgresql")).get("authentication");
    @SuppressWarnings("unchecked")
    String superPassword = (String) ((Map<String, Object>) auth.get("superuser")).get("password");
    PatroniLedger ha = new PatroniLedger(dir, superPassword);
    try {
      ha.startEtcd();
      ha.configure();
      ha.owned();
      ha.launch("db1");
      Poll.until(SETTLE, "db1 bootstraps as the primary", () -> "db1".equals(ha.primary()));
      ha.launch("db2");
      ha.awaitSynchronousStandby("db2");
      ha.createGatewayDatabase();
      ha.startHaproxy();
      return ha;
    } catch (Exception | AssertionError e) {
      AssertionError failed = new AssertionError("the HA ledger did not start: " + e.getMessage() + "\n" + ha.logs(), e);
      ha.close();
      throw failed;
    }
  }

  /** ledger.url for the gateway: through HAProxy, as deploy/ha/README tells users. */
  public String url() {
    return "postgresql://" + USER + ":" + PASSWORD + "@127.0.0.1:" + haproxy.port("ledger") + "/" + DATABASE;
  }

  /** A connection to one member directly (not through HAProxy), as the gateway's role. */
  public Connection connect(String member) throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + members.get(member).pgPort() + "/" + DATABASE,
        USER, PASSWORD);
  }

  /** The member whose REST API answers GET /primary with 200, or null while there is none. */
  public String primary() {
    String found = null;
    for (Member m : members.values()) {
      if (patroni.containsKey(m.name()) && status(m, "/primary") == 200) {
        if (found != null) {
          throw new AssertionError("two members say they are the primary: " + found + " and " + m.name());
        }
        found = m.name();
      }
    }
    return found;
  }

  /** The other member's name. */
  public static String other(String member) {
    return member.equals("db1") ? "db2" : "db1";
  }

  /** Waits until {@code member} streams from the primary as its synchronous standby. */
  public void awaitSynchronousStandby(String member) throws Exception {
    Poll.until(SETTLE, member + " is the synchronous standby", () -> status(members.get(member), "/sync") == 200);
  }

  /** The machine dies: SIGKILL to the member's Patroni and to its postmaster at once (no shutdown, no demotion). */
  public void killServer(String member) throws Exception {
    Process p = patroni.remove(member);
    long postmaster = postmasterPid(members.get(member));
    List<ProcessHandle> all = new ArrayList<>();
    p.descendants().forEach(all::add);
    all.add(p.toHandle());
    ProcessHandle.of(postmaster).ifPresent(all::add);
    all.forEach(ProcessHandle::destroyForcibly);
    for (ProcessHandle h : all) {
      h.onExit().get(30, TimeUnit.SECONDS);
    }
  }

  /** Starts a member's Patroni again on its old data directory: it rejoins as a standby (pg_rewind where needed). */
  public void restart(String member) throws Exception {
    launch(member);
  }

  /**
   * A planned switchover with {@code patronictl}, as an operator runs it; returns once patronictl is done (the
   * candidate promoted).
   */
  public String switchover(String from, String to) throws Exception {
    Process p = new ProcessBuilder(ExternalTool.PATRONICTL.path(), "-c", members.get(from).config().toString(),
        "switchover", "--leader", from, "--candidate", to, "--force").directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError("patronictl switchover failed:\n" + out);
    }
    return out;
  }

  /** What {@code patronictl list} prints, for a failing test's message and the run's record. */
  public String list() throws Exception {
    Process p = new ProcessBuilder(ExternalTool.PATRONICTL.path(), "-c", members.get("db1").config().toString(), "list")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(30, TimeUnit.SECONDS);
    return out;
  }

  /** The last lines of every log (etcd's, each member's Patroni), for a failure's message. */
  private String logs() {
    StringBuilder b = new StringBuilder();
    for (Path log : List.of(dir.resolve("etcd.log"), dir.resolve("db1.log"), dir.resolve("db2.log"))) {
      try {
        // Patroni repeats its loop's lines every loop_wait: each line once (its first time), the last 60 of them.
        java.util.Set<String> seen = new java.util.HashSet<>();
        List<String> all = Files.readAllLines(log).stream()
            .filter(l -> seen.add(l.length() > 24 && l.charAt(4) == '-' ? l.substring(24) : l)).toList();
        b.append("--- ").append(log.getFileName()).append('\n')
            .append(String.join("\n", all.subList(Math.max(0, all.size() - 60), all.size()))).append('\n');
      } catch (IOException e) {
        b.append("--- ").append(log.getFileName()).append(": ").append(e.getMessage()).append('\n');
      }
    }
    return b.toString();
  }

  /** What HAProxy logged (servers marked up and down, with their times). */
  public List<String> haproxyLog() {
    return haproxy.output();
  }

  /** The last lines of a member's Patroni log. */
  public String log(String member, int lines) throws IOException {
    List<String> all = Files.readAllLines(members.get(member).log());
    return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
  }

  private void startEtcd() throws Exception {
    int client = freePort();
    int peer = freePort();
    Map<String, Object> c = yaml(ShippedFile.read("deploy/ha/etcd-db1.conf.yml"));
    c.put("name", "e1");
    c.put("data-dir", dir.resolve("etcd").toString());
    c.put("listen-client-urls", "http://127.0.0.1:" + client);
    c.put("advertise-client-urls", "http://127.0.0.1:" + client);
    c.put("listen-peer-urls", "http://127.0.0.1:" + peer);
    c.put("initial-advertise-peer-urls", "http://127.0.0.1:" + peer);
    c.put("initial-cluster", "e1=http://127.0.0.1:" + peer);
    Files.writeString(dir.resolve("etcd.conf.yml"), dump(c));
    etcdPort = client;
    launchEtcd();
  }

  private void launchEtcd() throws Exception {
    etcd = new ProcessBuilder(ExternalTool.ETCD.path(), "--config-file", dir.resolve("etcd.conf.yml").toString())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("etcd.log").toFile())).start();
    Poll.until(SETTLE, "etcd answers /health", () -> status("http://127.0.0.1:" + etcdPort + "/health") == 200);
  }

  /** etcd is lost (SIGKILL to its only member): Patroni can renew no leader key, and demotes the primary. */
  public void killEtcd() throws Exception {
    etcd.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
  }

  /** etcd comes back on its data directory; returns once it answers. */
  public void restartEtcd() throws Exception {
    launchEtcd();
  }

  /** Each member's Patroni file: the shipped one for its name, with this machine's addresses, ports and directories. */
  private void configure() throws Exception {
    for (String name : MEMBERS) {
      int rest = freePort();
      int pg = freePort();
      Map<String, Object> c = yaml(ShippedFile.read("deploy/ha/patroni-" + name + ".yml"));
      c.put("restapi", Map.of("listen", "127.0.0.1:" + rest, "connect_address", "127.0.0.1:" + rest));
      c.put("etcd3", Map.of("hosts", List.of("127.0.0.1:" + etcdPort)));
      @SuppressWarnings("unchecked")
      Map<String, Object> pgc = (Map<String, Object>) c.get("postgresql");
      pgc.put("listen", "127.0.0.1:" + pg);
      pgc.put("connect_address", "127.0.0.1:" + pg);
      pgc.put("data_dir", dir.resolve(name).toString());
      pgc.put("pgpass", dir.resolve("pgpass-" + name).toString());
      @SuppressWarnings("unchecked")
      Map<String, Object> bootstrap = (Map<String, Object>) c.get("bootstrap");
      @SuppressWarnings("unchecked")
      List<String> hba = (List<String>) bootstrap.get("pg_hba");
      // The shipped servers' network becomes loopback, which the shipped file also lists: one line each.
      bootstrap.put("pg_hba", hba.stream().map(l -> l.replace("10.0.0.0/24", "127.0.0.1/32")).distinct().toList());
      c.put("log", Map.of("level", "INFO"));
      Path cfg = dir.resolve(name + ".yml");
      Files.writeString(cfg, dump(c));
      members.put(name, new Member(name, rest, pg, cfg, dir.resolve(name), dir.resolve(name + ".log")));
    }
  }

  /** The directory is the postgres user's where Patroni must run as that user. */
  private void owned() throws Exception {
    if (asRoot()) {
      run("chown", "-R", "postgres:postgres", dir.toString());
    }
  }

  private void launch(String name) throws IOException {
    Member m = members.get(name);
    List<String> cmd = new ArrayList<>();
    if (asRoot()) {
      cmd.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    cmd.addAll(List.of(ExternalTool.PATRONI.path(), m.config().toString()));
    // In the cluster's own directory: Patroni's helper processes chdir to where it was started, and a clone under a
    // private temporary directory (CI's) is no place the postgres user may enter ("Permission denied", and the
    // bootstrap waits forever).
    patroni.put(name, new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(m.log().toFile())).start());
  }

  private void createGatewayDatabase() throws Exception {
    Member primary = members.get(primary());
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + primary.pgPort() + "/postgres",
        "postgres", superPassword); Statement st = c.createStatement()) {
      // As the README's HA section tells operators: the gateway's own role, owning its database (Flyway creates the
      // schema at the first start), a member of pg_monitor to read pg_stat_replication.
      st.execute("CREATE ROLE " + USER + " LOGIN PASSWORD '" + PASSWORD + "'");
      st.execute("GRANT pg_monitor TO " + USER);
      st.execute("CREATE DATABASE " + DATABASE + " OWNER " + USER);
    }
  }

  /** HAProxy with the shipped deploy/ha/haproxy-ledger.cfg: its frontend on a free port, its servers the members. */
  private void startHaproxy() throws Exception {
    String shipped = ShippedFile.read("deploy/ha/haproxy-ledger.cfg");
    haproxy = Haproxy.start(List.of("ledger"), ports -> {
      String cfg = shipped.replace("bind :5000", "bind 127.0.0.1:" + ports.get("ledger"))
          .replace("log stdout format raw local0", "log stderr format iso local0 notice");
      for (Member m : members.values()) {
        cfg = cfg.replaceAll("server " + m.name() + " \\S+ check port 8008",
            "server " + m.name() + " 127.0.0.1:" + m.pgPort() + " check port " + m.restPort());
      }
      if (cfg.contains("10.0.0.")) {
        throw new AssertionError("deploy/ha/haproxy-ledger.cfg changed shape: an address was left\n" + cfg);
      }
      return cfg;
    });
  }

  private int status(Member m, String path) {
    return status("http://127.0.0.1:" + m.restPort() + path);
  }

  private int status(String url) {
    try {
      return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(3)).build(),
          HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      return -1; // not listening (yet, or any more)
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private static long postmasterPid(Member m) throws IOException {
    Path pidFile = m.dataDir().resolve("postmaster.pid");
    return Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
  }

  private static boolean asRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  private static void run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError(String.join(" ", cmd) + " failed: " + out);
    }
  }

  private static Map<String, Object> yaml(String text) {
    return new Yaml().load(text);
  }

  private static String dump(Map<String, Object> c) {
    DumperOptions o = new DumperOptions();
    o.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
    return new Yaml(o).dump(c);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Stops HAProxy, both members (SIGTERM: Patroni stops its PostgreSQL) and etcd, and deletes the directory. */
  @Override
  public void close() throws Exception {
    if (haproxy != null) {
      haproxy.close();
    }
    for (String name : List.copyOf(patroni.keySet())) {
      Process p = patroni.remove(name);
      // runuser passes SIGTERM on to Patroni, which stops its PostgreSQL (fast shutdown) before it exits.
      p.destroy();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
      Member m = members.get(name);
      if (Files.exists(m.dataDir().resolve("postmaster.pid"))) {
        ProcessHandle.of(postmasterPid(m)).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
    if (etcd != null) {
      etcd.destroy();
      etcd.waitFor(30, TimeUnit.SECONDS);
    }
    run("rm", "-rf", dir.toString());
  }
}
