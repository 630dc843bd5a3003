package dev.ledgerpost.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Ledger rows written and read directly with JDBC, the way the gateway's open would leave them: for
 * tests that need a PENDING row of a given age, or many of them, without sending mail.
 */
public final class LedgerRows {
  private LedgerRows() {}

  /** A message at the given status (version 1) with one recipient at {@code recipientStatus}. */
  public static void insert(String url, UUID id, String status, String recipientStatus, Instant receivedAt,
      String messageIdHeader) throws Exception {
    insertAll(url, List.of(id), status, recipientStatus, receivedAt, messageIdHeader);
  }

  public static void insertPending(String url, List<UUID> ids, Instant receivedAt) throws Exception {
    insertAll(url, ids, "PENDING", "PENDING", receivedAt, null);
  }

  private static void insertAll(String url, List<UUID> ids, String status, String recipientStatus, Instant receivedAt,
      String messageIdHeader) throws Exception {
    try (Connection c = TestDatabase.connect(url)) {
      c.setAutoCommit(false);
      try (PreparedStatement m = c.prepareStatement("""
              INSERT INTO messages (id, intake, mail_from, message_id_header, size_bytes, body_sha256, route, status,
                                    version, received_at)
              VALUES (?, 'SMTP', 'a@example.com', ?, 10, 'sha', 'smarthost:test', ?, 1, ?)""");
          PreparedStatement r = c.prepareStatement("""
              INSERT INTO recipients (message_id, idx, address, status, rcpt_reply)
              VALUES (?, 0, 'b@example.net', ?, '250 2.1.5 ok')""")) {
        for (UUID id : ids) {
          m.setObject(1, id);
          m.setString(2, messageIdHeader != null ? messageIdHeader : "<" + id + "@example.com>");
          m.setString(3, status);
          m.setTimestamp(4, Timestamp.from(receivedAt));
          m.addBatch();
          r.setObject(1, id);
          r.setString(2, recipientStatus);
          r.addBatch();
        }
        m.executeBatch();
        r.executeBatch();
      }
      c.commit();
    }
  }

  public static String status(String url, UUID id) throws Exception {
    return string(url, "SELECT status FROM messages WHERE id = '" + id + "'");
  }

  public static String string(String url, String sql) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  public static long count(String url, String sql) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }

  /**
   * Every column that can hold text, of every table and view but Flyway's history; a partitioned table through its
   * parent, which reads its partitions. For the erasure tests: where an address could still be.
   */
  public static List<String[]> textColumns(Connection c) throws SQLException {
    List<String[]> columns = new ArrayList<>();
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("""
        SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name <> 'flyway_schema_history'
           AND table_name NOT IN (SELECT k.relname::text FROM pg_class k WHERE k.relispartition)
           AND (data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
                OR (data_type = 'ARRAY' AND udt_name IN ('_text', '_varchar')))
         ORDER BY table_name, ordinal_position""")) {
      while (rs.next()) {
        columns.add(new String[] {rs.getString(1), rs.getString(2)});
      }
    }
    if (columns.size() <= 40) {
      throw new AssertionError("the scan sees " + columns.size() + " text columns: not the ledger's (more than 40)");
    }
    return columns;
  }

  /** "table.column" -> how many of its values hold {@code needle}, ignoring case; columns without one are left out. */
  public static Map<String, Long> cellsHolding(String url, String needle) throws Exception {
    Map<String, Long> found = new TreeMap<>();
    try (Connection c = TestDatabase.connect(url)) {
      for (String[] col : textColumns(c)) {
        try (PreparedStatement st = c.prepareStatement("SELECT count(*) FROM \"" + col[0] + "\" WHERE strpos(lower(\"" + col[1]
            + "\"::text), lower(?)) > 0")) {
          st.setString(1, needle);
          try (ResultSet rs = st.executeQuery()) {
            rs.next();
            if (rs.getLong(1) > 0) {
              found.put(col[0] + "." + col[1], rs.getLong(1));
            }
          }
        }
      }
    }
    return found;
  }
}
