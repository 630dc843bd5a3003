package dev.ledgerpost.relay;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * The SHA-256 of the message exactly as the smarthost was sent it (docs/contract.md §1.6): the gateway's
 * {@code Received:} line, then the client's bytes with DATA's dot-stuffing undone (a BDAT body has none), as the
 * smarthost stores them.
 * {@code body_sha256} covers the client's bytes only; this one is what a downstream that hashes what it
 * received (a downstream Ledgerpost's own {@code body_sha256}) can be matched against when reconciling (§8.4).
 */
final class SentDigest {
  /** Larger bodies are hashed on a worker while DATA goes downstream: a 25 MB hash would hold an event loop for tens of ms. */
  static final int INLINE_LIMIT = 256 * 1024;
  private static final int CHUNK = 64 * 1024;

  private SentDigest() {}

  /**
   * Hashes on the calling thread when the body is small, else on a worker (the buffer is only read). Whether the
   * body goes as DATA or as BDAT, the smarthost stores the same message: a DATA wire form is hashed unstuffed, a
   * BDAT body (RFC 3030: never stuffed) as it is.
   */
  static Future<String> of(byte[] trace, MessageData message) {
    Buffer wire = message.wire();
    boolean stuffed = message.form() == MessageData.Form.DOT_STUFFED;
    Context context = Vertx.currentContext();
    if (wire.length() <= INLINE_LIMIT || context == null) {
      return Future.succeededFuture(compute(trace, wire, stuffed));
    }
    return context.executeBlocking(() -> compute(trace, wire, stuffed), false);
  }

  /** The hex digest of {@code trace} followed by {@code wire} unstuffed (a line's leading dot dropped). */
  static String compute(byte[] trace, Buffer wire) {
    return compute(trace, wire, true);
  }

  /** The hex digest of {@code trace} followed by {@code wire}, unstuffed when {@code stuffed}. */
  static String compute(byte[] trace, Buffer wire, boolean stuffed) {
    MessageDigest sha256 = MessageData.newSha256();
    sha256.update(trace);
    byte[] chunk = new byte[Math.min(CHUNK, Math.max(1, wire.length()))];
    boolean lineStart = true;
    for (int pos = 0; pos < wire.length(); pos += chunk.length) {
      int n = Math.min(chunk.length, wire.length() - pos);
      wire.getBytes(pos, pos + n, chunk, 0);
      int from = 0;
      for (int i = 0; i < n; i++) {
        byte b = chunk[i];
        if (stuffed && lineStart && b == '.') {
          sha256.update(chunk, from, i - from); // the stuffed dot is not part of the message
          from = i + 1;
        }
        lineStart = b == '\n';
      }
      sha256.update(chunk, from, n - from);
    }
    return HexFormat.of().formatHex(sha256.digest());
  }
}
