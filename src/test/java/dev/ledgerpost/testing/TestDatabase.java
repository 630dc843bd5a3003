package dev.ledgerpost.testing;

import dev.ledgerpost.ledger.db.EmbeddedDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;

/**
 * The real PostgreSQL the tests run against, one server per test JVM and a fresh database per
 * caller: an external server from {@code LEDGERPOST_TEST_PG_URL} (postgresql://user:pass@host:port),
 * else a Testcontainers PostgreSQL 17 where a Docker engine answers, else the embedded server.
 */
public final class TestDatabase {
  private static final AtomicInteger COUNTER = new AtomicInteger();
  private static Server server;

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

  /** A new, empty database; returns its URL in the form ledger.url takes. */
  public static String newDatabase() {
    Server s = server();
    String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
    try (Connection c = DriverManager.getConnection(s.jdbc("postgres"), s.user(), s.password());
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create test database " + name, e);
    }
    return s.url(name);
  }

  /** A plain JDBC connection to a database handed out by {@link #newDatabase()}, for test-side checks and faults. */
  public static Connection connect(String url) throws SQLException {
    Server s = server();
    String db = url.substring(url.lastIndexOf('/') + 1);
    return DriverManager.getConnection(s.jdbc(db), s.user(), s.password());
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
      return new Server("localhost", db.port(), "postgres", "", "embedded");
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static boolean dockerAvailable() {
    if ("embedded".equals(System.getenv("LEDGERPOST_TEST_PG"))) {
      return false;
    }
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (Throwable t) {
      return false;
    }
  }
}
