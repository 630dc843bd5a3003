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
  /**
   * The longest statement the client keeps prepared (characters). The Vert.x default, 2,048, is shorter than the
   * ledger's open (OpenBatch, over 3,000 with its comments), which was then parsed, analysed, planned and closed
   * again at every execution (issue 33's profile: bench/results/2026-12-05-throughput-profile.md §3). A test holds
   * every hot statement under this limit, so a longer comment cannot silently undo it.
   */
  public static final int STATEMENT_CACHE_SQL_LIMIT = 16_384;
  /** The server setting of the hot path's connections ({@link #hotPathOptions()}). */
  static final String PLAN_CACHE_MODE = "plan_cache_mode";

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

  /**
   * The options of the hot path's connections: the ledger writer's open and settle and the outbox publisher
   * ({@link Database#hotPool()}), whose few statements run thousands of times a second. PostgreSQL's default
   * ({@code plan_cache_mode = auto}) keeps planning them at every execution: a generic plan of a statement on the
   * partitioned ledger costs all partitions, so it never looks cheaper than a custom one, and planning measured as
   * much as executing (issue 33's profile, §1.1). {@code force_generic_plan} plans each once per connection; the
   * statements are written for it (ids bound by scalar ranges, so the executor prunes partitions: SettleBatch). Only
   * these connections: the other parts' queries (lists, statistics, the console) keep custom plans, which pick their
   * indexes by the values asked for.
   */
  public PgConnectOptions hotPathOptions() {
    PgConnectOptions hot = new PgConnectOptions(options);
    Map<String, String> props = new HashMap<>(options.getProperties());
    props.put(PLAN_CACHE_MODE, "force_generic_plan");
    hot.setProperties(props);
    return hot;
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
    options.setPreparedStatementCacheSqlLimit(STATEMENT_CACHE_SQL_LIMIT);
    String jdbc = "jdbc:postgresql://" + options.getHost() + ":" + options.getPort() + "/" + options.getDatabase();
    String display = "postgresql://" + options.getUser() + "@" + options.getHost() + ":" + options.getPort() + "/" + options.getDatabase();
    return new DatabaseTarget(options, jdbc, display);
  }
}
