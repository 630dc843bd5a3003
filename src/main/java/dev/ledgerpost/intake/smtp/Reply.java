package dev.ledgerpost.intake.smtp;

import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * An SMTP reply, built once and immutable: code, enhanced status code (RFC 3463; absent only where
 * RFC 2034 forbids it: the greeting, EHLO/HELO and intermediate 3xx replies) and text lines.
 */
public record Reply(int code, String enhanced, List<String> lines) {

  public Reply {
    lines = List.copyOf(lines);
  }

  public static Reply of(int code, String enhanced, String text) {
    return new Reply(code, enhanced, List.of(text));
  }

  public static Reply plain(int code, String text) {
    return new Reply(code, null, List.of(text));
  }

  public boolean positive() {
    return code < 400;
  }

  /** The first line's text, as a client library would report it. */
  public String text() {
    return lines.get(0);
  }

  public String toWire() {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < lines.size(); i++) {
      sb.append(code).append(i == lines.size() - 1 ? ' ' : '-');
      if (enhanced != null) {
        sb.append(enhanced).append(' ');
      }
      sb.append(lines.get(i)).append("\r\n");
    }
    return sb.toString();
  }

  /**
   * The wire form's bytes: US-ASCII, anything else one '?' (a surrogate pair too), as {@code toWire().getBytes(US_ASCII)}
   * gives them. Written straight into the buffer, without a StringBuilder, a String and a byte[] for every reply sent
   * (issue 33: 7 KiB a message).
   */
  public Buffer toBuffer() {
    if (code < 100 || code > 999) {
      return Buffer.buffer(toWire().getBytes(StandardCharsets.US_ASCII));
    }
    int length = 0;
    for (String line : lines) {
      length += 4 + (enhanced == null ? 0 : asciiLength(enhanced) + 1) + asciiLength(line) + 2;
    }
    Buffer b = Buffer.buffer(length);
    for (int i = 0; i < lines.size(); i++) {
      b.appendByte((byte) ('0' + code / 100)).appendByte((byte) ('0' + code / 10 % 10)).appendByte((byte) ('0' + code % 10))
          .appendByte((byte) (i == lines.size() - 1 ? ' ' : '-'));
      if (enhanced != null) {
        appendAscii(b, enhanced).appendByte((byte) ' ');
      }
      appendAscii(b, lines.get(i)).appendByte((byte) '\r').appendByte((byte) '\n');
    }
    return b;
  }

  private static int asciiLength(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++, n++) {
      if (Character.isHighSurrogate(s.charAt(i)) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      }
    }
    return n;
  }

  private static Buffer appendAscii(Buffer b, String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        b.appendByte((byte) c);
      } else {
        if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        }
        b.appendByte((byte) '?');
      }
    }
    return b;
  }

  @Override
  public String toString() {
    return toWire().trim();
  }
}
