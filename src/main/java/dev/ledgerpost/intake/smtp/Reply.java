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

  public Buffer toBuffer() {
    return Buffer.buffer(toWire().getBytes(StandardCharsets.US_ASCII));
  }

  @Override
  public String toString() {
    return toWire().trim();
  }
}
