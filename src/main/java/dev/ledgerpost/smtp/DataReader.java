package dev.ledgerpost.smtp;

import dev.ledgerpost.delivery.MessageData;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * Receives one DATA body line by line. It keeps the wire form untouched for relaying, hashes the
 * unstuffed message, finds the Message-ID header, and notes every reason to refuse the message; it
 * always reads to the terminating dot so the session stays in step with the client.
 *
 * <p>Only {@code <CRLF>.<CRLF>} ends the body (RFC 5321 §4.1.1.4). A dot line after a bare LF is the
 * SMTP smuggling trick: a server that ends DATA there runs whatever follows as commands, while the
 * next server in line reads it as part of the message. Here it is no end: everything up to the real
 * {@code <CRLF>.<CRLF>} belongs to the message, which is refused for its bare line ending.
 */
final class DataReader {
  /** RFC 5321 §4.5.3.1.6: 1000 octets with the CRLF. */
  static final int MAX_LINE = 998;
  private static final int MAX_HEADER_BYTES = 256 * 1024;
  private static final byte[] CRLF = {'\r', '\n'};

  enum Problem { NONE, BARE_LINE_ENDING, LINE_TOO_LONG, TOO_BIG }

  private final long maxSize;
  private final Buffer wire = Buffer.buffer(4096);
  private final MessageDigest sha256;
  private final StringBuilder headers = new StringBuilder();
  private boolean inHeaders = true;
  private long size;
  private Problem problem = Problem.NONE;
  /** Whether the bytes just before the next line are a CRLF: the DATA command's, then each line's own. */
  private boolean afterCrlf;

  DataReader(long maxSize) {
    this(maxSize, true);
  }

  /** @param dataLineCrlf whether the DATA command line ended in CRLF: it is the CRLF before a dot on the first line */
  DataReader(long maxSize, boolean dataLineCrlf) {
    this.maxSize = maxSize;
    this.afterCrlf = dataLineCrlf;
    try {
      this.sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Takes one line; true when it was the terminating dot. */
  boolean accept(Line line) {
    boolean dotCrlf = line.crlf() && !line.bareCr() && !line.tooLong() && line.isDot();
    if (dotCrlf && afterCrlf) {
      return true;
    }
    boolean lineAfterCrlf = afterCrlf;
    afterCrlf = line.crlf();
    if (!line.crlf() || line.bareCr() || (dotCrlf && !lineAfterCrlf)) {
      // The last: "." CRLF after a DATA line that ended in a bare LF. Relayed, it would end DATA downstream.
      note(Problem.BARE_LINE_ENDING);
    } else if (line.tooLong() || line.content().length > MAX_LINE) {
      note(Problem.LINE_TOO_LONG);
    }
    byte[] c = line.content();
    boolean stuffed = c.length > 0 && c[0] == '.';
    long messageBytes = (stuffed ? c.length - 1 : c.length) + 2L;
    size += messageBytes;
    if (size > maxSize) {
      note(Problem.TOO_BIG);
    }
    if (problem != Problem.NONE) {
      return false; // keep reading to the dot, but keep nothing
    }
    wire.appendBytes(c).appendBytes(CRLF);
    sha256.update(c, stuffed ? 1 : 0, stuffed ? c.length - 1 : c.length);
    sha256.update(CRLF);
    if (inHeaders) {
      if (c.length == 0) {
        inHeaders = false;
      } else if (headers.length() < MAX_HEADER_BYTES) {
        headers.append(new String(c, stuffed ? 1 : 0, stuffed ? c.length - 1 : c.length, StandardCharsets.UTF_8)).append('\n');
      }
    }
    return false;
  }

  private void note(Problem p) {
    if (problem == Problem.NONE) {
      problem = p;
    }
  }

  Problem problem() {
    return problem;
  }

  long size() {
    return size;
  }

  MessageData result() {
    return new MessageData(wire, size, HexFormat.of().formatHex(sha256.digest()), messageId(headers));
  }

  /** The Message-ID header's value (unfolded, trimmed), or null. */
  static String messageId(CharSequence headerBlock) {
    String[] lines = headerBlock.toString().split("\n");
    for (int i = 0; i < lines.length; i++) {
      String l = lines[i];
      if (l.length() >= 11 && l.substring(0, 11).toLowerCase(Locale.ROOT).equals("message-id:")) {
        StringBuilder v = new StringBuilder(l.substring(11));
        while (i + 1 < lines.length && !lines[i + 1].isEmpty()
            && (lines[i + 1].charAt(0) == ' ' || lines[i + 1].charAt(0) == '\t')) {
          v.append(lines[++i]);
        }
        String value = v.toString().trim();
        return value.length() > 998 ? value.substring(0, 998) : value;
      }
    }
    return null;
  }
}
