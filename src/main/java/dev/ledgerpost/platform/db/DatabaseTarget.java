package dev.ledgerpost.platform.db;

import io.vertx.pgclient.PgConnectOptions;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the ledger lives, in the two forms the gateway needs: Vert.x connect options for runtime SQL
 * and a JDBC URL for Flyway. Parameters of the configured URL are kept; lock_timeout is added.
 */
public record DatabaseTarget(PgConnectOptions options, String jdbcUrl, String displayUrl) {
  private static final Logger LOG = LoggerFactory.getLogger(DatabaseTarget.class);

  public static DatabaseTarget fromUrl(String url, Duration lockTimeout) {
    String u = url.trim();
    if (u.startsWith("jdbc:")) {
      u = u.substring("jdbc:".length());
    }
    PgConnectOptions options;
    try {
      options = PgConnectOptions.fromUri(u);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("ledger.url is not a PostgreSQL URL: " + e.getMessage(), e);
    }
    return of(options, lockTimeout);
  }

  public static DatabaseTarget embedded(int port, Duration lockTimeout) {
    PgConnectOptions options = new PgConnectOptions()
        .setHost("localhost")
        .setPort(port)
        .setDatabase("postgres")
        .setUser("postgres")
        .setPassword("");
    return of(options, lockTimeout);
  }

  /** A plain JDBC connection (Flyway's kind), for the blocking DDL of the partitions; the caller closes it. */
  public java.sql.Connection connect() throws java.sql.SQLException {
    return java.sql.DriverManager.getConnection(jdbcUrl, options.getUser(), options.getPassword());
  }

  private static DatabaseTarget of(PgConnectOptions options, Duration lockTimeout) {
    Map<String, String> props = new HashMap<>(options.getProperties());
    String fromUrl = props.put("lock_timeout", lockTimeout.toMillis() + "ms");
    if (fromUrl != null) {
      LOG.warn("ledger.url sets lock_timeout={}; ledger.lockTimeout ({} ms) wins, the retry budget depends on it",
          fromUrl, lockTimeout.toMillis());
    }
    // Every PgConnectOptions starts with application_name=vertx-pg-client among its defaults, so putIfAbsent never
    // named the pool's connections: only a name the URL gave is kept.
    String named = props.get("application_name");
    if (named == null || named.equals(PgConnectOptions.DEFAULT_PROPERTIES.get("application_name"))) {
      props.put("application_name", "ledgerpost");
    }
    options.setProperties(props);
    options.setCachePreparedStatements(true);
    String jdbc = "jdbc:postgresql://" + options.getHost() + ":" + options.getPort() + "/" + options.getDatabase();
    String display = "postgresql://" + options.getUser() + "@" + options.getHost() + ":" + options.getPort() + "/" + options.getDatabase();
    return new DatabaseTarget(options, jdbc, display);
  }
}
