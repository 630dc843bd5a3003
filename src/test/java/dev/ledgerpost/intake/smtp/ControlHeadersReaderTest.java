package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.relay.MessageData;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The readers pick the control headers out of the header section as they read it (docs/data-model.md §5.17): the same
 * tags, the same relayed bytes and the same hash whatever the chunks the socket delivered, by the line path and the
 * bulk path alike, kept or stripped; nothing after the first empty line is ever taken for a header.
 */
class ControlHeadersReaderTest {
  static final String CLIENT = "X-Ledgerpost-Tag: billing\r\n"
      + "Subject: invoice\r\n"
      + "x-ledgerpost-metadata: order=A-17\r\n"
      + "X-Ledgerpost-Metadata: note=folded\r\n"
      + "\tacross lines\r\n"
      + "X-Ledgerpost-Tag: eu\r\n"
      + "Message-ID: <tags-1@example.com>\r\n"
      + "\r\n"
      + "X-Ledgerpost-Tag: not-a-header-in-the-body\r\n"
      + "..a stuffed line\r\n";
  static final String STRIPPED = "Subject: invoice\r\n"
      + "Message-ID: <tags-1@example.com>\r\n"
      + "\r\n"
      + "X-Ledgerpost-Tag: not-a-header-in-the-body\r\n"
      + "..a stuffed line\r\n";

  static String sha256(String s) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
  }

  /** The body fed in chunks of {@code step} bytes through the bulk path, then the terminating dot. */
  static DataReader fed(boolean strip, int step) {
    DataReader r = new DataReader(1_000_000, true, 0, strip);
    byte[] all = (CLIENT + ".\r\n").getBytes(StandardCharsets.UTF_8);
    int end = -1;
    for (int off = 0; off < all.length && end < 0; off += step) {
      end = r.feed(all, off, Math.min(step, all.length - off));
    }
    assertThat(end).as("the dot ended the body").isPositive();
    return r;
  }

  @Test
  void keptTheWireIsTheClientsAndTheTagsAreRead() throws Exception {
    for (int step : new int[] {1, 3, 7, 64, 4096}) {
      DataReader r = fed(false, step);
      assertThat(r.finishTags()).isNull();
      MessageData m = r.result();
      assertThat(m.wire().toString(StandardCharsets.UTF_8)).as("step " + step).isEqualTo(CLIENT);
      assertThat(m.sha256()).isEqualTo(sha256(CLIENT.replace("\r\n..", "\r\n.")));
      assertThat(m.tags().tags()).containsExactly("billing", "eu");
      assertThat(m.tags().metadata()).containsExactly(Map.entry("order", "A-17"), Map.entry("note", "folded\tacross lines"));
      assertThat(m.messageIdHeader()).isEqualTo("<tags-1@example.com>");
    }
  }

  @Test
  void strippedTheWireLacksTheControlLinesButTheHashIsStillTheClientsMessage() throws Exception {
    for (int step : new int[] {1, 2, 5, 13, 4096}) {
      DataReader r = fed(true, step);
      assertThat(r.finishTags()).isNull();
      MessageData m = r.result();
      assertThat(m.wire().toString(StandardCharsets.UTF_8)).as("step " + step).isEqualTo(STRIPPED);
      assertThat(m.sha256()).isEqualTo(sha256(CLIENT.replace("\r\n..", "\r\n.")));
      assertThat(m.size()).isEqualTo(CLIENT.length() - 1);
      assertThat(m.tags().tags()).containsExactly("billing", "eu");
      assertThat(m.messageIdHeader()).isEqualTo("<tags-1@example.com>");
    }
  }

  @Test
  void theLinePathDoesTheSame() throws Exception {
    String wire = CLIENT.substring(0, CLIENT.length() - 2); // split() leaves the last CRLF's empty tail
    DataReader kept = new DataReader(1_000_000, true, 0, false);
    DataReader stripped = new DataReader(1_000_000, true, 0, true);
    for (String l : wire.split("\r\n", -1)) {
      assertThat(kept.accept(Line.of(l))).isFalse();
      assertThat(stripped.accept(Line.of(l))).isFalse();
    }
    assertThat(kept.accept(Line.of("."))).isTrue();
    assertThat(stripped.accept(Line.of("."))).isTrue();
    assertThat(kept.finishTags()).isNull();
    assertThat(stripped.finishTags()).isNull();
    assertThat(kept.result().wire().toString(StandardCharsets.UTF_8)).isEqualTo(CLIENT);
    assertThat(stripped.result().wire().toString(StandardCharsets.UTF_8)).isEqualTo(STRIPPED);
    assertThat(stripped.result().sha256()).isEqualTo(kept.result().sha256());
    assertThat(stripped.result().tags()).isEqualTo(kept.result().tags());
  }

  @Test
  void badTagsAreTheReadersVerdictNotACrash() {
    DataReader r = new DataReader(1_000, true, 0, false);
    byte[] body = "X-Ledgerpost-Tag: two words\r\n\r\nbody\r\n.\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThat(r.feed(body, 0, body.length)).isEqualTo(body.length);
    assertThat(r.finishTags()).contains("\"two words\"").contains("may hold only");
    assertThat(Replies.badTags(r.finishTags()).toString()).startsWith("550 5.6.0 Message refused: the tag");
  }

  @Test
  void aBdatBodyIsStrippedFromItsHeaderSectionOnly() throws Exception {
    String unstuffed = CLIENT.replace("\r\n..", "\r\n.");
    ChunkReader c = new ChunkReader(1_000_000, false, 0);
    byte[] b = unstuffed.getBytes(StandardCharsets.UTF_8);
    c.add(b, 0, 10);
    c.add(b, 10, b.length - 10);
    c.finish();
    assertThat(c.finishTags(true)).isNull();
    MessageData m = c.result();
    assertThat(m.wire().toString(StandardCharsets.UTF_8)).isEqualTo(STRIPPED.replace("\r\n..", "\r\n."));
    assertThat(m.sha256()).isEqualTo(sha256(unstuffed));
    assertThat(m.tags().tags()).containsExactly("billing", "eu");

    ChunkReader kept = new ChunkReader(1_000_000, false, 0);
    kept.add(b, 0, b.length);
    kept.finish();
    assertThat(kept.finishTags(false)).isNull();
    assertThat(kept.result().wire()).isEqualTo(Buffer.buffer(b));
    assertThat(kept.result().tags().metadata()).containsEntry("order", "A-17");
  }
}
