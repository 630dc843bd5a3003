package dev.ledgerpost.intake.smtp;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * One line as it came off the socket. {@code content} excludes the terminator; {@code crlf} is false
 * for a bare LF; {@code bareCr} marks a CR inside the line; {@code tooLong} means content was cut.
 */
public record Line(byte[] content, boolean crlf, boolean bareCr, boolean tooLong) {

  public static Line of(String text) {
    return new Line(text.getBytes(StandardCharsets.UTF_8), true, false, false);
  }

  /**
   * A command line as text; SMTP commands are ASCII, SMTPUTF8 addresses are UTF-8. Bytes that are not UTF-8 read as
   * U+FFFD here: a command that keeps its argument (an address, the HELO name) checks {@link #utf8} first.
   */
  public String text() {
    return new String(content, StandardCharsets.UTF_8);
  }

  /** Whether the line is well-formed UTF-8 (no stray, overlong or surrogate sequence); plain ASCII always is. */
  public boolean utf8() {
    for (byte b : content) {
      if (b < 0) {
        try {
          StandardCharsets.UTF_8.newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(content));
          return true;
        } catch (CharacterCodingException e) {
          return false;
        }
      }
    }
    return true;
  }

  public boolean isDot() {
    return content.length == 1 && content[0] == '.';
  }
}
