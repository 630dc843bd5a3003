package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * BDAT (RFC 3030) and DSN (RFC 3461) over real sockets: a raw-socket client sends a message in chunks of every
 * size from one byte to the whole message, pipelined, and it reaches the smarthost byte for byte, as BDAT when
 * the smarthost offers CHUNKING and as DATA when it does not; the ledger row opens before the smarthost sees
 * the body, and BDAT LAST hears the relay contract's reply. Then the edges: BDAT 0 LAST, the size limit, a
 * connection lost between chunks (nothing opened, nothing sent) and one lost after BDAT LAST reached the
 * smarthost (UNKNOWN); BINARYMIME; a body only BDAT can carry (554 5.6.1); DSN parameters passed on verbatim and
 * recorded on the rows.
 */
class ChunkingEndToEndTest {
  static final List<String> PLAIN = List.of("PIPELINING", "SIZE 52428800", "8BITMIME", "ENHANCEDSTATUSCODES", "SMTPUTF8");
  static final List<String> CHUNKING = List.of("PIPELINING", "SIZE 52428800", "8BITMIME", "ENHANCEDSTATUSCODES",
      "SMTPUTF8", "CHUNKING", "BINARYMIME", "DSN");

  final Vertx vertx = Vertx.vertx();
  GatewayHarness gateway;
  ScriptedSmtpServer downstream;
  /** What the ledger held for the message when the smarthost had its body: the row's status, per message. */
  final List<String> rowWhenSmarthostHadTheBody = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
    GatewayHarness.await(vertx.close());
  }

  void start(List<String> keywords, Map<String, Object> extra, Script script) throws Exception {
    downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public List<String> ehloKeywords() {
        return keywords;
      }

      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        String messageId = messageId(message.text());
        // The rows of the earlier copies of the same message are settled: this one's must be there, PENDING.
        return vertx.executeBlocking(() -> messageId == null ? "none" : LedgerRows.string(gateway.databaseUrl(),
                "SELECT CASE WHEN count(*) FILTER (WHERE status = 'PENDING') = 1 THEN 'PENDING' ELSE 'not one PENDING row: '"
                    + " || string_agg(status, ',') END FROM messages WHERE message_id_header = '" + messageId + "'"))
            .map(status -> {
              rowWhenSmarthostHadTheBody.add(status);
              return script.reply(n);
            });
      }
    }));
    Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.putAll(extra);
    gateway = GatewayHarness.start(vertx, o);
  }

  interface Script {
    String reply(int n);
  }

  void start(List<String> keywords) throws Exception {
    start(keywords, Map.of(), n -> "250 2.0.0 Ok: queued as DS" + n);
  }

  static String messageId(String text) {
    Matcher m = Pattern.compile("(?m)^Message-ID: (<[^>]+>)").matcher(text);
    return m.find() ? m.group(1) : null;
  }

  static byte[] message(String id, int lines) {
    StringBuilder sb = new StringBuilder("Message-ID: <" + id + "@client.example>\r\nSubject: chunks\r\n\r\n");
    for (int i = 0; i < lines; i++) {
      sb.append(i % 5 == 0 ? "." : "").append("line ").append(i).append(" \u00e9t\u00e9\r\n"); // dots, 8-bit
    }
    sb.append(".\r\n");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  SmtpTestClient client() throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    assertThat(c.reply()).startsWith("220");
    assertThat(c.command("EHLO client.example")).contains("CHUNKING");
    return c;
  }

  /** MAIL, RCPT and the chunks, all in one write (PIPELINING); the replies: MAIL's, RCPT's, then one per chunk. */
  static List<String> pipelined(SmtpTestClient c, String mail, byte[] m, int chunk) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes((mail + "\r\nRCPT TO:<bob@example.net>\r\n").getBytes(StandardCharsets.UTF_8));
    int chunks = 0;
    for (int off = 0; off < m.length; off += chunk) {
      int n = Math.min(chunk, m.length - off);
      boolean last = off + n == m.length;
      out.writeBytes(("BDAT " + n + (last ? " LAST" : "") + "\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(m, off, n);
      chunks++;
    }
    c.sendBytes(out.toByteArray());
    List<String> replies = new ArrayList<>();
    for (int i = 0; i < chunks + 2; i++) {
      replies.add(c.reply());
    }
    return replies;
  }

  /** The downstream transaction was reset with no message sent, and the ledger holds no row. */
  void assertNothingRecordedOrSent() throws Exception {
    Poll.until(Duration.ofSeconds(10), "the downstream transaction is reset", () -> downstream.commands().contains("RSET"));
    assertThat(downstream.messages()).isEmpty();
    assertThat(downstream.commands()).noneMatch(l -> l.startsWith("BDAT") || l.equals("DATA"));
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();
  }

  static String ledgerId(String reply) {
    Matcher m = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return m.group(1);
  }

  /** The bytes the smarthost got after the gateway's Received: header (its folded lines start with a tab). */
  static byte[] afterTrace(ScriptedSmtpServer.Received got) {
    assertThat(got.text()).startsWith("Received: from client.example ([127.0.0.1])");
    return got.afterTrace();
  }

  @Test
  void chunksOfEverySizePipelinedReachASmarthostWithChunkingByteForByteAsBdat() throws Exception {
    start(CHUNKING);
    byte[] m = message("sizes-0", 40);
    int[] sizes = {1, 2, 7, 100, m.length - 1, m.length};
    // One Message-ID a message, all of one length: the same bytes again would be a resubmission (docs/contract.md §1.13).
    List<byte[]> sent = new java.util.ArrayList<>();
    try (SmtpTestClient c = client()) {
      for (int size : sizes) {
        byte[] each = message("sizes-" + sent.size(), 40);
        sent.add(each);
        List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", each, size);
        assertThat(replies.get(0)).startsWith("250");
        assertThat(replies.get(1)).startsWith("250");
        for (String r : replies.subList(2, replies.size() - 1)) {
          assertThat(r).matches("250 2\\.0\\.0 \\d+ octets received");
        }
        String last = replies.get(replies.size() - 1);
        assertThat(last).as("chunks of %d", size).startsWith("250 2.0.0 Ok: queued as ").contains("(downstream: Ok: queued as DS");
        String id = ledgerId(last);
        assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("SENT");
      }
    }
    assertThat(downstream.messages()).hasSize(sizes.length);
    for (int i = 0; i < sizes.length; i++) {
      ScriptedSmtpServer.Received r = downstream.messages().get(i);
      assertThat(r.command()).isEqualTo("BDAT");
      assertThat(afterTrace(r)).isEqualTo(sent.get(i));
    }
    assertThat(rowWhenSmarthostHadTheBody).hasSize(sizes.length).allMatch("PENDING"::equals);
    assertThat(downstream.bareLineEndings()).isEmpty();
    assertThat(downstream.commands()).noneMatch(l -> l.startsWith("DATA"));
    assertThat(scrape()).containsPattern("ledgerpost_smtp_transactions_total\\{command=\"bdat\",?[^}]*} 6\\.0");
  }

  @Test
  void chunksReachASmarthostWithoutChunkingByteForByteAsData() throws Exception {
    start(PLAIN);
    byte[] m = message("as-data-0", 30);
    List<byte[]> sent = new java.util.ArrayList<>(); // one Message-ID each (docs/contract.md §1.13), all of one length
    try (SmtpTestClient c = client()) {
      for (int size : new int[] {1, 13, m.length}) {
        byte[] each = message("as-data-" + sent.size(), 30);
        sent.add(each);
        List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", each, size);
        assertThat(replies.get(replies.size() - 1)).startsWith("250 2.0.0 Ok: queued as");
      }
    }
    assertThat(downstream.messages()).hasSize(3);
    for (int i = 0; i < 3; i++) {
      assertThat(downstream.messages().get(i).command()).isEqualTo("DATA");
      // the scripted server unstuffs: the stuffing was right
      assertThat(afterTrace(downstream.messages().get(i))).isEqualTo(sent.get(i));
    }
    assertThat(rowWhenSmarthostHadTheBody).containsExactly("PENDING", "PENDING", "PENDING");
    assertThat(downstream.bareLineEndings()).isEmpty();
  }

  @Test
  void bdatZeroLastEndsAMessageAfterItsChunks() throws Exception {
    start(CHUNKING);
    byte[] m = message("zero-last", 3);
    try (SmtpTestClient c = client()) {
      c.send("MAIL FROM:<alice@client.example>\r\nRCPT TO:<bob@example.net>\r\nBDAT " + m.length + "\r\n");
      c.sendBytes(m);
      c.send("BDAT 0 LAST\r\n");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).isEqualTo("250 2.0.0 " + m.length + " octets received");
      assertThat(c.reply()).startsWith("250 2.0.0 Ok: queued as");
    }
    assertThat(afterTrace(downstream.messages().get(0))).isEqualTo(m);
  }

  @Test
  void aMessageOverTheLimitIs552AtTheChunkAndNothingIsRecordedOrSent() throws Exception {
    start(CHUNKING, Map.of("smtp.maxMessageSize", 1000), n -> "250 2.0.0 Ok");
    try (SmtpTestClient c = client()) {
      byte[] big = message("too-big", 100);
      List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", big, 600);
      assertThat(replies.get(2)).startsWith("250");
      assertThat(replies.get(3)).startsWith("552 5.3.4");
      assertThat(replies.subList(3, replies.size())).allMatch(r -> r.startsWith("552 5.3.4"));
      assertThat(c.command("NOOP")).startsWith("250"); // in step: every chunk was read
    }
    assertNothingRecordedOrSent();
  }

  @Test
  void aConnectionLostBetweenChunksOpensNothingAndSendsNothing() throws Exception {
    start(CHUNKING);
    try (SmtpTestClient c = client()) {
      byte[] m = message("lost-between", 10);
      c.send("MAIL FROM:<alice@client.example>\r\nRCPT TO:<bob@example.net>\r\nBDAT 50\r\n");
      c.sendBytes(Arrays.copyOfRange(m, 0, 50));
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250 2.0.0 50 octets");
      c.send("BDAT 40 LAST\r\n");
      c.sendBytes(Arrays.copyOfRange(m, 50, 70)); // half of the last chunk, then the connection is gone
    }
    assertNothingRecordedOrSent();
  }

  @Test
  void aConnectionLostAfterBdatLastReachedTheSmarthostIsUnknown() throws Exception {
    start(CHUNKING, Map.of(), n -> null); // the smarthost hangs up instead of answering BDAT LAST
    byte[] m = message("lost-after", 10);
    try (SmtpTestClient c = client()) {
      List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", m, 64);
      String last = replies.get(replies.size() - 1);
      assertThat(last).startsWith("451 4.4.2").contains("outcome unknown");
    }
    assertThat(downstream.messages()).hasSize(1);
    assertThat(afterTrace(downstream.messages().get(0))).isEqualTo(m);
    assertThat(LedgerRows.string(gateway.databaseUrl(),
        "SELECT status FROM messages WHERE message_id_header = '<lost-after@client.example>'")).isEqualTo("UNKNOWN");
    assertThat(rowWhenSmarthostHadTheBody).containsExactly("PENDING");
  }

  @Test
  void binaryMimeGoesAsBdatWithBodyBinaryMime() throws Exception {
    start(CHUNKING);
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    b.writeBytes("Message-ID: <binary@client.example>\r\nContent-Type: application/octet-stream\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    for (int i = 0; i < 5000; i++) {
      b.write(i * 31); // NUL, bare CR and LF, lines of any length
    }
    byte[] m = b.toByteArray();
    try (SmtpTestClient c = client()) {
      assertThat(c.command("EHLO client.example")).contains("BINARYMIME");
      List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example> BODY=BINARYMIME", m, 1000);
      assertThat(replies.get(replies.size() - 1)).startsWith("250 2.0.0 Ok: queued as");
    }
    ScriptedSmtpServer.Received got = downstream.messages().get(0);
    assertThat(got.command()).isEqualTo("BDAT");
    assertThat(got.envelope().get(0)).isEqualTo("MAIL FROM:<alice@client.example> BODY=BINARYMIME");
    assertThat(afterTrace(got)).isEqualTo(m);
  }

  @Test
  void aBodyOnlyBdatCanCarryIs554_5_6_1BeforeAnythingIsRecordedOrSentToASmarthostWithoutChunking() throws Exception {
    start(PLAIN);
    byte[] m = "Message-ID: <no-crlf@client.example>\r\n\r\nno line end at the end".getBytes(StandardCharsets.US_ASCII);
    try (SmtpTestClient c = client()) {
      List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", m, 20);
      assertThat(replies.get(replies.size() - 1)).startsWith("554 5.6.1");
      assertThat(c.command("EHLO client.example")).doesNotContain("BINARYMIME").doesNotContain("DSN");
      assertThat(c.command("MAIL FROM:<alice@client.example> BODY=BINARYMIME")).startsWith("555 5.5.4");
    }
    assertThat(downstream.dataCommands()).isZero();
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();
  }

  @Test
  void dsnParametersArePassedOnVerbatimAndRecordedOnTheRows() throws Exception {
    start(CHUNKING);
    byte[] m = message("dsn", 2);
    String id;
    try (SmtpTestClient c = client()) {
      assertThat(c.command("EHLO client.example")).contains("250-DSN");
      c.send("MAIL FROM:<alice@client.example> RET=HDRS ENVID=QQ+2B314159\r\n"
          + "RCPT TO:<bob@example.net> NOTIFY=SUCCESS,DELAY ORCPT=rfc822;bob@example.net\r\n"
          + "RCPT TO:<carol@example.net> NOTIFY=NEVER\r\n"
          + "BDAT " + m.length + " LAST\r\n");
      c.sendBytes(m);
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250");
      String last = c.reply();
      assertThat(last).startsWith("250 2.0.0 Ok: queued as");
      id = ledgerId(last);
    }
    assertThat(downstream.messages().get(0).envelope()).containsExactly(
        "MAIL FROM:<alice@client.example> RET=HDRS ENVID=QQ+2B314159",
        "RCPT TO:<bob@example.net> NOTIFY=SUCCESS,DELAY ORCPT=rfc822;bob@example.net",
        "RCPT TO:<carol@example.net> NOTIFY=NEVER");
    String url = gateway.databaseUrl();
    assertThat(LedgerRows.string(url, "SELECT dsn_ret || ' ' || dsn_envid FROM messages WHERE id = '" + id + "'"))
        .isEqualTo("HDRS QQ+2B314159");
    assertThat(LedgerRows.string(url, "SELECT string_agg(coalesce(dsn_notify, '-') || ' ' || coalesce(dsn_orcpt, '-'), '|' "
        + "ORDER BY idx) FROM recipients WHERE message_id = '" + id + "'"))
        .isEqualTo("SUCCESS,DELAY rfc822;bob@example.net|NEVER -");
    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + id).body());
    assertThat(detail.getJsonObject("dsn")).isEqualTo(new JsonObject().put("ret", "HDRS").put("envid", "QQ+2B314159"));
    assertThat(detail.getJsonArray("recipients").getJsonObject(0).getString("dsnNotify")).isEqualTo("SUCCESS,DELAY");
    assertThat(detail.getJsonArray("recipients").getJsonObject(1).getString("dsnOrcpt")).isNull();
  }

  @Test
  void bdatGoesDownAsBdatAfterAuthOnTheSmarthostConnection() throws Exception {
    List<String> withAuth = new ArrayList<>(CHUNKING);
    withAuth.add("AUTH PLAIN");
    start(withAuth, Map.of("downstream.username", "relay", "downstream.password", "s3cret"), n -> "250 2.0.0 Ok: queued as DS" + n);
    byte[] m = message("auth", 5);
    try (SmtpTestClient c = client()) {
      List<String> replies = pipelined(c, "MAIL FROM:<alice@client.example>", m, 100);
      assertThat(replies.get(replies.size() - 1)).startsWith("250 2.0.0 Ok: queued as");
    }
    assertThat(downstream.authentications()).contains("relay:s3cret");
    assertThat(downstream.messages().get(0).command()).isEqualTo("BDAT");
    assertThat(afterTrace(downstream.messages().get(0))).isEqualTo(m);
  }

  String scrape() throws Exception {
    return gateway.get("/metrics", null).body();
  }
}
