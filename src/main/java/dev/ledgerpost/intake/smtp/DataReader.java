package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.ledger.MessageTags;
import dev.ledgerpost.relay.MessageData;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Receives one DATA body, as lines ({@link #accept}) or as the raw bytes off the socket ({@link #feed}, the
 * transport's fast path; both apply the same rules). It keeps the wire form untouched for relaying, hashes the
 * unstuffed message, finds the Message-ID header, and notes every reason to refuse the message; it
 * always reads to the terminating dot so the session stays in step with the client.
 *
 * <p>Only {@code <CRLF>.<CRLF>} ends the body (RFC 5321 §4.1.1.4). A dot line after a bare LF is the
 * SMTP smuggling trick: a server that ends DATA there runs whatever follows as commands, while the
 * next server in line reads it as part of the message. Here it is no end: everything up to the real
 * {@code <CRLF>.<CRLF>} belongs to the message, which is refused for its bare line ending.
 *
 * <p>While in the header section it also picks out the gateway's control headers ({@link ControlHeaders}), and with
 * {@code smtp.stripControlHeaders} keeps them out of the wire form as it goes (they are still hashed: size and
 * SHA-256 describe what the client sent; sentSha256 what went down): no second pass over the body.
 */
final class DataReader {
  /** RFC 5321 §4.5.3.1.6: 1000 octets with the CRLF. */
  static final int MAX_LINE = 998;
  private static final int MAX_HEADER_BYTES = 256 * 1024;
  private static final byte[] CRLF = {'\r', '\n'};

  enum Problem { NONE, BARE_LINE_ENDING, LINE_TOO_LONG, TOO_BIG }

  private final long maxSize;
  /**
   * The wire form, made on the first bytes ({@link #wire(int)}): a whole small body that came in one read gets a
   * buffer of its size, not the 4 KiB floor (issue 33: the floor was most of a 2 KB message's buffer).
   */
  private Buffer wire;
  /** The capacity the wire form starts with when the body's size is not known on its first bytes: the SIZE= hint's. */
  private final int initialCapacity;
  private final MessageDigest sha256;
  /**
   * The header section's lines (unstuffed), for the Message-ID, while they total under {@link #MAX_HEADER_BYTES}
   * characters. Kept as lines (issue 33: they were joined into one text, then split again at the end).
   */
  private final List<String> headerLines = new ArrayList<>();
  private long headerChars;
  private boolean inHeaders = true;
  private long size;
  private Problem problem = Problem.NONE;
  /** Whether the bytes just before the next line are a CRLF: the DATA command's, then each line's own. */
  private boolean afterCrlf;
  private final ControlHeaders control = new ControlHeaders();
  /** smtp.stripControlHeaders: the control headers are not relayed. */
  private final boolean strip;
  /** The message's tags and metadata once the body is complete ({@link #finishTags}). */
  private MessageTags tags = MessageTags.NONE;
  /**
   * Bytes of the header section so far: control headers are looked for in its first {@link #MAX_HEADER_BYTES}, as
   * the Message-ID is (and as {@link ChunkReader} looks for both).
   */
  private long headerBytes;

  DataReader(long maxSize) {
    this(maxSize, true);
  }

  /** @param dataLineCrlf whether the DATA command line ended in CRLF: it is the CRLF before a dot on the first line */
  DataReader(long maxSize, boolean dataLineCrlf) {
    this(maxSize, dataLineCrlf, 0);
  }

  /** @param sizeHint the size the client declared (SIZE=), 0 if none: the buffer starts that large */
  DataReader(long maxSize, boolean dataLineCrlf, long sizeHint) {
    this(maxSize, dataLineCrlf, sizeHint, false);
  }

  /** @param strip whether the control headers stay out of the relayed bytes (smtp.stripControlHeaders) */
  DataReader(long maxSize, boolean dataLineCrlf, long sizeHint, boolean strip) {
    this.strip = strip;
    this.maxSize = maxSize;
    // The wire form is a little larger than the message (dot-stuffing); a wrong hint costs a regrowth only.
    this.initialCapacity = (int) Math.max(4096, Math.min(sizeHint + sizeHint / 64 + 64, Math.min(maxSize, 64L << 20)));
    this.afterCrlf = dataLineCrlf;
    this.sha256 = MessageData.newSha256();
  }

  private static boolean stuffedDot(byte[] content) {
    return content.length > 0 && content[0] == '.';
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
    } else if (line.tooLong() || line.content().length - (stuffedDot(line.content()) ? 1 : 0) > MAX_LINE) {
      note(Problem.LINE_TOO_LONG); // the transparency dot does not count (RFC 5321 §4.5.3.1.6)
    }
    byte[] c = line.content();
    boolean stuffed = stuffedDot(c);
    long messageBytes = (stuffed ? c.length - 1 : c.length) + 2L;
    size += messageBytes;
    if (size > maxSize) {
      note(Problem.TOO_BIG);
    }
    if (problem != Problem.NONE) {
      return false; // keep reading to the dot, but keep nothing
    }
    boolean controlLine = false;
    if (inHeaders) {
      if (c.length == 0) {
        inHeaders = false;
        control.close();
      } else {
        controlLine = headerBytes < MAX_HEADER_BYTES && control.line(c, stuffed ? 1 : 0, c.length);
        headerBytes += c.length + 2L;
        if (headerChars < MAX_HEADER_BYTES) {
          header(new String(c, stuffed ? 1 : 0, stuffed ? c.length - 1 : c.length, StandardCharsets.UTF_8));
        }
      }
    }
    if (!(strip && controlLine)) {
      wire(initialCapacity).appendBytes(c).appendBytes(CRLF);
    }
    sha256.update(c, stuffed ? 1 : 0, stuffed ? c.length - 1 : c.length);
    sha256.update(CRLF);
    return false;
  }

  // --- The bulk path: the body as it comes off the socket, without a Line per line. Same rules as accept().

  /** Bytes of the line under way that an earlier chunk ended in (it may yet be the terminating dot). */
  private byte[] carry = NO_CARRY;
  /** A body that comes in one read never carries a line: its carry is made when first needed. */
  private static final byte[] NO_CARRY = new byte[0];
  private int carryLen;

  /**
   * Takes the next bytes of the body as they came off the socket; answers the index just after the
   * terminating {@code .<CRLF>} when it is in this chunk (what follows are commands), or -1 when every
   * byte was body. Whatever the chunk boundaries, the outcome equals feeding the same bytes line by line
   * to {@link #accept(Line)}; a good message's lines are kept and hashed in runs, not one by one.
   */
  int feed(byte[] b, int off, int len) {
    int end = off + len;
    if (wire == null) {
      // A read that ends in the terminating dot holds the whole body (and what was carried from before): size the
      // wire form to it. Else the body's size is unknown yet: as large as hinted, 4 KiB at least.
      boolean endsHere = len >= 5 && b[end - 5] == '\r' && b[end - 4] == '\n' && b[end - 3] == '.' && b[end - 2] == '\r'
          && b[end - 1] == '\n';
      wire(endsHere ? len + carryLen : initialCapacity);
    }
    int lineStart = off;
    int keepFrom = off; // start of the bytes of this chunk not yet appended to the wire
    int pos = off;
    while (pos < end) {
      int nl = indexOfLf(b, pos, end);
      if (nl < 0) {
        break;
      }
      byte[] lb;
      int ls;
      int ll;
      long dropped = 0;
      boolean droppedCr = false;
      if (carryLen > 0 || carryDropped > 0) { // the line began in an earlier chunk: join it, then handle it whole
        appendCarry(b, lineStart, nl + 1 - lineStart);
        lb = carry;
        ls = 0;
        ll = carryLen;
        dropped = carryDropped;
        droppedCr = carryDroppedCr;
        carryLen = 0;
        carryDropped = 0;
        carryDroppedCr = false;
      } else {
        lb = b;
        ls = lineStart;
        ll = nl + 1 - lineStart;
      }
      int verdict = line(lb, ls, ll, dropped, droppedCr);
      if (verdict == END) {
        if (lb == b) {
          keep(b, keepFrom, lineStart);
        }
        return nl + 1;
      }
      if (lb != b) { // the joined line, whole (keepFrom is still this chunk's start: nothing before it)
        if (verdict == KEEP) {
          keep(lb, 0, ll);
        } else if (verdict == KEEP_STUFFED) {
          keepStuffed(lb, 0, ll);
        } else if (verdict == HASH_ONLY) {
          sha256.update(lb, 0, ll);
        }
        keepFrom = nl + 1;
      } else if (verdict == HASH_ONLY) {
        keep(b, keepFrom, lineStart);
        sha256.update(b, lineStart, ll);
        keepFrom = nl + 1;
      } else if (verdict == DROP) {
        keep(b, keepFrom, lineStart);
        keepFrom = nl + 1;
      } else if (verdict == KEEP_STUFFED) {
        keep(b, keepFrom, lineStart);
        keepStuffed(b, lineStart, ll);
        keepFrom = nl + 1;
      }
      lineStart = nl + 1;
      pos = nl + 1;
    }
    keep(b, keepFrom, lineStart);
    if (lineStart < end) {
      appendCarry(b, lineStart, end - lineStart);
    }
    return -1;
  }

  private static final int KEEP = 0;
  private static final int KEEP_STUFFED = 1;
  private static final int DROP = 2;
  private static final int END = 3;
  /** A control header's line while stripping: hashed (it is the client's message) but not relayed. */
  private static final int HASH_ONLY = 4;

  /**
   * One whole line (with its LF) of the bulk path: accept()'s rules on the raw bytes. KEEP: a good line,
   * to be kept as it is; KEEP_STUFFED: a good line whose first byte is a stuffing dot (kept, not hashed);
   * DROP: nothing is kept (the message will be refused); END: the terminating dot.
   */
  private int line(byte[] b, int start, int lengthWithLf, long dropped, boolean droppedCr) {
    int contentEnd = start + lengthWithLf - 1; // the LF
    boolean crlf = lengthWithLf >= 2 && b[contentEnd - 1] == '\r';
    if (crlf) {
      contentEnd--;
    }
    long contentLen = contentEnd - start + dropped;
    boolean bareCr = droppedCr;
    for (int i = start; i < contentEnd; i++) {
      if (b[i] == '\r') {
        bareCr = true;
        break;
      }
    }
    boolean dot = contentLen == 1 && dropped == 0 && b[start] == '.';
    boolean dotCrlf = crlf && !bareCr && dot;
    if (dotCrlf && afterCrlf) {
      return END;
    }
    boolean lineAfterCrlf = afterCrlf;
    afterCrlf = crlf;
    if (!crlf || bareCr || (dotCrlf && !lineAfterCrlf)) {
      note(Problem.BARE_LINE_ENDING);
    } else if (contentLen - (dropped == 0 && contentEnd > start && b[start] == '.' ? 1 : 0) > MAX_LINE) {
      note(Problem.LINE_TOO_LONG); // the transparency dot does not count (RFC 5321 §4.5.3.1.6)
    }
    // (an over-long line whose first bytes were dropped is refused anyway; its stuffing no longer matters)
    boolean stuffed = dropped == 0 && contentEnd > start && b[start] == '.';
    size += (stuffed ? contentLen - 1 : contentLen) + 2L;
    if (size > maxSize) {
      note(Problem.TOO_BIG);
    }
    if (problem != Problem.NONE) {
      return DROP;
    }
    if (inHeaders) {
      if (contentLen == 0) {
        inHeaders = false;
        control.close();
      } else {
        int from = stuffed ? start + 1 : start;
        boolean scanned = headerBytes < MAX_HEADER_BYTES;
        headerBytes += contentLen + 2;
        if (scanned && control.line(b, from, contentEnd) && strip) {
          return HASH_ONLY; // never stuffed: a control line starts with its name or, folded, with white space
        }
        if (headerChars < MAX_HEADER_BYTES) {
          header(new String(b, from, contentEnd - from, StandardCharsets.UTF_8));
        }
      }
    }
    return stuffed ? KEEP_STUFFED : KEEP;
  }

  private void header(String line) {
    headerLines.add(line);
    headerChars += line.length() + 1; // as the joined text counted it: the line and its newline
  }

  /** The wire form, made with {@code capacity} if it is not made yet. */
  private Buffer wire(int capacity) {
    if (wire == null) {
      wire = Buffer.buffer(capacity);
    }
    return wire;
  }

  /** Good bytes, as they are: to the wire and to the hash. */
  private void keep(byte[] b, int from, int to) {
    if (to > from && problem == Problem.NONE) {
      wire(initialCapacity).appendBytes(b, from, to - from);
      sha256.update(b, from, to - from);
    }
  }

  /** A good line that starts with a stuffing dot: the wire keeps the dot, the hash (of the message) does not. */
  private void keepStuffed(byte[] b, int from, int length) {
    if (problem == Problem.NONE) {
      wire(initialCapacity).appendBytes(b, from, length);
      sha256.update(b, from + 1, length - 1);
    }
  }

  /**
   * Keeps the bytes of an unfinished line. A line longer than any good one is refused anyway: of such a
   * line only its last bytes are kept (enough to see how it ends), the others only counted, and whether
   * a CR was among them remembered (accept()'s rules need its length and its bare CRs, not its bytes).
   */
  private void appendCarry(byte[] b, int from, int length) {
    if (carryLen + length > CARRY_MAX) {
      int overflow = carryLen + length - CARRY_MAX;
      int fromCarry = Math.min(overflow, carryLen);
      for (int i = 0; i < fromCarry; i++) {
        carryDroppedCr |= carry[i] == '\r';
      }
      System.arraycopy(carry, fromCarry, carry, 0, carryLen - fromCarry);
      carryLen -= fromCarry;
      int fromNew = overflow - fromCarry;
      for (int i = from; i < from + fromNew; i++) {
        carryDroppedCr |= b[i] == '\r';
      }
      from += fromNew;
      length -= fromNew;
      carryDropped += overflow;
    }
    if (carryLen + length > carry.length) {
      carry = java.util.Arrays.copyOf(carry, Math.max(Math.max(carry.length * 2, 128), carryLen + length));
    }
    System.arraycopy(b, from, carry, carryLen, length);
    carryLen += length;
  }

  private static final int CARRY_MAX = MAX_LINE + 8;
  /** Bytes of the unfinished line dropped from the carry, and whether a CR was among them. */
  private long carryDropped;
  private boolean carryDroppedCr;

  private static int indexOfLf(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == '\n') {
        return i;
      }
    }
    return -1;
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

  /**
   * Reads the control headers' tags and metadata once the body is complete; answers why they are refused (the reply's
   * text), or null.
   */
  String finishTags() {
    try {
      tags = control.tags();
      return null;
    } catch (MessageTags.Refused e) {
      return e.getMessage();
    }
  }

  MessageData result() {
    String[] lines = headerLines.toArray(new String[0]);
    return new MessageData(wire(0), size, HexFormat.of().formatHex(sha256.digest()), MessageData.messageId(lines),
        MessageData.Form.DOT_STUFFED, MessageData.messageIdCount(lines), tags);
  }

  /** The Message-ID header's value (unfolded, trimmed), or null. */
  static String messageId(CharSequence headerBlock) {
    return MessageData.messageId(headerBlock.toString().split("\n"));
  }
}
