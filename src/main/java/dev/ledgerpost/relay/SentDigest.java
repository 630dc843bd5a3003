package dev.ledgerpost.relay;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.nio.ByteBuffer;
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

  /**
   * The hex digest of {@code trace} followed by {@code wire}, unstuffed when {@code stuffed}. The body is read where it
   * lies, through its buffer's backing array or NIO views (issue 33: copying it out in 64 KiB chunks cost a chunk's
   * allocation a message); only a view without an array (a direct buffer) is still copied, a chunk at a time.
   */
  static String compute(byte[] trace, Buffer wire, boolean stuffed) {
    MessageDigest sha256 = MessageData.newSha256();
    sha256.update(trace);
    Unstuffer body = new Unstuffer(sha256, stuffed);
    if (wire instanceof BufferInternal internal) {
      ByteBuf buf = internal.getByteBuf();
      if (buf.hasArray()) {
        body.update(buf.array(), buf.arrayOffset() + buf.readerIndex(), buf.readableBytes());
      } else {
        for (ByteBuffer view : buf.nioBuffers()) {
          body.update(view);
        }
      }
    } else {
      body.update(ByteBuffer.wrap(wire.getBytes()));
    }
    return HexFormat.of().formatHex(sha256.digest());
  }

  /** Feeds a body's bytes to the digest, run by run, leaving out a line's leading dot when the body is stuffed. */
  private static final class Unstuffer {
    private final MessageDigest sha256;
    private final boolean stuffed;
    private boolean lineStart = true;
    private byte[] chunk;

    Unstuffer(MessageDigest sha256, boolean stuffed) {
      this.sha256 = sha256;
      this.stuffed = stuffed;
    }

    void update(ByteBuffer view) {
      if (view.hasArray()) {
        update(view.array(), view.arrayOffset() + view.position(), view.remaining());
        return;
      }
      ByteBuffer rest = view.duplicate();
      while (rest.hasRemaining()) {
        if (chunk == null) {
          chunk = new byte[Math.min(CHUNK, rest.remaining())];
        }
        int n = Math.min(chunk.length, rest.remaining());
        rest.get(chunk, 0, n);
        update(chunk, 0, n);
      }
    }

    void update(byte[] b, int off, int len) {
      int from = off;
      int end = off + len;
      for (int i = off; i < end; i++) {
        byte c = b[i];
        if (stuffed && lineStart && c == '.') {
          sha256.update(b, from, i - from); // the stuffed dot is not part of the message
          from = i + 1;
        }
        lineStart = c == '\n';
      }
      sha256.update(b, from, end - from);
    }
  }
}
