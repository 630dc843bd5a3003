package dev.ledgerpost.testing;

import dev.ledgerpost.ledger.MigratedLedger;
import dev.ledgerpost.platform.db.EmbeddedDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;

/**
 * The real PostgreSQL the tests run against, one server per test JVM and a fresh database per
 * caller: an external server from {@code LEDGERPOST_TEST_PG_URL} (postgresql://user:pass@host:port),
 * else a Testcontainers PostgreSQL 17 where a Docker engine answers, else the embedded server.
 *
 * <p>A fresh database already holds the ledger schema at the current version: the migrations run once per test JVM
 * (and UTC day, as V90's partitions are cut relative to today) into a template, and each caller gets a
 * {@code CREATE DATABASE ... TEMPLATE} copy of it, on which the gateway's Flyway finds nothing to do. Copying takes a
 * few tens of milliseconds where migrating took about half a second, on each of the suite's hundreds of databases.
 * A test of the migrations themselves asks for {@link #newEmptyDatabase()}.
 *
 * <p>Databases are dropped when the test class that asked for them is done ({@link DropDatabasesAfterClass}), so a
 * server holds a handful, not the hundred a JVM hands out: PostgreSQL's autovacuum visits every database once per
 * {@code autovacuum_naptime}, and at 67 idle databases and the gateway's 5 s that was a sixth of a core per server,
 * the suite's largest single cost (bench/results/2026-12-04-suite-cpu.txt).
 */
public final class TestDatabase {
  private static final AtomicInteger COUNTER = new AtomicInteger();
  private static Server server;
  /** The migrated template of this JVM, and the UTC day it was migrated on. */
  private static String template;
  private static LocalDate templateDay;
  /** Databases handed out and not yet dropped. */
  private static final List<String> handedOut = new ArrayList<>();
  /** Test-side connections given back ({@link #connect}), by database. */
  private static final Map<String, Deque<Connection>> idle = new ConcurrentHashMap<>();

  /** host, port, user, password of the server; database names are handed out per test. */
  public record Server(String host, int port, String user, String password, String kind) {
    public String jdbc(String db) {
      return "jdbc:postgresql://" + host + ":" + port + "/" + db;
    }

    public String url(String db) {
      String auth = password.isEmpty() ? user : user + ":" + password;
      return "postgresql://" + auth + "@" + host + ":" + port + "/" + db;
    }
  }

  private TestDatabase() {}

  public static synchronized Server server() {
    if (server == null) {
      server = startServer();
    }
    return server;
  }

  /** A Vert.x pool of at most {@code size} connections to {@code url} (a 1 s connect timeout), for tests that race writers. */
  public static io.vertx.sqlclient.Pool pool(io.vertx.core.Vertx vertx, String url, int size) {
    return io.vertx.pgclient.PgBuilder.pool().with(new io.vertx.sqlclient.PoolOptions().setMaxSize(size))
        .connectingTo(dev.ledgerpost.platform.db.DatabaseTarget.fromUrl(url, java.time.Duration.ofSeconds(1)).options())
        .using(vertx).build();
  }

  /**
   * A new database holding the ledger schema at the current version, as a gateway's first start leaves it, with a
   * ledger identity of its own; returns its URL in the form ledger.url takes.
   */
  public static String newDatabase() {
    Server s = server();
    String name = nextName();
    create(s, name, template(s));
    // The copy's identity (V96) is the template's: two ledgers sharing one would pass for one (retention, archives).
    try (Connection c = connect(s.url(name));
        Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      st.execute("ALTER TABLE ledger_identity DISABLE TRIGGER ledger_identity_no_change");
      st.execute("UPDATE ledger_identity SET ledger_id = gen_random_uuid(), created_at = now()");
      st.execute("ALTER TABLE ledger_identity ENABLE TRIGGER ledger_identity_no_change");
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException("cannot give test database " + name + " an identity of its own", e);
    }
    return s.url(name);
  }

  /**
   * A new, empty database (no schema, no Flyway history); returns its URL in the form ledger.url takes. For the tests
   * of the migrations themselves and of what a first start says, and for tests that make tables of their own.
   */
  public static String newEmptyDatabase() {
    Server s = server();
    String name = nextName();
    create(s, name, null);
    return s.url(name);
  }

  private static String nextName() {
    String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
    synchronized (handedOut) {
      handedOut.add(name);
    }
    return name;
  }

  /**
   * Drops every database handed out so far, closing what is still connected to them ({@code WITH (FORCE)}): called
   * once a test class is done, its gateways and children closed. The template stays.
   */
  public static void dropHandedOut() {
    List<String> names;
    synchronized (handedOut) {
      names = List.copyOf(handedOut);
      handedOut.clear();
    }
    if (names.isEmpty()) {
      return;
    }
    Server s = server();
    try (Connection c = connect(s.url("postgres"));
        Statement st = c.createStatement()) {
      for (String name : names) {
        Deque<Connection> free = idle.remove(name);
        if (free != null) {
          free.forEach(TestDatabase::closeQuietly);
        }
        st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop the test databases " + names, e);
    }
  }

  private static void create(Server s, String name, String from) {
    try (Connection c = connect(s.url("postgres"));
        Statement st = c.createStatement()) {
      // FILE_COPY: copying the template's files takes 40 % less CPU than PostgreSQL's default (WAL_LOG, every page
      // through the WAL) at this schema's 430 files, on a server with fsync off (see testServerSettings).
      st.execute("CREATE DATABASE " + name + (from == null ? "" : " TEMPLATE " + from + " STRATEGY FILE_COPY"));
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create test database " + name, e);
    }
  }

  /**
   * This JVM's migrated template for today, made on first use. It takes no connections once migrated, so that no
   * session (autovacuum's included) is in it when a copy is made.
   */
  private static synchronized String template(Server s) {
    LocalDate today = LocalDate.now(ZoneOffset.UTC);
    if (!today.equals(templateDay)) {
      String name = "tmpl" + ProcessHandle.current().pid() + "_" + today.toString().replace("-", "");
      create(s, name, null);
      MigratedLedger.migrate(s.url(name));
      try (Connection c = connect(s.url("postgres"));
          Statement st = c.createStatement()) {
        st.execute("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS false");
      } catch (SQLException e) {
        throw new IllegalStateException("cannot close template database " + name, e);
      }
      template = name;
      templateDay = today;
    }
    return template;
  }

  /**
   * A plain JDBC connection to a database handed out by {@link #newDatabase()}, for test-side checks and faults.
   *
   * <p>Closing it gives it back for the next caller: tests poll the ledger through short-lived connections, and each
   * new one is a PostgreSQL backend to fork and warm (10 to 30 ms of CPU; 5,000 of them in a suite run). Given back,
   * its transaction is rolled back and its session reset ({@code DISCARD ALL}: settings, prepared statements, temporary
   * tables and session locks such as advisory ones), so the next caller finds it as a new one; one that no longer
   * answers (a test terminated the database's backends) is dropped when taken.
   */
  public static Connection connect(String url) throws SQLException {
    return connect(server(), url.substring(url.lastIndexOf('/') + 1));
  }

  private static Connection connect(Server s, String db) throws SQLException {
    Deque<Connection> free = idle.computeIfAbsent(db, k -> new ConcurrentLinkedDeque<>());
    for (Connection c = free.pollFirst(); c != null; c = free.pollFirst()) {
      if (c.isValid(5)) {
        return lend(free, c);
      }
      closeQuietly(c);
    }
    return lend(free, DriverManager.getConnection(s.jdbc(db), s.user(), s.password()));
  }

  /** The connection as the caller sees it: closing it hands it back to {@code free} instead. */
  private static Connection lend(Deque<Connection> free, Connection real) {
    AtomicBoolean returned = new AtomicBoolean();
    return (Connection) Proxy.newProxyInstance(TestDatabase.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          switch (method.getName()) {
            case "close":
              if (returned.compareAndSet(false, true)) {
                giveBack(free, real);
              }
              return null;
            case "isClosed":
              return returned.get() || real.isClosed();
            case "equals":
              return proxy == args[0];
            case "hashCode":
              return System.identityHashCode(proxy);
            case "toString":
              return "test connection " + real;
            default:
              if (returned.get()) {
                throw new SQLException("connection closed");
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
          }
        });
  }

  private static void giveBack(Deque<Connection> free, Connection c) {
    try {
      if (c.isClosed()) {
        return;
      }
      if (!c.getAutoCommit()) {
        c.rollback();
        c.setAutoCommit(true);
      }
      try (Statement st = c.createStatement()) {
        st.execute("DISCARD ALL");
      }
      free.offerFirst(c);
    } catch (SQLException e) {
      closeQuietly(c);
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException e) {
      // it is gone either way
    }
  }

  private static Server startServer() {
    String external = System.getenv("LEDGERPOST_TEST_PG_URL");
    if (external != null && !external.isBlank()) {
      java.net.URI uri = java.net.URI.create(external.replaceFirst("^jdbc:", "").replaceFirst("^postgres(ql)?:", "http:"));
      String[] userInfo = uri.getUserInfo() == null ? new String[] {"postgres", ""} : uri.getUserInfo().split(":", 2);
      return new Server(uri.getHost(), uri.getPort() < 0 ? 5432 : uri.getPort(), userInfo[0],
          userInfo.length > 1 ? userInfo[1] : "", "external");
    }
    if (dockerAvailable()) {
      PostgreSQLContainer<?> pg = new PostgreSQLContainer<>("postgres:17");
      pg.start();
      Runtime.getRuntime().addShutdownHook(new Thread(pg::stop));
      return new Server(pg.getHost(), pg.getMappedPort(5432), pg.getUsername(), pg.getPassword(), "testcontainers");
    }
    try {
      Path dir = Files.createTempDirectory(Path.of("target"), "test-pg-");
      EmbeddedDatabase db = EmbeddedDatabase.start(dir, 0);
      Runtime.getRuntime().addShutdownHook(new Thread(db::close));
      Server s = new Server("localhost", db.port(), "postgres", "", "embedded");
      testServerSettings(s);
      return s;
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The embedded test server runs as a gateway's does, but with autovacuum's rounds a minute apart and fsync off: a
   * test kills processes, never the machine, so the page cache keeps every commit a test checks (the commit itself is
   * still synchronous), and the suite's hundreds of template copies and thousands of commits stop paying for flushes
   * to disk.
   */
  private static void testServerSettings(Server s) {
    try (Connection c = connect(s, "postgres");
        Statement st = c.createStatement()) {
      st.execute("ALTER SYSTEM SET fsync = off");
      // The gateway's 5 s makes autovacuum visit each of a server's databases every 5 s, a new worker process each
      // time, on servers that each test JVM keeps busy. The tests that need statistics run ANALYZE themselves.
      st.execute("ALTER SYSTEM SET autovacuum_naptime = '60s'");
      st.execute("SELECT pg_reload_conf()");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot set up the test server", e);
    }
  }

  /**
   * Whether anything points at a Docker engine: Testcontainers' own probe costs 0.9 s of CPU in each test JVM (its
   * client's classes, every strategy tried), for nothing on a machine without one. Its configuration (environment,
   * {@code ~/.testcontainers.properties}) or a socket where Docker, Docker Desktop, Colima, Rancher Desktop or Podman
   * put theirs: then Testcontainers is asked.
   */
  private static boolean dockerMayAnswer() {
    if (System.getenv("DOCKER_HOST") != null || System.getenv("TESTCONTAINERS_HOST_OVERRIDE") != null) {
      return true;
    }
    String home = System.getProperty("user.home", "");
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    List<Path> places = new ArrayList<>(List.of(Path.of("/var/run/docker.sock"), Path.of("/run/podman/podman.sock"),
        Path.of(home, ".testcontainers.properties"), Path.of(home, ".docker", "run", "docker.sock"),
        Path.of(home, ".docker", "desktop", "docker.sock"), Path.of(home, ".colima", "default", "docker.sock"),
        Path.of(home, ".rd", "docker.sock")));
    if (runtime != null) {
      places.add(Path.of(runtime, "docker.sock"));
      places.add(Path.of(runtime, "podman", "podman.sock"));
    }
    return places.stream().anyMatch(Files::exists);
  }

  private static boolean dockerAvailable() {
    if ("embedded".equals(System.getenv("LEDGERPOST_TEST_PG")) || !dockerMayAnswer()) {
      return false;
    }
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (Throwable t) {
      return false;
    }
  }
}
