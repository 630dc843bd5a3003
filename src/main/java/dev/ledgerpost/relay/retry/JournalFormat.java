package dev.ledgerpost.relay.retry;

import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.MessageStatus;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * The outcome journal's bytes. A file is a sequence of records:
 *
 * <pre>
 *   magic "LPJ1" (4) | length n (u32, big-endian) | CRC32C of length and payload (u32) | payload (n bytes)
 * </pre>
 *
 * The payload starts with a type byte: 1 = an outcome (the versioned settle and what the audit log
 * needs), 2 = done (its settle committed, or was dropped as stale), 3 = a not-sent outcome (the ledger
 * open was not confirmed): the fields of 1, then the Idempotency-Key to release (owner, key, operation
 * id; a null owner when the send had no key). An outcome (1) may end with one more string, the SHA-256 of
 * the bytes sent (absent in records written before it existed, and read as null). Strings are an i32 byte count
 * (-1 for null) and UTF-8. The checksum covers the length too, so a damaged length is detected and the
 * reader resynchronises on the next magic that starts a record with a valid checksum: damage in the
 * middle costs only the damaged records, and a record cut short at the end is told apart as torn.
 */
final class JournalFormat {
  static final int MAGIC = 0x4C504A31; // "LPJ1"
  static final int HEADER = 12;
  static final int MAX_PAYLOAD = 1 << 20;
  static final byte OUTCOME = 1;
  static final byte DONE = 2;
  static final byte NOT_SENT = 3;
  private static final int NULL_CODE = Integer.MIN_VALUE;

  private JournalFormat() {}

  /** One intact record, with its bytes as read (compaction copies them unchanged). */
  sealed interface Entry permits Outcome, Done {
    UUID id();

    byte[] raw();

    /** One method per kind of record; implement both, there is no default (as {@code DeliveryOutcome.Visitor}). */
    interface Visitor<R> {
      R outcome(Outcome o);

      R done(Done d);
    }

    <R> R accept(Visitor<R> visitor);
  }

  record Outcome(KnownOutcome outcome, long journaledAtMillis, byte[] raw) implements Entry {
    @Override
    public UUID id() {
      return outcome.settle().id();
    }

    @Override
    public <R> R accept(Visitor<R> v) {
      return v.outcome(this);
    }
  }

  record Done(UUID id, byte[] raw) implements Entry {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.done(this);
    }
  }

  /** Bytes that are not an intact record: {@code tail} when no intact record follows them. */
  record Damage(long offset, long length, boolean tail) {}

  record Scan(List<Entry> entries, List<Damage> damages) {}

  static byte[] outcome(KnownOutcome o, long journaledAtMillis) {
    Settle s = o.settle();
    Writer w = Writer.reused();
    w.octet(o.notSent() ? NOT_SENT : OUTCOME);
    w.uuid(s.id());
    w.int32(s.expectedVersion());
    w.string(s.target().name());
    w.int32(s.pendingRecipients());
    w.int32(s.replyCode() == null ? NULL_CODE : s.replyCode());
    w.string(s.enhancedCode());
    w.string(s.replyText());
    w.string(s.error());
    w.string(o.messageIdHeader());
    w.octet((byte) (o.downstreamAccepted() ? 1 : 0));
    w.int64(journaledAtMillis);
    if (o.notSent()) {
      KeyRef key = o.key();
      w.string(key == null ? null : key.owner());
      w.string(key == null ? null : key.key());
      if (key != null) {
        w.uuid(key.operationId());
      }
    } else if (s.sentSha256() != null) {
      w.string(s.sentSha256()); // optional and last: a record without it is read as before
    }
    return w.record();
  }

  static byte[] done(UUID id) {
    Writer w = Writer.reused();
    w.octet(DONE);
    w.uuid(id);
    return w.record();
  }

  /** CRC32C of a record's length field and payload; {@code pos} is where the record starts. */
  private static int checksum(byte[] data, int pos, int length) {
    CRC32C crc = new CRC32C();
    crc.update(data, pos + 4, 4);
    crc.update(data, pos + HEADER, length);
    return (int) crc.getValue();
  }

  /** Reads every intact record and reports every damaged stretch; never throws on bad input. */
  static Scan scan(byte[] data) {
    List<Entry> entries = new ArrayList<>();
    List<Damage> damages = new ArrayList<>();
    int pos = 0;
    while (pos < data.length) {
      Entry e = tryRead(data, pos);
      if (e != null) {
        entries.add(e);
        pos += e.raw().length;
        continue;
      }
      int next = resync(data, pos + 1);
      if (next < 0) {
        damages.add(new Damage(pos, data.length - pos, true));
        break;
      }
      damages.add(new Damage(pos, next - pos, false));
      pos = next;
    }
    return new Scan(List.copyOf(entries), List.copyOf(damages));
  }

  private static int resync(byte[] data, int from) {
    for (int p = from; p + HEADER <= data.length; p++) {
      if (data[p] == 'L' && data[p + 1] == 'P' && data[p + 2] == 'J' && data[p + 3] == '1' && tryRead(data, p) != null) {
        return p;
      }
    }
    return -1;
  }

  private static Entry tryRead(byte[] data, int pos) {
    if (data.length - pos < HEADER) {
      return null;
    }
    ByteBuffer b = ByteBuffer.wrap(data);
    if (b.getInt(pos) != MAGIC) {
      return null;
    }
    int length = b.getInt(pos + 4);
    if (length < 1 || length > MAX_PAYLOAD || length > data.length - pos - HEADER) {
      return null;
    }
    if (checksum(data, pos, length) != b.getInt(pos + 8)) {
      return null;
    }
    byte[] raw = Arrays.copyOfRange(data, pos, pos + HEADER + length);
    try {
      return decode(ByteBuffer.wrap(raw, HEADER, length), raw);
    } catch (BufferUnderflowException | IllegalArgumentException e) {
      return null; // a checksummed record this version cannot read: reported as damage, never guessed at
    }
  }

  private static Entry decode(ByteBuffer b, byte[] raw) {
    byte type = b.get();
    UUID id = new UUID(b.getLong(), b.getLong());
    if (type == DONE) {
      return new Done(id, raw);
    }
    if (type != OUTCOME && type != NOT_SENT) {
      throw new IllegalArgumentException("unknown record type " + type);
    }
    int expectedVersion = b.getInt();
    MessageStatus target = MessageStatus.valueOf(string(b));
    int pendingRecipients = b.getInt();
    int code = b.getInt();
    String enhanced = string(b);
    String text = string(b);
    String error = string(b);
    String messageId = string(b);
    boolean accepted = b.get() == 1;
    long at = b.getLong();
    if (type == OUTCOME) {
      String sent = b.hasRemaining() ? string(b) : null;
      Settle settle = new Settle(id, expectedVersion, target, pendingRecipients, code == NULL_CODE ? null : code, enhanced,
          text, error, sent);
      return new Outcome(new KnownOutcome(settle, messageId, accepted), at, raw);
    }
    Settle settle = new Settle(id, expectedVersion, target, pendingRecipients, code == NULL_CODE ? null : code, enhanced,
        text, error);
    String owner = string(b);
    String key = string(b);
    KeyRef ref = owner == null ? null : new KeyRef(owner, key, new UUID(b.getLong(), b.getLong()));
    return new Outcome(KnownOutcome.notSent(settle, messageId, ref), at, raw);
  }

  private static String string(ByteBuffer b) {
    int n = b.getInt();
    if (n == -1) {
      return null;
    }
    if (n < 0 || n > b.remaining()) {
      throw new IllegalArgumentException("bad string length " + n);
    }
    byte[] bytes = new byte[n];
    b.get(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  /**
   * A record's bytes, written after room for its header, which is filled in last; the record is then the one copy of
   * exactly its bytes. Each thread that journals (the event loops that append, the journal's io thread that marks
   * done) reuses one writer (issue 33: a scratch buffer, the payload's copy and the framed copy each outcome).
   */
  private static final class Writer {
    private static final ThreadLocal<Writer> REUSED = ThreadLocal.withInitial(Writer::new);
    /** A buffer grown past this for a large record is not kept for the next. */
    private static final int KEEP = 16 * 1024;

    ByteBuffer buf = ByteBuffer.allocate(256);

    static Writer reused() {
      Writer w = REUSED.get();
      if (w.buf.capacity() > KEEP) {
        w.buf = ByteBuffer.allocate(256);
      }
      w.buf.clear().position(HEADER);
      return w;
    }

    /** The framed record: magic, the payload's length, the checksum of both, the payload. */
    byte[] record() {
      int length = buf.position() - HEADER;
      if (length > MAX_PAYLOAD) {
        throw new IllegalArgumentException("journal record of " + length + " bytes is too large");
      }
      buf.putInt(0, MAGIC);
      buf.putInt(4, length);
      buf.putInt(8, checksum(buf.array(), 0, length)); // the length's bytes are in place: the checksum covers them
      return Arrays.copyOf(buf.array(), buf.position());
    }

    void ensure(int n) {
      if (buf.remaining() < n) {
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + n));
        buf.flip();
        bigger.put(buf);
        buf = bigger;
      }
    }

    void octet(byte v) {
      ensure(1);
      buf.put(v);
    }

    void int32(int v) {
      ensure(4);
      buf.putInt(v);
    }

    void int64(long v) {
      ensure(8);
      buf.putLong(v);
    }

    void uuid(UUID id) {
      ensure(16);
      buf.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits());
    }

    void string(String s) {
      if (s == null) {
        ensure(4);
        buf.putInt(-1);
        return;
      }
      byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
      ensure(4 + bytes.length);
      buf.putInt(bytes.length).put(bytes);
    }
  }
}
