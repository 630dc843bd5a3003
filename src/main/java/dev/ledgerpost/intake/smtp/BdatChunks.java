package dev.ledgerpost.intake.smtp;

import java.util.function.Supplier;

/**
 * The BDAT side of one session (RFC 3030): the chunk being read, and the transaction's body so far. A chunk
 * is read whole whatever its answer (a client need not wait for one), so a refused chunk is counted here and
 * its bytes dropped; the session decides what each chunk's end means.
 */
final class BdatChunks {
  /** {@code BDAT <octets> [LAST]}'s arguments. */
  record Command(long size, boolean last) {
    /** Null when they cannot be read: then nothing tells where the chunk ends. */
    static Command parse(String args) {
      String[] words = args.split(" ", -1);
      long size = words.length >= 1 ? EsmtpParameters.size(words[0]) : -1;
      boolean last = words.length == 2 && words[1].equalsIgnoreCase("LAST");
      if (size < 0 || size == Long.MAX_VALUE || words.length > 2 || (words.length == 2 && !last)) {
        return null;
      }
      return new Command(size, last);
    }
  }

  /** The transaction's body; null before its first accepted chunk. */
  private ChunkReader body;
  /** A chunk of this transaction failed (over the size limit): the rest of its chunks get this reply, up to BDAT LAST or RSET. */
  private Reply failed;

  // The chunk under way.
  private boolean reading;
  private long left;
  private long size;
  private boolean last;
  /** The reply the chunk being read gets whatever it holds (no MAIL, no recipient...): its bytes are dropped. */
  private Reply refusal;

  /** A chunk is being read: {@link #remaining()} more bytes, then {@link #end()}. */
  boolean reading() {
    return reading;
  }

  long remaining() {
    return left;
  }

  /** The chunk under way is a BDAT LAST whose body will be delivered or refused. */
  boolean lastOfMessage() {
    return reading && last && refusal == null;
  }

  /** This transaction has had BDAT: DATA may no longer come, nor MAIL before the transaction ends. */
  boolean begun() {
    return body != null || failed != null;
  }

  Reply failed() {
    return failed;
  }

  /** The rest of this transaction's chunks are refused with this reply (RFC 3030 §2). */
  void fail(Reply reply) {
    failed = reply;
  }

  /**
   * {@code BDAT <size> [LAST]} was read: its chunk follows. With a {@code refusal} the chunk is read and dropped;
   * without, its bytes go to the body, which {@code newBody} makes at the transaction's first chunk.
   */
  void begin(Command command, Reply refusal, Supplier<ChunkReader> newBody) {
    if (refusal == null && body == null) {
      body = newBody.get();
    }
    this.reading = true;
    this.left = command.size();
    this.size = command.size();
    this.last = command.last();
    this.refusal = refusal;
  }

  /** Bytes of the current chunk as they came off the socket, at most {@link #remaining()}. */
  void add(byte[] bytes, int off, int len) {
    if (len > left) {
      throw new IllegalArgumentException(len + " bytes given, " + left + " left in the chunk");
    }
    left -= len;
    if (refusal == null) {
      body.add(bytes, off, len);
    }
  }

  /** The chunk is complete; answers the reply it was refused with, null when its bytes went to the body. */
  Reply end() {
    if (!reading || left > 0) {
      throw new IllegalStateException("no complete chunk");
    }
    reading = false;
    Reply r = refusal;
    refusal = null;
    return r;
  }

  /** The chunk that just ended was BDAT LAST. */
  boolean wasLast() {
    return last;
  }

  /** The size of the chunk that just ended. */
  long size() {
    return size;
  }

  /** The body so far passed the size limit. */
  boolean tooBig() {
    return body.problem() == DataReader.Problem.TOO_BIG;
  }

  /** BDAT LAST was read: the whole body, complete; the transaction no longer holds it. */
  ChunkReader finish() {
    ChunkReader finished = body;
    body = null;
    finished.finish();
    return finished;
  }

  /** The transaction ended (RSET, a new EHLO, an abort): its body and failure go; a chunk under way is still read. */
  void endTransaction() {
    body = null;
    failed = null;
  }

  /** The connection is gone: no chunk is read any more. */
  void stop() {
    reading = false;
  }
}
