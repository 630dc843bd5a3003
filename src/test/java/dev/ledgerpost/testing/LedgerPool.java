package dev.ledgerpost.testing;

import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A ledger of the test class's own with a Vert.x pool on it, for tests that run the ledger's statements (OpenBatch,
 * SettleBatch, Ledger) without a gateway: a new database at the current schema, {@code connections} pooled
 * connections, and a live node {@code live} (its heartbeat now) that the opened rows name. Register it as a static
 * field ({@code @RegisterExtension static final LedgerPool ledger = new LedgerPool(4);}); it is made before the class's
 * {@code @BeforeAll} methods run and closed after its tests.
 */
public final class LedgerPool implements BeforeAllCallback, AfterAllCallback {
  private final int connections;
  private Vertx vertx;
  private Pool pool;
  private String url;

  public LedgerPool(int connections) {
    this.connections = connections;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    vertx = Vertx.vertx();
    url = TestDatabase.newDatabase();
    pool = TestDatabase.pool(vertx, url, connections);
    sql("INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at) VALUES ('live', 'test', 1, now(), now())");
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    GatewayHarness.await(pool.close());
    GatewayHarness.await(vertx.close());
  }

  public Pool pool() {
    return pool;
  }

  public String url() {
    return url;
  }

  /** Runs one statement on a connection of its own (not the pool's), autocommitted. */
  public void sql(String statement) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }
}
