package dev.ledgerpost.relay.retry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.MessageStatus;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class JournalFormatTest {

  static KnownOutcome outcome(UUID id) {
    return new KnownOutcome(new Settle(id, 1, MessageStatus.SENT, 2, 250, "2.0.0", "Ok: queued as X", null),
        "<m-" + id + "@example.com>", true);
  }

  @Test
  void outcomeAndDoneRecordsReadBackAsWritten() {
    UUID id = UUID.randomUUID();
    KnownOutcome withNulls = new KnownOutcome(new Settle(id, 1, MessageStatus.UNKNOWN, 1, null, "4.4.2", null,
        "lost after the final dot: timeout ü"), null, false);
    byte[] data = concat(JournalFormat.outcome(withNulls, 1234L), JournalFormat.done(id), JournalFormat.outcome(outcome(id), 5L));

    JournalFormat.Scan scan = JournalFormat.scan(data);

    assertThat(scan.damages()).isEmpty();
    assertThat(scan.entries()).hasSize(3);
    JournalFormat.Outcome first = (JournalFormat.Outcome) scan.entries().get(0);
    assertThat(first.outcome()).isEqualTo(withNulls);
    assertThat(first.journaledAtMillis()).isEqualTo(1234L);
    assertThat(scan.entries().get(1)).isInstanceOf(JournalFormat.Done.class);
    assertThat(scan.entries().get(1).id()).isEqualTo(id);
    assertThat(((JournalFormat.Outcome) scan.entries().get(2)).outcome()).isEqualTo(outcome(id));
  }

  @Test
  void theSentBytesHashIsAnOptionalLastFieldThatOlderRecordsDoNotHave() {
    UUID id = UUID.randomUUID();
    String hash = "ab".repeat(32);
    KnownOutcome unknown = new KnownOutcome(new Settle(id, 1, MessageStatus.UNKNOWN, 1, null, "4.4.2", null,
        "lost after the final dot: timeout", hash), "<s@example.com>", false);
    // No hash: the layout records had before the field existed.
    KnownOutcome older = new KnownOutcome(new Settle(id, 1, MessageStatus.UNKNOWN, 1, null, "4.4.2", null,
        "lost after the final dot: timeout"), "<s@example.com>", false);
    byte[] withHash = JournalFormat.outcome(unknown, 9L);
    byte[] without = JournalFormat.outcome(older, 9L);
    // The field adds its length and 64 characters at the end, nothing else.
    assertThat(withHash.length - without.length).isEqualTo(4 + 64);
    assertThat(Arrays.copyOfRange(withHash, JournalFormat.HEADER, without.length))
        .isEqualTo(Arrays.copyOfRange(without, JournalFormat.HEADER, without.length));

    JournalFormat.Scan scan = JournalFormat.scan(concat(withHash, without));

    assertThat(scan.damages()).isEmpty();
    assertThat(((JournalFormat.Outcome) scan.entries().get(0)).outcome()).isEqualTo(unknown);
    assertThat(((JournalFormat.Outcome) scan.entries().get(0)).outcome().settle().sentSha256()).isEqualTo(hash);
    assertThat(((JournalFormat.Outcome) scan.entries().get(1)).outcome().settle().sentSha256()).isNull();
  }

  @Test
  void notSentRecordsReadBackWithAndWithoutTheirIdempotencyKey() {
    UUID id = UUID.randomUUID();
    Settle settle = new Settle(id, 1, MessageStatus.FAILED_TEMP, 1, null, KnownOutcome.NOT_SENT_CODE, null,
        KnownOutcome.NOT_SENT_REASON);
    KnownOutcome keyed = KnownOutcome.notSent(settle, "<k@example.com>", new KeyRef("key-1", "idem-\u00fc", id));
    KnownOutcome plain = KnownOutcome.notSent(settle, null, null);

    JournalFormat.Scan scan = JournalFormat.scan(concat(JournalFormat.outcome(keyed, 7L), JournalFormat.outcome(plain, 8L)));

    assertThat(scan.damages()).isEmpty();
    assertThat(((JournalFormat.Outcome) scan.entries().get(0)).outcome()).isEqualTo(keyed);
    assertThat(((JournalFormat.Outcome) scan.entries().get(1)).outcome()).isEqualTo(plain);
    assertThat(((JournalFormat.Outcome) scan.entries().get(1)).outcome().notSent()).isTrue();
  }

  @Test
  void aLastRecordCutAtAnyByteIsReportedAsATornTailAndEverythingBeforeItIsRead() {
    byte[] a = JournalFormat.outcome(outcome(UUID.randomUUID()), 1);
    byte[] b = JournalFormat.outcome(outcome(UUID.randomUUID()), 2);
    byte[] last = JournalFormat.outcome(outcome(UUID.randomUUID()), 3);
    for (int cut = 1; cut < last.length; cut++) {
      byte[] data = concat(a, b, Arrays.copyOf(last, cut));
      JournalFormat.Scan scan = JournalFormat.scan(data);
      assertThat(scan.entries()).as("cut at %d", cut).hasSize(2);
      assertThat(scan.damages()).as("cut at %d", cut)
          .containsExactly(new JournalFormat.Damage(a.length + b.length, cut, true));
    }
  }

  @Test
  void zerosAfterTheLastRecordAreATornTailToo() {
    byte[] a = JournalFormat.outcome(outcome(UUID.randomUUID()), 1);
    JournalFormat.Scan scan = JournalFormat.scan(concat(a, new byte[4096]));
    assertThat(scan.entries()).hasSize(1);
    assertThat(scan.damages()).containsExactly(new JournalFormat.Damage(a.length, 4096, true));
  }

  @Test
  void aBadChecksumInTheMiddleCostsOnlyThatRecord() {
    List<byte[]> records = List.of(JournalFormat.outcome(outcome(UUID.randomUUID()), 1),
        JournalFormat.outcome(outcome(UUID.randomUUID()), 2), JournalFormat.outcome(outcome(UUID.randomUUID()), 3),
        JournalFormat.done(UUID.randomUUID()));
    byte[] data = concat(records.toArray(byte[][]::new));
    int second = records.get(0).length;
    data[second + JournalFormat.HEADER + 20] ^= 0x01; // one flipped bit in the second record's payload

    JournalFormat.Scan scan = JournalFormat.scan(data);

    assertThat(scan.damages()).containsExactly(new JournalFormat.Damage(second, records.get(1).length, false));
    assertThat(scan.entries()).extracting(JournalFormat.Entry::id)
        .containsExactly(id(records.get(0)), id(records.get(2)), id(records.get(3)));
  }

  @Test
  void aDamagedLengthFieldIsDetectedAndTheReaderResynchronises() {
    byte[] a = JournalFormat.outcome(outcome(UUID.randomUUID()), 1);
    byte[] b = JournalFormat.outcome(outcome(UUID.randomUUID()), 2);
    byte[] c = JournalFormat.outcome(outcome(UUID.randomUUID()), 3);
    byte[] data = concat(a, b, c);
    ByteBuffer.wrap(data).putInt(a.length + 4, 7); // b claims 7 payload bytes: its checksum no longer matches

    JournalFormat.Scan scan = JournalFormat.scan(data);

    assertThat(scan.entries()).extracting(JournalFormat.Entry::id).containsExactly(id(a), id(c));
    assertThat(scan.damages()).containsExactly(new JournalFormat.Damage(a.length, b.length, false));
  }

  @Test
  void backoffDoublesUpToItsBoundAndJittersWithinTheUpperHalf() {
    Backoff b = new Backoff(java.time.Duration.ofMillis(500), java.time.Duration.ofSeconds(30));
    assertThat(b.delayMillis(1, 0.0)).isEqualTo(250);
    assertThat(b.delayMillis(1, 0.999)).isBetween(499L, 500L);
    assertThat(b.delayMillis(2, 0.0)).isEqualTo(500);
    assertThat(b.delayMillis(4, 0.999)).isBetween(3990L, 4000L);
    for (int f = 1; f < 200; f++) {
      assertThat(b.delayMillis(f, 0.999)).isBetween(1L, 30_000L);
    }
    assertThat(b.delayMillis(100, 0.0)).isEqualTo(15_000);
  }

  /**
   * Since issue 33 a thread's records are written in one reused buffer: a record after a larger one (here one that
   * grew the buffer past what is kept) has exactly the bytes it has on a fresh thread, framed as before: magic, the
   * payload's length, CRC32C of the length's four bytes and the payload.
   */
  @Test
  void aReusedWritersRecordsAreFramedAsBeforeAndCarryNothingOfTheLastOne() throws Exception {
    UUID id = UUID.randomUUID();
    KnownOutcome big = new KnownOutcome(new Settle(id, 1, MessageStatus.FAILED_PERM, 1, 550, "5.7.1", "x".repeat(40_000),
        "e".repeat(30_000)), "<big@example.com>", true);
    KnownOutcome mid = new KnownOutcome(new Settle(id, 1, MessageStatus.FAILED_PERM, 1, 550, "5.7.1", "y".repeat(900),
        null), "<mid@example.com>", true);
    byte[][] fresh = new byte[3][];
    Thread t = new Thread(() -> {
      fresh[0] = JournalFormat.outcome(outcome(id), 7L);
      fresh[1] = JournalFormat.done(id);
      fresh[2] = JournalFormat.outcome(mid, 8L);
    });
    t.start();
    t.join();
    for (KnownOutcome before : List.of(big, mid)) {
      JournalFormat.outcome(before, 1L);
      assertThat(JournalFormat.outcome(outcome(id), 7L)).isEqualTo(fresh[0]);
      assertThat(JournalFormat.done(id)).isEqualTo(fresh[1]);
    }
    JournalFormat.outcome(big, 1L);
    assertThat(JournalFormat.outcome(mid, 8L)).isEqualTo(fresh[2]);
    for (byte[] record : fresh) {
      ByteBuffer b = ByteBuffer.wrap(record);
      assertThat(b.getInt()).isEqualTo(JournalFormat.MAGIC);
      assertThat(b.getInt()).isEqualTo(record.length - JournalFormat.HEADER);
      java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
      crc.update(record, 4, 4);
      crc.update(record, JournalFormat.HEADER, record.length - JournalFormat.HEADER);
      assertThat(b.getInt()).isEqualTo((int) crc.getValue());
    }
    assertThat(JournalFormat.scan(concat(JournalFormat.outcome(big, 3L), fresh[2])).entries())
        .extracting(e -> ((JournalFormat.Outcome) e).outcome()).containsExactly(big, mid);
  }

  private static UUID id(byte[] record) {
    return JournalFormat.scan(record).entries().get(0).id();
  }

  static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }
}
