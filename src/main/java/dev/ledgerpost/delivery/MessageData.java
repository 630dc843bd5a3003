package dev.ledgerpost.delivery;

import io.vertx.core.buffer.Buffer;
import java.util.Locale;

/**
 * A received message ready to relay. {@code wire} holds the client's lines exactly as they crossed
 * the socket (CRLF-terminated, still dot-stuffed, without the terminating dot line), so relaying it
 * changes no byte. {@code size} and {@code sha256} describe the message itself (unstuffed).
 */
public record MessageData(Buffer wire, long size, String sha256, String messageIdHeader) {
  /** At most this much of a Message-ID is recorded: a line's limit (RFC 5322 §2.1.1). */
  private static final int MAX_MESSAGE_ID = 998;

  /**
   * The Message-ID header's value among a message's header lines (unfolded, trimmed, at most 998 characters), or
   * null; SMTP and the send API read it the same way.
   */
  public static String messageId(String[] headerLines) {
    for (int i = 0; i < headerLines.length; i++) {
      String l = headerLines[i];
      if (l.length() >= 11 && l.substring(0, 11).toLowerCase(Locale.ROOT).equals("message-id:")) {
        StringBuilder v = new StringBuilder(l.substring(11));
        while (i + 1 < headerLines.length && !headerLines[i + 1].isEmpty()
            && (headerLines[i + 1].charAt(0) == ' ' || headerLines[i + 1].charAt(0) == '\t')) {
          v.append(headerLines[++i]);
        }
        String value = v.toString().trim();
        return value.length() > MAX_MESSAGE_ID ? value.substring(0, MAX_MESSAGE_ID) : value;
      }
    }
    return null;
  }
}
