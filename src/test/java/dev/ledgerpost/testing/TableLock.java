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
    Connection c = TestDatabase.connect(databaseUrl);
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("LOCK TABLE " + String.join(", ", tables) + " IN ACCESS EXCLUSIVE MODE");
    }
    TableLock lock = new TableLock(c);
    lock.held = true;
    return lock;
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
