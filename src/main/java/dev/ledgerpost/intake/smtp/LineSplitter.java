package dev.ledgerpost.intake.smtp;

import io.vertx.core.buffer.Buffer;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Cuts a byte stream into lines at LF, remembering how each line really ended, so that the session
 * can refuse bare LF and bare CR (SMTP smuggling) instead of guessing. A line longer than the limit
 * is cut, flagged, and the rest of it up to the next LF is discarded: memory stays bounded.
 */
public final class LineSplitter {
  private final int maxContent;
  private byte[] buf = new byte[256];
  private int len;
  private boolean overflow;
  private boolean bareCr;

  public LineSplitter(int maxContent) {
    this.maxContent = maxContent;
  }

  public void feed(Buffer data, Consumer<Line> sink) {
    byte[] bytes = data.getBytes();
    feed(bytes, 0, bytes.length, sink);
  }

  /** The same for bytes already copied off the socket. */
  public void feed(byte[] data, int off, int len, Consumer<Line> sink) {
    int end = off + len;
    for (int i = off; i < end; ) {
      i += feedLine(data, i, end - i, sink);
    }
  }

  /**
   * Feeds bytes up to and including the first LF, and no further: the transport pulls one line at a time,
   * so that the bytes after a BDAT command are never cut into lines. Answers how many bytes it took (all of
   * them when there is no LF among them; the line then stays {@link #partial()}).
   */
  public int feedLine(byte[] data, int off, int len, Consumer<Line> sink) {
    int end = off + len;
    for (int i = off; i < end; i++) {
      byte b = data[i];
      if (b == '\n') {
        emit(sink);
        return i + 1 - off;
      }
      append(b);
    }
    return len;
  }

  /** True while part of a line has arrived without its end. */
  public boolean partial() {
    return len > 0 || overflow;
  }

  /** Forgets buffered input: after STARTTLS nothing sent in clear may be acted on (CVE-2011-0411). */
  public void reset() {
    len = 0;
    overflow = false;
    bareCr = false;
  }

  private void append(byte b) {
    if (len > 0 && buf[len - 1] == '\r') {
      bareCr = true; // a CR that turned out not to precede LF
    }
    if (len >= maxContent + 1) { // one extra byte for a CR that may still precede the LF
      overflow = true;
      buf[len - 1] = b; // keep only the last byte: it tells whether the line ends in CRLF
      return;
    }
    if (len == buf.length) {
      buf = Arrays.copyOf(buf, Math.min(buf.length * 2, maxContent + 1));
    }
    buf[len++] = b;
  }

  private void emit(Consumer<Line> sink) {
    boolean crlf = len > 0 && buf[len - 1] == '\r';
    int contentLen = crlf ? len - 1 : len;
    // Without a CR, the byte kept for it is content: one too many, or (after overflow) the line's last byte.
    boolean tooLong = overflow || contentLen > maxContent;
    Line line = new Line(Arrays.copyOf(buf, Math.min(contentLen, maxContent)), crlf, bareCr, tooLong);
    reset();
    sink.accept(line);
  }
}
