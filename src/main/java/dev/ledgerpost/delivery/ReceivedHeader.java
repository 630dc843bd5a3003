package dev.ledgerpost.delivery;

import java.nio.charset.StandardCharsets;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/** The one trace header the gateway adds (RFC 5321 §4.4); everything after it is the client's bytes. */
final class ReceivedHeader {
  private static final DateTimeFormatter DATE = DateTimeFormatter.ofPattern("EEE, d MMM yyyy HH:mm:ss Z", Locale.ENGLISH);

  private ReceivedHeader() {}

  static byte[] build(Submission s, String hostname, UUID id, List<String> recipients, ZonedDateTime when) {
    StringBuilder sb = new StringBuilder("Received: from ")
        .append(printable(s.helo() == null ? "unknown" : s.helo()))
        .append(" ([").append(printable(s.clientIp())).append("])\r\n\tby ")
        .append(hostname).append(" (Ledgerpost) with ").append(s.protocol())
        .append(" id ").append(id);
    if (recipients.size() == 1) {
      sb.append("\r\n\tfor <").append(printable(recipients.get(0))).append('>');
    }
    sb.append("; ").append(DATE.format(when)).append("\r\n");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** Client-supplied words go into a header: no control characters, nothing that could end the line. */
  private static String printable(String s) {
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length() && i < 255; i++) {
      char c = s.charAt(i);
      sb.append(c < 0x20 || c == 0x7f ? '?' : c);
    }
    return sb.toString();
  }
}
