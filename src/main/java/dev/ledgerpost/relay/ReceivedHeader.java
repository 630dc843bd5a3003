package dev.ledgerpost.relay;

import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The one trace header the gateway adds; everything after it is the client's bytes. RFC 5321 §4.4's
 * {@code Received: from <Extended-Domain> by <domain> with <protocol> id <id> [for <path>]; <date-time>}, with
 * the protocol names of RFC 3848 (ESMTPS, ESMTPA, ESMTPSA) and RFC 6531 (UTF8SMTP...), and, as Postfix writes
 * it, the client's TLS protocol and cipher as a comment when known:
 *
 * <pre>
 * Received: from client.example ([192.0.2.7])
 *         (using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)
 *         by gateway.example (Ledgerpost) with ESMTPS id 0190f2c4-...
 *         for &lt;bob@example.net&gt;; Tue, 3 Mar 2026 10:00:00 +0000
 * </pre>
 *
 * A HELO that is neither a domain nor an address literal cannot stand where the grammar wants one: the
 * client's address literal takes its place, and the HELO goes into a comment.
 */
final class ReceivedHeader {
  private static final DateTimeFormatter DATE = DateTimeFormatter.ofPattern("EEE, d MMM yyyy HH:mm:ss Z", Locale.ENGLISH);
  /**
   * The last date formatted, by its second and offset (all the format shows): the messages of one second share it, so
   * java.time formats once a second, not once a message (issue 33). Replaced whole, so a reader sees a consistent one.
   */
  private record Stamp(long epochSecond, ZoneOffset offset, String text) {}

  private static volatile Stamp lastStamp = new Stamp(Long.MIN_VALUE, ZoneOffset.UTC, "");

  private ReceivedHeader() {}

  /** {@code when} as RFC 5322's date-time ("Tue, 3 Mar 2026 10:00:00 +0000"). */
  static String date(ZonedDateTime when) {
    long second = when.toEpochSecond();
    Stamp s = lastStamp;
    if (s.epochSecond() != second || !s.offset().equals(when.getOffset())) {
      s = new Stamp(second, when.getOffset(), DATE.format(when));
      lastStamp = s;
    }
    return s.text();
  }

  static byte[] build(Submission s, String hostname, UUID id, List<String> recipients, ZonedDateTime when) {
    String literal = addressLiteral(s.clientIp());
    String helo = s.helo() == null ? "unknown" : s.helo();
    StringBuilder sb = new StringBuilder(256).append("Received: from ");
    if (helo.length() <= 255 && (isDomain(helo) || isAddressLiteral(helo))) {
      sb.append(helo).append(" (").append(literal).append(')');
    } else {
      sb.append(literal).append(" (HELO ").append(comment(helo)).append(')');
    }
    if (s.tlsCipher() != null) {
      sb.append("\r\n\t(using ").append(comment(s.tlsCipher())).append(')');
    }
    sb.append("\r\n\tby ").append(hostname).append(" (Ledgerpost) with ").append(s.protocol())
        .append(" id ").append(id);
    if (recipients.size() == 1) {
      sb.append("\r\n\tfor <").append(printable(recipients.get(0))).append('>');
    }
    sb.append("; ").append(date(when)).append("\r\n");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * RFC 5321 §4.1.2 Domain: sub-domains of letters, digits and inner hyphens (an underscore is tolerated, as MTAs do),
   * a final dot allowed. Read by hand, not by a regex, once a message (issue 33); ReceivedHeaderTest holds it to
   * {@code [A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?}.
   */
  static boolean isDomain(String s) {
    int n = s.length();
    if (n > 1 && s.charAt(n - 1) == '.') {
      n--; // the final dot; the rest must still be a domain
    }
    int labelStart = 0;
    for (int i = 0; i <= n; i++) {
      char c = i < n ? s.charAt(i) : '.';
      if (c == '.') {
        if (i == labelStart || s.charAt(labelStart) == '-' || s.charAt(i - 1) == '-') {
          return false; // an empty label, or one starting or ending with a hyphen
        }
        labelStart = i + 1;
      } else if (!(wordChar(c) || c == '-')) {
        return false;
      }
    }
    return true;
  }

  private static boolean wordChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  /**
   * RFC 5321 §4.1.3 address-literal, loosely: brackets around what may be an address (checked by no one downstream).
   * By hand, as {@link #isDomain}; ReceivedHeaderTest holds it to {@code \[[A-Za-z0-9:.]+\]}.
   */
  static boolean isAddressLiteral(String s) {
    int n = s.length();
    if (n < 3 || s.charAt(0) != '[' || s.charAt(n - 1) != ']') {
      return false;
    }
    for (int i = 1; i < n - 1; i++) {
      char c = s.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' || c == '.')) {
        return false;
      }
    }
    return true;
  }

  /** {@code [192.0.2.7]}, or {@code [IPv6:2001:db8::7]} (RFC 5321 §4.1.3); "unknown" stays as it is in brackets. */
  static String addressLiteral(String ip) {
    String p = printable(ip == null ? "unknown" : ip);
    return p.indexOf(':') >= 0 ? "[IPv6:" + p + "]" : "[" + p + "]";
  }

  /** Client-supplied words go into a header: no control characters, nothing that could end the line. */
  private static String printable(String s) {
    if (s.length() <= 255 && printableAlready(s)) {
      return s; // nearly always: no copy (issue 33)
    }
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length() && i < 255; i++) {
      char c = s.charAt(i);
      sb.append(c < 0x20 || c == 0x7f ? '?' : c);
    }
    return sb.toString();
  }

  private static boolean printableAlready(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        return false;
      }
    }
    return true;
  }

  /** Printable and fit for a comment (RFC 5322 ctext): no parenthesis or backslash to unbalance it. */
  private static String comment(String s) {
    return printable(s).replace('(', '?').replace(')', '?').replace('\\', '?');
  }
}
