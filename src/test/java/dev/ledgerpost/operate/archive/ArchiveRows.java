package dev.ledgerpost.operate.archive;

import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A ledger hour with a message of every status and a row in every table an export holds, plus messages just before and
 * at the end of the hour (outside it), written directly with JDBC. Texts hold what JSON and COPY must both keep: quotes,
 * backslashes, a tab, a newline, non-ASCII.
 */
final class ArchiveRows {
  static final String[] STATUSES = {"PENDING", "SENT", "FAILED_TEMP", "FAILED_PERM", "UNKNOWN", "RESOLVED_DELIVERED",
      "RESOLVED_NOT_DELIVERED"};
  static final String TRICKY = "quote \" backslash \\ tab \t newline \n é ✓ \\u0000 ,;|\u2028";

  /** What was written in the hour from {@code start}. */
  record Seeded(List<UUID> inRange, UUID before, UUID atEnd, UUID unknown) {}

  private ArchiveRows() {}

  /** A UUIDv7 of instant {@code t}; {@code n} (below 4096) makes ids of one instant differ and keeps them in order. */
  static UUID id(Instant t, int n) {
    return new UUID((t.toEpochMilli() << 16) | 0x7000L | n, 0x8000000000000000L | n);
  }

  static Seeded seed(String url, Instant start) throws Exception {
    List<UUID> inRange = new ArrayList<>();
    UUID unknown = null;
    UUID before = id(start.minusMillis(1), 1);
    UUID atEnd = id(start.plus(Duration.ofHours(1)), 0);
    try (Connection c = TestDatabase.connect(url)) {
      c.setAutoCommit(false);
      for (int i = 0; i < STATUSES.length; i++) {
        UUID id = id(start.plus(Duration.ofMinutes(i)), i);
        inRange.add(id);
        String recipients = switch (STATUSES[i]) {
          case "SENT" -> "ACCEPTED";
          case "PENDING" -> "PENDING";
          default -> STATUSES[i];
        };
        message(c, id, STATUSES[i], start.plus(Duration.ofMinutes(i)), i == 1 ? TRICKY : "a@example.com");
        recipient(c, id, 0, recipients);
        recipient(c, id, 1, "REJECTED");
        if (STATUSES[i].equals("PENDING")) {
          exec(c, "INSERT INTO stale_raises (message_id, raises, last_raised_at) VALUES (?, 2, now())", id);
        }
        if (STATUSES[i].equals("SENT")) { // a client's retry answered from it (docs/contract.md §1.13)
          exec(c, "INSERT INTO resubmissions (message_id, outcome, attempt_id, client_ip, helo) VALUES (?, 'already_relayed', "
              + "gen_random_uuid(), '192.0.2.7', 'client.example')", id);
        }
        if (STATUSES[i].equals("UNKNOWN")) {
          unknown = id;
          proposal(c, id, "OPEN");
        }
        if (STATUSES[i].startsWith("RESOLVED_")) {
          Long proposal = STATUSES[i].equals("RESOLVED_DELIVERED") ? proposal(c, id, "ACCEPTED") : null;
          try (PreparedStatement st = c.prepareStatement("INSERT INTO resolutions (message_id, outcome, operator, note, "
              + "proposal_id) VALUES (?, ?, 'alice', ?, ?)")) {
            st.setObject(1, id);
            st.setString(2, STATUSES[i].substring("RESOLVED_".length()));
            st.setString(3, TRICKY);
            st.setObject(4, proposal);
            st.executeUpdate();
          }
        }
      }
      for (UUID outside : List.of(before, atEnd)) {
        message(c, outside, "PENDING", Instant.ofEpochMilli(outside.getMostSignificantBits() >>> 16), "out@example.com");
        recipient(c, outside, 0, "PENDING");
        exec(c, "INSERT INTO stale_raises (message_id, raises, last_raised_at) VALUES (?, 1, now())", outside);
      }
      c.commit();
    }
    return new Seeded(inRange, before, atEnd, unknown);
  }

  /** One suppression list entry (docs/data-model.md §5.16), written as the table holds it; its times given. */
  record Suppression(UUID id, String address, String scope, String reason, String category, String source, UUID messageId,
      String reply, String addedBy, Instant addedAt, Instant expiresAt) {}

  static void suppress(String url, Suppression s) throws Exception {
    try (Connection c = TestDatabase.connect(url); PreparedStatement st = c.prepareStatement("""
        INSERT INTO suppressions (id, address, scope, reason, category, source, message_id, reply, added_by, added_at,
                                  expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""")) {
      st.setObject(1, s.id());
      st.setString(2, s.address());
      st.setString(3, s.scope());
      st.setString(4, s.reason());
      st.setString(5, s.category());
      st.setString(6, s.source());
      st.setObject(7, s.messageId());
      st.setString(8, s.reply());
      st.setString(9, s.addedBy());
      st.setTimestamp(10, Timestamp.from(s.addedAt()));
      st.setTimestamp(11, Timestamp.from(s.expiresAt()));
      st.executeUpdate();
    }
  }

  private static void message(Connection c, UUID id, String status, Instant at, String from) throws Exception {
    try (PreparedStatement st = c.prepareStatement("""
        INSERT INTO messages (id, intake, mail_from, message_id_header, size_bytes, body_sha256, route, status, version,
                              received_at, settled_at)
        VALUES (?, 'SMTP', ?, ?, 10, 'sha', 'smarthost:test', ?, 1, ?, ?)""")) {
      st.setObject(1, id);
      st.setString(2, from);
      st.setString(3, "<" + id + "@example.com>");
      st.setString(4, status);
      st.setTimestamp(5, Timestamp.from(at));
      st.setTimestamp(6, status.equals("PENDING") ? null : Timestamp.from(at.plusSeconds(1)));
      st.executeUpdate();
    }
  }

  private static void recipient(Connection c, UUID id, int idx, String status) throws Exception {
    try (PreparedStatement st = c.prepareStatement(
        "INSERT INTO recipients (message_id, idx, address, status, rcpt_reply) VALUES (?, ?, ?, ?, '250 2.1.5 ok')")) {
      st.setObject(1, id);
      st.setInt(2, idx);
      st.setString(3, "r" + idx + "@example.net");
      st.setString(4, status);
      st.executeUpdate();
    }
  }

  private static Long proposal(Connection c, UUID id, String state) throws Exception {
    try (PreparedStatement st = c.prepareStatement("""
        INSERT INTO reconcile_proposals (message_id, message_version, outcome, confidence, source, evidence_ref, evidence, state)
        VALUES (?, 1, 'DELIVERED', 'exact', 'postfix', ?, ?::jsonb, ?) RETURNING id""")) {
      st.setObject(1, id);
      st.setString(2, "Q" + id.toString().substring(0, 8) + state);
      st.setString(3, new io.vertx.core.json.JsonObject().put("summary", TRICKY).put("lines",
          new io.vertx.core.json.JsonArray().add("queued as ABC")).encode());
      st.setString(4, state);
      try (var rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static void exec(Connection c, String sql, UUID id) throws Exception {
    try (PreparedStatement st = c.prepareStatement(sql)) {
      st.setObject(1, id);
      st.executeUpdate();
    }
  }
}
