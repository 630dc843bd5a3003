package dev.ledgerpost.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
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
}
