package dev.ledgerpost.smtp;

import java.nio.charset.StandardCharsets;

/**
 * One line as it came off the socket. {@code content} excludes the terminator; {@code crlf} is false
 * for a bare LF; {@code bareCr} marks a CR inside the line; {@code tooLong} means content was cut.
 */
public record Line(byte[] content, boolean crlf, boolean bareCr, boolean tooLong) {

  public static Line of(String text) {
    return new Line(text.getBytes(StandardCharsets.UTF_8), true, false, false);
  }

  /** A command line as text; SMTP commands are ASCII, SMTPUTF8 addresses are UTF-8. */
  public String text() {
    return new String(content, StandardCharsets.UTF_8);
  }

  public boolean isDot() {
    return content.length == 1 && content[0] == '.';
  }
}
