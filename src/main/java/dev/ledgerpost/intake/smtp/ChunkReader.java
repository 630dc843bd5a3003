package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.ledger.MessageTags;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.RelayTransaction;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * Receives the body of one BDAT transaction (RFC 3030), chunk after chunk, however the chunks cut it. A
 * chunk is counted, not parsed: its bytes are the message itself (no dot-stuffing, no terminator), kept as
 * they came and hashed. The limits are DATA's ({@link DataReader}): the size, and for a body that is not
 * {@code BODY=BINARYMIME} the line rules, checked across chunk boundaries (a CR ending one chunk and the LF
 * beginning the next are one CRLF). A BINARYMIME body has no lines to check.
 *
 * <p>The size is answered at the chunk that passes it ({@code 552} there, RFC 3030 §2); a line problem at
 * {@code BDAT LAST}, after the whole body, as DATA answers it after the dot.
 */
final class ChunkReader {
  private static final int MAX_HEADER_BYTES = 256 * 1024;

  private final long maxSize;
  private final boolean binary;
  private Buffer wire;
  private final MessageDigest sha256;
  private MessageTags tags = MessageTags.NONE;
  private long size;
  private boolean tooBig;
  /** The first line that broke DATA's rules: its problem, decided at its LF as DataReader decides it. */
  private DataReader.Problem lineProblem = DataReader.Problem.NONE;
  /** The last byte so far was a CR: the next must be LF. */
  private boolean lastCr;
  /** Bytes since the last LF (a CR among them included). */
  private long lineLength;
  /** The line under way has a CR that was not followed by LF. */
  private boolean lineBareCr;

  /** @param sizeHint the size MAIL declared (SIZE=), 0 if none: the buffer starts that large */
  ChunkReader(long maxSize, boolean binary, long sizeHint) {
    this.maxSize = maxSize;
    this.binary = binary;
    this.wire = Buffer.buffer((int) Math.max(4096, Math.min(sizeHint + 64, Math.min(maxSize, 64L << 20))));
    this.sha256 = MessageData.newSha256();
  }

  /** The next bytes of the current chunk. Past the size limit they are counted and dropped. */
  void add(byte[] b, int off, int len) {
    size += len;
    tooBig |= size > maxSize;
    if (!binary) {
      checkLines(b, off, len);
    }
    if (problem() == DataReader.Problem.NONE) {
      wire.appendBytes(b, off, len);
      sha256.update(b, off, len);
    }
  }

  /** DataReader's rules, line by line: a line with a bare CR, or ending in a bare LF, is refused for that first, else for its length. */
  private void checkLines(byte[] b, int off, int len) {
    for (int i = off; i < off + len; i++) {
      byte c = b[i];
      if (lastCr && c != '\n') {
        lineBareCr = true;
      }
      if (c == '\n') {
        long content = lastCr ? lineLength - 1 : lineLength;
        line(lineBareCr || !lastCr, content);
        lineLength = 0;
        lineBareCr = false;
      } else {
        lineLength++;
      }
      lastCr = c == '\r';
    }
  }

  private void line(boolean bare, long content) {
    if (lineProblem == DataReader.Problem.NONE) {
      lineProblem = bare ? DataReader.Problem.BARE_LINE_ENDING
          : content > DataReader.MAX_LINE ? DataReader.Problem.LINE_TOO_LONG : DataReader.Problem.NONE;
    }
  }

  /**
   * The body is complete ({@code BDAT LAST}). A last line without CRLF is no problem in itself (only DATA
   * could not carry it: {@link #fitForData()}), but it is held to the same rules: a CR at its very end or
   * inside it is a bare one, and it may be too long.
   */
  void finish() {
    if (!binary && (lineLength > 0 || lastCr)) {
      line(lineBareCr || lastCr, lastCr ? lineLength - 1 : lineLength);
    }
  }

  /** The size limit first (it is answered at the chunk that passes it), then the first line that broke the rules. */
  DataReader.Problem problem() {
    return tooBig ? DataReader.Problem.TOO_BIG : lineProblem;
  }

  long size() {
    return size;
  }

  boolean binary() {
    return binary;
  }

  /**
   * Whether the body can also go down as DATA: it is not BINARYMIME and every line ends in CRLF, the last
   * one too (an empty body has no line). Anything else can be relayed byte for byte only with BDAT.
   */
  boolean fitForData() {
    return !binary && problem() == DataReader.Problem.NONE && lineLength == 0 && !lastCr;
  }

  /**
   * Whether the transaction's smarthost can take the body unchanged: with CHUNKING anything (BINARYMIME
   * with BINARYMIME too); without it, as DATA, only a body whose every line ends in CRLF and that is not
   * BINARYMIME (the same rule as DATA intake's, so BDAT is no way round it).
   */
  boolean relayableBy(RelayTransaction txn) {
    if (binary) {
      return txn.offers("CHUNKING") && txn.offers("BINARYMIME");
    }
    return txn.offers("CHUNKING") || fitForData();
  }

  MessageData result() {
    String[] lines = headers().split("\n");
    return new MessageData(wire, size, HexFormat.of().formatHex(sha256.digest()), MessageData.messageId(lines),
        fitForData() ? MessageData.Form.LINES : MessageData.Form.CHUNKS_ONLY, MessageData.messageIdCount(lines), tags);
  }

  /**
   * The control headers (docs/data-model.md §5.17), read from the header section only (as {@link #headers()} reads it);
   * with {@code strip} the relayed bytes become the message without them (the header section copied without those
   * lines, the body after it as one block: a BDAT body is kept whole, not line by line as DATA's is). Answers why the
   * tags are refused (the reply's text), or null.
   */
  String finishTags(boolean strip) {
    int scan = (int) Math.min(wire.length(), MAX_HEADER_BYTES);
    byte[] b = wire.getBytes(0, scan);
    ControlHeaders control = new ControlHeaders();
    Buffer kept = strip ? Buffer.buffer(scan) : null;
    boolean stripped = false;
    int start = 0;
    int bodyStart = -1;
    for (int i = 0; i < b.length; i++) {
      if (b[i] != '\n') {
        continue;
      }
      int end = i > start && b[i - 1] == '\r' ? i - 1 : i;
      if (end == start) {
        bodyStart = start; // the empty line: the body begins
        break;
      }
      boolean controlLine = control.line(b, start, end);
      if (strip && controlLine) {
        stripped = true;
      } else if (strip) {
        kept.appendBytes(b, start, i + 1 - start);
      }
      start = i + 1;
    }
    try {
      tags = control.tags();
    } catch (MessageTags.Refused e) {
      return e.getMessage();
    }
    if (stripped) {
      int rest = bodyStart >= 0 ? bodyStart : start;
      wire = kept.appendBuffer(wire.slice(rest, wire.length()));
    }
    return null;
  }

  /** The header section as DataReader keeps it: one line per line, LF-separated, up to the first empty line. */
  private String headers() {
    byte[] b = wire.getBytes(0, (int) Math.min(wire.length(), MAX_HEADER_BYTES));
    StringBuilder sb = new StringBuilder();
    int start = 0;
    for (int i = 0; i < b.length; i++) {
      if (b[i] != '\n') {
        continue;
      }
      int end = i > start && b[i - 1] == '\r' ? i - 1 : i;
      if (end == start) {
        break; // the empty line: the body begins
      }
      sb.append(new String(b, start, end - start, StandardCharsets.UTF_8)).append('\n');
      start = i + 1;
    }
    return sb.toString();
  }
}
