package dev.ledgerpost.testing;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * A real PostgreSQL lock held from a separate connection, the way a long report or a migration
 * would hold it: ACCESS EXCLUSIVE on the named tables until {@link #release()}.
 */
public final class TableLock implements AutoCloseable {
  private final Connection connection;
  private boolean held;

  private TableLock(Connection connection) {
    this.connection = connection;
  }

  public static TableLock acquire(String databaseUrl, String... tables) throws SQLException {
    return acquireMode(databaseUrl, "ACCESS EXCLUSIVE", tables);
  }

  /** EXCLUSIVE mode blocks every write but lets readers through (a long maintenance job, say). */
  public static TableLock writes(String databaseUrl, String... tables) throws SQLException {
    return acquireMode(databaseUrl, "EXCLUSIVE", tables);
  }

  private static TableLock acquireMode(String databaseUrl, String mode, String... tables) throws SQLException {
    Connection c = TestDatabase.connect(databaseUrl);
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("LOCK TABLE " + String.join(", ", tables) + " IN " + mode + " MODE");
    }
    TableLock lock = new TableLock(c);
    lock.held = true;
    return lock;
  }

  /**
   * A single number (count, version) read on the lock's own connection: while the lock is held no
   * other connection can read the locked tables, and no settle can commit, so this is what is durable.
   */
  public synchronized long queryLong(String sql) throws SQLException {
    try (Statement st = connection.createStatement(); java.sql.ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : -1;
    }
  }

  /** A single text value read on the lock's own connection, or null. */
  public synchronized String queryString(String sql) throws SQLException {
    try (Statement st = connection.createStatement(); java.sql.ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  public synchronized void release() throws SQLException {
    if (held) {
      held = false;
      connection.rollback();
      connection.close();
    }
  }

  @Override
  public void close() throws SQLException {
    release();
  }
}
