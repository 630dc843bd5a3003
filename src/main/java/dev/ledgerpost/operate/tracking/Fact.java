package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.reconcile.PostfixLog;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.Locale;

/**
 * One Postfix delivery line about a queue id, as a tracking fact before its recipient is found (docs/design.md §8.13):
 * the state it reports, the remote host, the DSN code, the reply (sanitised and bounded), its category and rule, and
 * the line itself as evidence with its SHA-256 as the event's key.
 */
record Fact(String queueId, Instant at, String to, String origTo, String state, String remoteHost, String dsn, String reply,
    String category, String rule, String evidence, byte[] eventKey) {
  static final String SOURCE = "postfix-log";
  /** A returned DSN's facts (docs/design.md §8.13, "Returned DSNs"). */
  static final String DSN_SOURCE = "dsn";
  /** A downstream Ledgerpost's own facts about the rows we relayed to it (docs/design.md §8.13, "Downstream Ledgerpost"). */
  static final String LEDGERPOST_SOURCE = "ledgerpost";
  /** The longest reply kept; the rest is cut. */
  static final int MAX_REPLY = 512;
  static final int MAX_HOST = 255;

  /** The fact a delivery line reports, or null for a status tracking does not record. */
  static Fact of(PostfixLog.Line line, PostfixLog.Delivery d, Classifier classifier) {
    String state = switch (d.status()) {
      case "sent" -> "delivered";
      case "deferred" -> "deferred";
      case "bounced" -> "bounced";
      case "expired" -> "expired";
      default -> null;
    };
    if (state == null) {
      return null;
    }
    String reply = sanitised(d.detail(), MAX_REPLY);
    String category = null;
    String rule = null;
    if (!state.equals("delivered")) {
      Classifier.Classification c = classifier.classify(d.dsn(), remotePart(reply));
      category = c.category().label();
      rule = c.rule();
    }
    return new Fact(line.queueId(), line.at(), d.to(), d.origTo(), state, sanitised(d.relay(), MAX_HOST), d.dsn(), reply,
        category, rule, sanitised(line.raw(), Integer.MAX_VALUE), sha256(line.raw()));
  }

  /**
   * The remote server's own words when Postfix quotes them ("host mx[192.0.2.1] said: 550 5.1.1 ..."): the rules are
   * about the reply, and a host's name ("mx.spamexperts.example") must not decide a category.
   */
  static String remotePart(String reply) {
    if (reply == null) {
      return null;
    }
    int said = reply.indexOf(" said: ");
    return said < 0 ? reply : reply.substring(said + " said: ".length());
  }

  /** Control characters become spaces (a reply is one line in a JSON string and a console cell), cut at {@code max}. */
  static String sanitised(String s, int max) {
    if (s == null) {
      return null;
    }
    StringBuilder b = new StringBuilder(Math.min(s.length(), max));
    for (int i = 0; i < s.length() && b.length() < max; i++) {
      char c = s.charAt(i);
      b.append(c < 0x20 || c == 0x7f ? ' ' : c);
    }
    return b.toString();
  }

  /** Whether {@code address} is this line's recipient (its original address first: our recipient before rewriting). */
  boolean concerns(String address) {
    String a = address.toLowerCase(Locale.ROOT);
    return (origTo != null && origTo.toLowerCase(Locale.ROOT).equals(a)) || (to != null && to.toLowerCase(Locale.ROOT).equals(a));
  }

  static byte[] sha256(String raw) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(raw.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
