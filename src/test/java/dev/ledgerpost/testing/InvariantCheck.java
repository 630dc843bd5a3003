package dev.ledgerpost.testing;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * docs/contract.md §3.3's invariants checked from outside after a run: what each client heard, what the ledger
 * holds, and what the downstream received must agree. Each submission carries a unique Message-ID.
 */
public final class InvariantCheck {
  private static final Pattern UUID = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

  /** What one submission's client heard: an accepted id (250/200/202) or a refusal that promised nothing was sent. */
  public record Heard(String messageId, boolean accepted, String ledgerId, boolean mustNotBeDelivered, String reply) {}

  public record Result(int accepted, int refused, int pending, int delivered, List<String> violations) {
    public boolean ok() {
      return violations.isEmpty();
    }

    @Override
    public String toString() {
      return String.format("%d accepted (%d still PENDING), %d refused, %d delivered downstream, %d invariant violation(s)%s",
          accepted, pending, refused, delivered, violations.size(), violations.isEmpty() ? "" : ": " + violations);
    }
  }

  private InvariantCheck() {}

  public static Result check(String databaseUrl, List<ScriptedSmtpServer.Received> downstream, List<Heard> heard)
      throws Exception {
    try (Connection c = TestDatabase.connect(databaseUrl)) {
      return check(c, downstream, heard);
    }
  }

  /** The same, reading the ledger over {@code ledger} (a server of the test's own, such as {@link PatroniLedger}'s). */
  public static Result check(Connection ledger, List<ScriptedSmtpServer.Received> downstream, List<Heard> heard)
      throws Exception {
    List<String> violations = new ArrayList<>();
    Map<String, String> statusById = new HashMap<>();
    Map<String, String> idByMessageId = new HashMap<>();
    try (Statement st = ledger.createStatement();
        ResultSet rs = st.executeQuery("SELECT id, status, message_id_header FROM messages")) {
      while (rs.next()) {
        statusById.put(rs.getString(1), rs.getString(2));
        if (idByMessageId.put(rs.getString(3), rs.getString(1)) != null) {
          violations.add("two ledger rows for " + rs.getString(3));
        }
      }
    }
    Map<String, String> deliveredLedgerIdByMessageId = new HashMap<>();
    for (ScriptedSmtpServer.Received r : downstream) {
      String text = r.text();
      // The gateway's Received: header (the first header, ending at its ';') names the ledger id.
      Matcher trace = UUID.matcher(text.substring(0, Math.max(0, text.indexOf(';'))));
      String ledgerId = trace.find() ? trace.group() : null;
      String messageId = header(text, "Message-ID");
      if (ledgerId == null || !statusById.containsKey(ledgerId)) {
        violations.add("delivered without a ledger row: " + messageId);
      }
      if (deliveredLedgerIdByMessageId.put(messageId, ledgerId) != null) {
        violations.add("delivered twice: " + messageId);
      }
    }
    int accepted = 0;
    int refused = 0;
    int pending = 0;
    for (Heard h : heard) {
      if (h.accepted()) {
        accepted++;
        String status = statusById.get(h.ledgerId());
        if (status == null) {
          violations.add("client told accepted but no ledger row: " + h.messageId());
        } else if (status.equals("PENDING")) {
          pending++;
        } else if (!status.equals("SENT") && !status.equals("RESOLVED_DELIVERED")) {
          violations.add("client told accepted but ledger says " + status + ": " + h.messageId());
        }
        if (!h.ledgerId().equals(deliveredLedgerIdByMessageId.get(h.messageId()))) {
          violations.add("client told accepted but the downstream does not have it once: " + h.messageId());
        }
      } else {
        refused++;
        if (h.mustNotBeDelivered() && deliveredLedgerIdByMessageId.containsKey(h.messageId())) {
          violations.add("client told '" + h.reply() + "' but it was delivered: " + h.messageId());
        }
      }
    }
    return new Result(accepted, refused, pending, downstream.size(), List.copyOf(violations));
  }

  /** The ledger id a reply names, or null. */
  public static String ledgerId(String reply) {
    Matcher m = UUID.matcher(reply);
    return m.find() ? m.group() : null;
  }

  private static String header(String message, String name) {
    for (String line : message.split("\r\n")) {
      if (line.isEmpty()) {
        break;
      }
      if (line.regionMatches(true, 0, name + ":", 0, name.length() + 1)) {
        return line.substring(name.length() + 1).trim();
      }
    }
    return null;
  }
}
