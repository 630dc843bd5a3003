package dev.ledgerpost.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * sent_sha256 (docs/contract.md §1.6) is the hash of what the smarthost received, Received: line included, with the
 * dot-stuffing undone: what a downstream that hashes its input (a downstream Ledgerpost) computes for the same bytes.
 */
class SentSha256Test {
  /** Which final reply the downstream gives: 0 = 250, 1 = none (the connection is closed: UNKNOWN), 2 = 554 to DATA itself. */
  static final AtomicInteger mode = new AtomicInteger();
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public String data() {
      return mode.get() == 2 ? "554 5.7.1 no data today" : "354 go ahead";
    }

    @Override
    public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
      return Future.succeededFuture(mode.get() == 1 ? null : "250 2.0.0 Ok: queued as DS" + n);
    }
  });

  @Test
  void anAcceptedMessageRecordsTheHashOfTheBytesTheSmarthostReceived() throws Exception {
    mode.set(0);
    String id = send("<sent-1@example.com>");
    ScriptedSmtpServer.Received got = last();
    assertThat(got.text()).startsWith("Received: from ").contains("\r\n.starts with a dot\r\n");
    assertThat(sentSha256(id)).isEqualTo(sha256(got.data()))
        .isNotEqualTo(LedgerRows.string(gateway.databaseUrl(), "SELECT body_sha256 FROM messages WHERE id = '" + id + "'"));
  }

  @Test
  void anUnknownOutcomeRecordsItToo() throws Exception {
    mode.set(1);
    int before = gateway.downstream().messages().size();
    String reply = sendRaw("<sent-2@example.com>");
    assertThat(reply).startsWith("451 4.4.2");
    assertThat(gateway.downstream().messages()).hasSize(before + 1);
    String id = LedgerRows.string(gateway.databaseUrl(),
        "SELECT id FROM messages WHERE message_id_header = '<sent-2@example.com>'");
    assertThat(LedgerRows.status(gateway.databaseUrl(), java.util.UUID.fromString(id))).isEqualTo("UNKNOWN");
    assertThat(sentSha256(id)).isEqualTo(sha256(last().data()));
  }

  @Test
  void aBodyThatWasNeverSentHasNone() throws Exception {
    mode.set(2);
    String reply = sendRaw("<sent-3@example.com>");
    assertThat(reply).startsWith("554");
    String id = LedgerRows.string(gateway.databaseUrl(),
        "SELECT id FROM messages WHERE message_id_header = '<sent-3@example.com>'");
    assertThat(LedgerRows.status(gateway.databaseUrl(), java.util.UUID.fromString(id))).isEqualTo("FAILED_PERM");
    assertThat(sentSha256(id)).isNull();
  }

  @Test
  void theDigestOfALargeBodyOnAWorkerEqualsTheInlineOne() throws Exception {
    StringBuilder body = new StringBuilder("Subject: big\r\n\r\n");
    while (body.length() <= SentDigest.INLINE_LIMIT + 10) {
      body.append("..a stuffed line of text, long enough to fill the buffer quickly\r\nplain line\r\n");
    }
    Buffer wire = Buffer.buffer(body.toString());
    byte[] trace = "Received: from x\r\n".getBytes(StandardCharsets.US_ASCII);
    String unstuffed = body.toString().replace("\r\n..", "\r\n.");
    String expected = sha256(("Received: from x\r\n" + unstuffed).getBytes(StandardCharsets.US_ASCII));
    assertThat(SentDigest.compute(trace, wire)).isEqualTo(expected);
    String onWorker = GatewayHarness.await(Future.<String>future(p -> gateway.vertx().runOnContext(v -> SentDigest.of(trace, new MessageData(wire, 0, "x", null)).onComplete(p))));
    assertThat(onWorker).isEqualTo(expected);
    // A BDAT body (RFC 3030) is never stuffed: it is hashed as it is.
    assertThat(SentDigest.compute(trace, Buffer.buffer("..as is\r\n"), false))
        .isEqualTo(sha256("Received: from x\r\n..as is\r\n".getBytes(StandardCharsets.US_ASCII)));
  }

  /**
   * Since issue 33 the digest reads the buffer in place (its array, or its NIO views) instead of copying it out in
   * 64 KiB chunks: the same digest, whether a stuffed dot falls on a chunk's or a view's edge, for a sliced buffer
   * and for one made of several direct and heap parts.
   */
  @Test
  void theDigestReadInPlaceEqualsTheChunkedCopyOne() {
    byte[] trace = "Received: from x\r\n".getBytes(StandardCharsets.US_ASCII);
    StringBuilder sb = new StringBuilder(".first line stuffed\r\n");
    java.util.Random random = new java.util.Random(33);
    while (sb.length() < 3 * 64 * 1024 + 100) {
      sb.append(random.nextInt(4) == 0 ? ".." : "").append("x".repeat(random.nextInt(200))).append("\r\n");
      if (sb.length() % 65536 > 65530) {
        sb.append("\r\n..dot near a 64 KiB edge\r\n");
      }
    }
    byte[] body = sb.toString().getBytes(StandardCharsets.US_ASCII);
    for (boolean stuffed : new boolean[] {true, false}) {
      String expected = oldDigest(trace, body, stuffed);
      assertThat(SentDigest.compute(trace, Buffer.buffer(body), stuffed)).isEqualTo(expected);
      // A slice: its array starts before the body.
      Buffer padded = Buffer.buffer().appendString("PADDING\r\n").appendBytes(body);
      assertThat(SentDigest.compute(trace, padded.slice(9, padded.length()), stuffed)).isEqualTo(expected);
      // Views of several parts, direct and heap, cut right after a LF and right after a dot.
      int cut1 = sb.indexOf("\n..") + 1;
      int cut2 = sb.indexOf("\n..", 70_000) + 2;
      io.netty.buffer.ByteBuf direct1 = io.netty.buffer.Unpooled.directBuffer(cut1).writeBytes(body, 0, cut1);
      io.netty.buffer.ByteBuf direct3 = io.netty.buffer.Unpooled.directBuffer(body.length - cut2)
          .writeBytes(body, cut2, body.length - cut2);
      io.netty.buffer.ByteBuf parts = io.netty.buffer.Unpooled.wrappedBuffer(direct1,
          io.netty.buffer.Unpooled.wrappedBuffer(body, cut1, cut2 - cut1), direct3);
      try {
        Buffer composite = io.vertx.core.internal.buffer.BufferInternal.buffer(parts);
        assertThat(composite.length()).isEqualTo(body.length);
        assertThat(SentDigest.compute(trace, composite, stuffed)).isEqualTo(expected);
      } finally {
        parts.release();
      }
    }
    assertThat(SentDigest.compute(trace, Buffer.buffer(), true)).isEqualTo(oldDigest(trace, new byte[0], true));
  }

  /** SentDigest.compute as it was before issue 33: the body copied out in 64 KiB chunks, unstuffed chunk by chunk. */
  private static String oldDigest(byte[] trace, byte[] body, boolean stuffed) {
    Buffer wire = Buffer.buffer(body);
    try {
      MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
      sha256.update(trace);
      byte[] chunk = new byte[Math.min(64 * 1024, Math.max(1, wire.length()))];
      boolean lineStart = true;
      for (int pos = 0; pos < wire.length(); pos += chunk.length) {
        int n = Math.min(chunk.length, wire.length() - pos);
        wire.getBytes(pos, pos + n, chunk, 0);
        int from = 0;
        for (int i = 0; i < n; i++) {
          byte b = chunk[i];
          if (stuffed && lineStart && b == '.') {
            sha256.update(chunk, from, i - from);
            from = i + 1;
          }
          lineStart = b == '\n';
        }
        sha256.update(chunk, from, n - from);
      }
      return HexFormat.of().formatHex(sha256.digest());
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String send(String messageId) throws Exception {
    String reply = sendRaw(messageId);
    assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
    Matcher m = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(reply);
    assertThat(m.find()).isTrue();
    return m.group(1);
  }

  private static String sendRaw(String messageId) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      // sendMail sends the body as it is: the lines are dot-stuffed here, as a client would
      return c.sendMail("a@example.com", List.of("b@example.net"),
          "Message-ID: " + messageId + "\r\nSubject: hashed\r\n\r\n..starts with a dot\r\n...two dots\r\nlast");
    }
  }

  private static ScriptedSmtpServer.Received last() {
    return gateway.downstream().messages().get(gateway.downstream().messages().size() - 1);
  }

  private static String sentSha256(String id) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), "SELECT sent_sha256 FROM messages WHERE id = '" + id + "'");
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }
}
