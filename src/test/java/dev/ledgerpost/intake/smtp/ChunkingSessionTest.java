package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.intake.smtp.SmtpSession.Action;
import dev.ledgerpost.intake.smtp.SmtpSession.Step;
import io.vertx.core.Future;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * BDAT (RFC 3030) and DSN (RFC 3461) in the pure state machine: chunks cut anywhere give the same message,
 * the limits are DATA's (size at the chunk that passes it, line rules at BDAT LAST, none for BINARYMIME), a
 * body the smarthost cannot take unchanged is refused before anything is recorded, and DSN parameters are
 * offered only while the smarthost offers DSN, validated, and passed on verbatim.
 */
class ChunkingSessionTest {
  static final String MESSAGE = "Message-ID: <chunks@client.example>\r\nSubject: chunked\r\n\r\n"
      + ".a line that starts with a dot\r\n.\r\nbody\r\n";
  static final long MAX = 10_000;

  final SmtpSessionTranscriptTest.FakeRelay relay = new SmtpSessionTranscriptTest.FakeRelay();
  SmtpSession session = newSession(MAX);

  SmtpSession newSession(long max) {
    return new SmtpSession(new SmtpSession.Settings("gw.ledgerpost.test", max, 10, false, false, false,
        UnknownOutcomeReply.REPLY_451), relay, (u, p) -> Future.succeededFuture(false), ip -> true, "192.0.2.10");
  }

  Step step(Future<Step> f) {
    assertThat(f.isComplete()).isTrue();
    assertThat(f.succeeded()).as("%s", f.cause()).isTrue();
    return f.result();
  }

  String say(String line) {
    Step s = step(session.input(Line.of(line)));
    assertThat(s.reply()).as("reply to %s", line).isNotNull();
    return s.reply().toString();
  }

  /** One BDAT command and its chunk, handed over in pieces of at most {@code piece} bytes; the chunk's reply. */
  Step bdat(byte[] chunk, boolean last, int piece) {
    Step command = step(session.input(Line.of("BDAT " + chunk.length + (last ? " LAST" : ""))));
    assertThat(command.reply()).as("no reply before the chunk").isNull();
    assertThat(command.action()).isEqualTo(Action.READ_CHUNK);
    assertThat(session.chunkRemaining()).isEqualTo(chunk.length);
    for (int off = 0; off < chunk.length; off += piece) {
      session.chunk(chunk, off, Math.min(piece, chunk.length - off));
    }
    assertThat(session.chunkRemaining()).isZero();
    return step(session.endOfChunk());
  }

  String bdat(String chunk, boolean last) {
    return bdat(chunk.getBytes(StandardCharsets.ISO_8859_1), last, Integer.MAX_VALUE).reply().toString();
  }

  void open(String mail) {
    assertThat(say("EHLO client.example")).startsWith("250-");
    assertThat(say(mail)).startsWith("250");
    assertThat(say("RCPT TO:<bob@example.net>")).startsWith("250");
  }

  void open() {
    open("MAIL FROM:<alice@client.example>");
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  // --- EHLO

  @Test
  void ehloOffersChunkingAlwaysAndDsnAndBinaryMimeOnlyWhileTheSmarthostDoes() {
    String plain = say("EHLO client.example");
    assertThat(plain).contains("250-CHUNKING").doesNotContain("DSN").doesNotContain("BINARYMIME");

    relay.extensions.addAll(List.of("DSN", "BINARYMIME")); // BINARYMIME without CHUNKING downstream is no use
    assertThat(say("EHLO client.example")).contains("250-DSN").doesNotContain("BINARYMIME");

    relay.extensions.add("CHUNKING");
    assertThat(say("EHLO client.example")).contains("250-BINARYMIME", "250-CHUNKING", "250-DSN");

    relay.extensions.clear();
    assertThat(say("EHLO client.example")).doesNotContain("DSN").doesNotContain("BINARYMIME");
  }

  // --- BDAT

  @Test
  void chunksAreTheMessageByteForByteWithEachChunkAnswered() throws Exception {
    open();
    byte[] m = MESSAGE.getBytes(StandardCharsets.US_ASCII);

    assertThat(bdat(MESSAGE.substring(0, 20), false)).isEqualTo("250 2.0.0 20 octets received");
    assertThat(bdat(MESSAGE.substring(20), false)).isEqualTo("250 2.0.0 " + (m.length - 20) + " octets received");
    assertThat(bdat("", true)).startsWith("250 2.0.0 Ok: queued as");

    MessageData got = relay.delivered.get(0);
    assertThat(got.wire().getBytes()).isEqualTo(m);
    assertThat(got.size()).isEqualTo(m.length);
    assertThat(got.sha256()).isEqualTo(sha256(m));
    assertThat(got.messageIdHeader()).isEqualTo("<chunks@client.example>");
    assertThat(got.form()).isEqualTo(MessageData.Form.LINES);
    assertThat(relay.calls).endsWith("DELIVER");
    assertThat(session.inTransaction()).isFalse();
  }

  @Test
  void bdatZeroLastAloneIsAnEmptyMessage() {
    open();
    assertThat(bdat("", true)).startsWith("250 2.0.0 Ok");
    assertThat(relay.delivered.get(0).size()).isZero();
    assertThat(relay.delivered.get(0).form()).isEqualTo(MessageData.Form.LINES);
  }

  /** Every place one cut can fall, the CRLFs and the dot lines included, and every read size. */
  @Test
  void aCutAtEveryBoundaryGivesTheSameMessage() {
    byte[] m = MESSAGE.getBytes(StandardCharsets.US_ASCII);
    for (int cut = 0; cut <= m.length; cut++) {
      for (int piece : new int[] {1, 3, m.length}) {
        relay.delivered.clear();
        session = newSession(MAX);
        open();
        byte[] first = java.util.Arrays.copyOfRange(m, 0, cut);
        byte[] rest = java.util.Arrays.copyOfRange(m, cut, m.length);
        assertThat(bdat(first, false, piece).reply().code()).isEqualTo(250);
        assertThat(bdat(rest, true, piece).reply().toString()).as("cut at %d, read %d", cut, piece).startsWith("250 2.0.0 Ok");
        assertThat(relay.delivered.get(0).wire().getBytes()).as("cut at %d", cut).isEqualTo(m);
        assertThat(relay.delivered.get(0).messageIdHeader()).isEqualTo("<chunks@client.example>");
      }
    }
  }

  @Provide
  Arbitrary<List<Double>> cuts() {
    return Arbitraries.doubles().between(0, 1).list().ofMaxSize(10);
  }

  @Provide
  Arbitrary<String> messages() {
    return Arbitraries.of("a", "b ", "\r\n", ".", "..", "\r", "\n", "\u00e9", "\0", "x".repeat(990))
        .list().ofMaxSize(40).map(t -> String.join("", t));
  }

  /**
   * Any message cut into any chunks: the same verdict and, when delivered, the same bytes, size and hash
   * as in one chunk; the line rules hold across the cuts (a CR ending one chunk and the LF starting the
   * next are one CRLF).
   */
  @Property(tries = 300)
  void chunkBoundariesNeverChangeTheVerdictOrTheBytes(@ForAll("messages") String text, @ForAll("cuts") List<Double> cuts)
      throws Exception {
    byte[] m = text.getBytes(StandardCharsets.ISO_8859_1);
    relay.extensions.add("CHUNKING");
    session = newSession(10_000_000); // size is not what is checked here
    open();
    String whole = bdat(m, true, m.length + 1).reply().toString();
    MessageData one = relay.delivered.isEmpty() ? null : relay.delivered.remove(0);

    session = newSession(10_000_000);
    open();
    TreeSet<Integer> at = new TreeSet<>();
    cuts.forEach(c -> at.add((int) Math.round(c * m.length)));
    int from = 0;
    for (int cut : at) {
      assertThat(bdat(java.util.Arrays.copyOfRange(m, from, cut), false, 7).reply().code()).isEqualTo(250);
      from = cut;
    }
    String chunked = bdat(java.util.Arrays.copyOfRange(m, from, m.length), true, 5).reply().toString();

    assertThat(chunked).isEqualTo(whole);
    assertThat(whole).isEqualTo(expectedVerdict(text));
    if (one != null) {
      MessageData two = relay.delivered.remove(0);
      assertThat(two.wire().getBytes()).isEqualTo(m).isEqualTo(one.wire().getBytes());
      assertThat(two.sha256()).isEqualTo(sha256(m));
      assertThat(two.form()).isEqualTo(one.form());
    }
  }

  /**
   * The model is DATA intake itself: the same bytes, dot-stuffed, through {@link DataReader} (a last line
   * without CRLF gets the CRLF that DATA's terminator would give it). BDAT must refuse exactly what DATA refuses.
   */
  static String expectedVerdict(String m) {
    String lines = m.isEmpty() || m.endsWith("\r\n") ? m : m + "\r\n";
    DataReader data = new DataReader(10_000_000);
    StringBuilder dotted = new StringBuilder();
    for (int i = 0; i < lines.length(); i++) {
      if (lines.charAt(i) == '.' && (i == 0 || lines.charAt(i - 1) == '\n')) {
        dotted.append('.');
      }
      dotted.append(lines.charAt(i));
    }
    byte[] stuffed = dotted.toString().getBytes(StandardCharsets.ISO_8859_1);
    byte[] wire = java.util.Arrays.copyOf(stuffed, stuffed.length + 5);
    System.arraycopy(".\r\n".getBytes(StandardCharsets.US_ASCII), 0, wire, stuffed.length, 3);
    int end = data.feed(wire, 0, stuffed.length + 3);
    assertThat(end).as("the model's DATA ends at its own dot").isEqualTo(stuffed.length + 3);
    return switch (data.problem()) {
      case BARE_LINE_ENDING -> Replies.BARE_LINE_ENDING.toString();
      case LINE_TOO_LONG -> Replies.DATA_LINE_TOO_LONG.toString();
      case TOO_BIG -> Replies.TOO_BIG.toString();
      case NONE -> Replies.forOutcome(new SmtpSessionTranscriptTest.FakeRelay().outcome, UnknownOutcomeReply.REPLY_451).toString();
    };
  }

  @Test
  void theSizeLimitIsAnsweredAtTheChunkThatPassesItAndTheRestOfTheTransactionIsRefusedToo() {
    session = newSession(100);
    open();
    assertThat(bdat("a".repeat(60), false)).startsWith("250");
    assertThat(bdat("b".repeat(60), false)).isEqualTo("552 5.3.4 Message size exceeds fixed maximum message size");
    assertThat(relay.calls).endsWith("ABORT");
    assertThat(bdat("c".repeat(10), false)).startsWith("552 5.3.4");
    assertThat(say("DATA")).startsWith("503 5.5.1"); // still the failed BDAT transaction
    assertThat(bdat("", true)).startsWith("552 5.3.4");
    assertThat(relay.delivered).isEmpty();
    assertThat(session.inTransaction()).isFalse();
    open(); // the session goes on
    assertThat(bdat("short\r\n", true)).startsWith("250 2.0.0 Ok");
  }

  @Test
  void oneChunkOverTheLimitIsReadWholeThenRefused() {
    session = newSession(100);
    open();
    Step s = bdat(new byte[5000], true, 512);
    assertThat(s.reply().toString()).startsWith("552 5.3.4");
    assertThat(relay.delivered).isEmpty();
    assertThat(say("NOOP")).startsWith("250"); // in step with the client
  }

  @Test
  void lineRulesHoldAcrossChunksAndAreAnsweredAtLast() {
    open();
    assertThat(bdat("Subject: a\r", false)).startsWith("250"); // CR here, LF in the next chunk: one CRLF
    assertThat(bdat("\nbody\r\n", true)).startsWith("250 2.0.0 Ok");

    open("MAIL FROM:<alice@client.example>");
    assertThat(bdat("Subject: a\nbody\r\n", false)).startsWith("250"); // answered at LAST, as DATA after the dot
    assertThat(bdat("", true)).isEqualTo(Replies.BARE_LINE_ENDING.toString());

    open("MAIL FROM:<alice@client.example>");
    assertThat(bdat("Subject: a\r\nbody\r", true)).isEqualTo(Replies.BARE_LINE_ENDING.toString());

    open("MAIL FROM:<alice@client.example>");
    assertThat(bdat("x".repeat(500), false)).startsWith("250");
    assertThat(bdat("x".repeat(499) + "\r\n", true)).isEqualTo(Replies.DATA_LINE_TOO_LONG.toString());

    open("MAIL FROM:<alice@client.example>");
    assertThat(bdat("x".repeat(500), false)).startsWith("250");
    assertThat(bdat("x".repeat(498) + "\r\n", true)).startsWith("250 2.0.0 Ok"); // 998: the longest line there is
    assertThat(relay.delivered).hasSize(2);
    assertThat(relay.calls.stream().filter("ABORT"::equals)).hasSize(3);
  }

  @Test
  void aBodyThatCannotGoAsDataIsRefused554_5_6_1WithoutChunkingDownstreamAndRelayedWithIt() {
    open();
    assertThat(bdat("Subject: no final CRLF\r\n\r\nlast line", true))
        .isEqualTo("554 5.6.1 Message refused: the smarthost does not take BDAT (or BINARYMIME), and this body cannot go as DATA unchanged");
    assertThat(relay.delivered).isEmpty();
    assertThat(relay.calls).endsWith("ABORT");

    relay.extensions.add("CHUNKING");
    open();
    assertThat(bdat("Subject: no final CRLF\r\n\r\nlast line", true)).startsWith("250 2.0.0 Ok");
    assertThat(relay.delivered.get(0).form()).isEqualTo(MessageData.Form.CHUNKS_ONLY);
  }

  @Test
  void binaryMimeHasNoLineRulesAndGoesOnlyAsBdatWithBinaryMimeDownstream() {
    assertThat(say("EHLO client.example")).doesNotContain("BINARYMIME");
    assertThat(say("MAIL FROM:<alice@client.example> BODY=BINARYMIME")).startsWith("555 5.5.4");

    relay.extensions.addAll(List.of("CHUNKING", "BINARYMIME"));
    open("MAIL FROM:<alice@client.example> BODY=BINARYMIME");
    assertThat(relay.parameters.get(0).binaryMime()).isTrue();
    byte[] binary = new byte[3000];
    for (int i = 0; i < binary.length; i++) {
      binary[i] = (byte) (i * 7); // bare CR, bare LF, NUL, a "line" of thousands of bytes
    }
    assertThat(bdat(binary, true, 100).reply().toString()).startsWith("250 2.0.0 Ok");
    assertThat(relay.delivered.get(0).wire().getBytes()).isEqualTo(binary);
    assertThat(relay.delivered.get(0).form()).isEqualTo(MessageData.Form.CHUNKS_ONLY);

    assertThat(say("MAIL FROM:<alice@client.example> BODY=BINARYMIME")).startsWith("250");
    assertThat(say("RCPT TO:<bob@example.net>")).startsWith("250");
    assertThat(say("DATA")).isEqualTo("503 5.5.1 BODY=BINARYMIME needs BDAT, not DATA");

    relay.extensions.remove("BINARYMIME"); // the connection of this transaction no longer offers it
    assertThat(bdat(binary, true, 100).reply().toString()).startsWith("554 5.6.1");
    assertThat(relay.delivered).hasSize(1);
  }

  @Test
  void outOfOrderChunksAreReadAndRefused() {
    assertThat(bdat("abc", false)).startsWith("503 5.5.1 Send HELO");
    assertThat(say("EHLO client.example")).startsWith("250");
    assertThat(bdat("abc", true)).isEqualTo("503 5.5.1 Send MAIL FROM first");
    assertThat(say("MAIL FROM:<alice@client.example>")).startsWith("250");
    assertThat(bdat("abc", false)).isEqualTo("503 5.5.1 Send RCPT TO first");
    relay.rcptReplies.put("nobody@example.net", new dev.ledgerpost.relay.DownstreamReply(550, "5.1.1", "No such user"));
    assertThat(say("RCPT TO:<nobody@example.net>")).startsWith("550");
    assertThat(bdat("abc", true)).isEqualTo("554 5.5.1 No valid recipients");
    assertThat(session.inTransaction()).as("BDAT LAST ends the transaction").isFalse();
    assertThat(relay.delivered).isEmpty();
  }

  @Test
  void dataAfterBdatIs503AndRsetClearsIt() {
    open();
    assertThat(bdat("Subject: x\r\n", false)).startsWith("250");
    assertThat(say("DATA")).isEqualTo("503 5.5.1 DATA not allowed after BDAT in one transaction; RSET first");
    assertThat(say("MAIL FROM:<alice@client.example>")).startsWith("503 5.5.1");
    assertThat(say("RSET")).startsWith("250");
    open();
    assertThat(say("DATA")).startsWith("354");
  }

  @Test
  void aBdatWhoseSizeCannotBeReadClosesTheConnection() {
    for (String bad : List.of("BDAT", "BDAT x", "BDAT -1 LAST", "BDAT 10 FIRST", "BDAT 10 LAST more", "BDAT 99999999999999999999")) {
      session = newSession(MAX);
      open();
      Step s = step(session.input(Line.of(bad)));
      assertThat(s.reply().toString()).as(bad).startsWith("501 5.5.4 Syntax: BDAT");
      assertThat(s.action()).as(bad).isEqualTo(Action.CLOSE);
    }
  }

  // --- DSN

  @Test
  void dsnParametersAre555UntilTheSmarthostOffersDsn() {
    assertThat(say("EHLO client.example")).doesNotContain("DSN");
    assertThat(say("MAIL FROM:<alice@client.example> RET=HDRS")).startsWith("555 5.5.4");
    assertThat(say("MAIL FROM:<alice@client.example> ENVID=abc")).startsWith("555 5.5.4");
    assertThat(say("MAIL FROM:<alice@client.example>")).startsWith("250");
    assertThat(say("RCPT TO:<bob@example.net> NOTIFY=NEVER")).startsWith("555 5.5.4");
  }

  @Test
  void dsnParametersArePassedOnVerbatim() {
    relay.extensions.add("DSN");
    assertThat(say("EHLO client.example")).contains("250-DSN");
    assertThat(say("MAIL FROM:<alice@client.example> RET=hdrs ENVID=QQ+2B314159")).startsWith("250");
    assertThat(say("RCPT TO:<bob@example.net> NOTIFY=SUCCESS,delay ORCPT=rfc822;bob+40example.net")).startsWith("250");
    assertThat(say("RCPT TO:<carol@example.net> NOTIFY=NEVER")).startsWith("250");
    assertThat(say("RCPT TO:<dave@example.net>")).startsWith("250");

    Relay.MailParameters mail = relay.parameters.get(0);
    assertThat(mail.ret()).isEqualTo("hdrs");
    assertThat(mail.envid()).isEqualTo("QQ+2B314159");
    assertThat(relay.rcptParameters).containsExactly(
        new RelayTransaction.RcptParameters("SUCCESS,delay", "rfc822;bob+40example.net"),
        new RelayTransaction.RcptParameters("NEVER", null),
        RelayTransaction.RcptParameters.NONE);
  }

  @Test
  void badDsnValuesAre501_5_5_4() {
    relay.extensions.add("DSN");
    assertThat(say("EHLO client.example")).contains("DSN");
    for (String mail : List.of("RET=ALL", "RET", "ENVID=a=b", "ENVID=a+2b", "ENVID=a+4", "ENVID=" + "x".repeat(101),
        "ENVID=caf\u00e9", "RET=FULL RET=HDRS")) {
      assertThat(say("MAIL FROM:<alice@client.example> " + mail)).as(mail).startsWith("501 5.5.4");
    }
    assertThat(say("MAIL FROM:<alice@client.example> ENVID=" + "x".repeat(100))).startsWith("250");
    for (String rcpt : List.of("NOTIFY=NEVER,SUCCESS", "NOTIFY=SUCCESS,SUCCESS", "NOTIFY=sometimes", "NOTIFY=", "NOTIFY",
        "NOTIFY=SUCCESS,", "ORCPT=bob@example.net", "ORCPT=rfc822;", "ORCPT=;bob@example.net", "ORCPT=rfc822;bob+zzexample.net",
        "ORCPT=rfc822;b\u00f6b@example.net", "ORCPT=rfc822;" + "x".repeat(494))) {
      assertThat(say("RCPT TO:<bob@example.net> " + rcpt)).as(rcpt).startsWith("501 5.5.4");
    }
    assertThat(relay.rcptParameters).isEmpty(); // nothing refused went downstream
  }

  @Test
  void aUtf8OrcptNeedsSmtpUtf8() {
    relay.extensions.add("DSN");
    assertThat(say("EHLO client.example")).contains("DSN");
    assertThat(say("MAIL FROM:<alice@client.example>")).startsWith("250");
    assertThat(say("RCPT TO:<bob@example.net> ORCPT=utf-8;b\u00f6b@example.net")).startsWith("501 5.5.4");
    assertThat(say("RSET")).startsWith("250");
    assertThat(say("MAIL FROM:<alice@client.example> SMTPUTF8")).startsWith("250");
    assertThat(say("RCPT TO:<b\u00f6b@example.net> ORCPT=utf-8;b\u00f6b@example.net")).startsWith("250");
    assertThat(relay.rcptParameters.get(0).dsnOrcpt()).isEqualTo("utf-8;b\u00f6b@example.net");
  }

  // --- xtext

  /** RFC 3461 §4's encoding: printable ASCII but "+" and "=" as they are, every other byte as "+XX". */
  static String xtextEncode(byte[] raw) {
    StringBuilder sb = new StringBuilder();
    for (byte b : raw) {
      int c = b & 0xff;
      if (c >= '!' && c <= '~' && c != '+' && c != '=') {
        sb.append((char) c);
      } else {
        sb.append('+').append(String.format("%02X", c));
      }
    }
    return sb.toString();
  }

  @Property(tries = 500)
  void everyXtextEncodingIsValidAndItsLowerCaseOrBrokenFormsAreNot(@ForAll byte[] raw) {
    if (raw.length == 0) {
      return;
    }
    String x = xtextEncode(raw);
    assertThat(EsmtpParameters.xtext(x, false)).as(x).isTrue();
    int plus = x.indexOf('+');
    if (plus >= 0 && x.substring(plus + 1, plus + 3).matches(".*[A-F].*")) {
      String lower = x.substring(0, plus + 1) + x.substring(plus + 1, plus + 3).toLowerCase() + x.substring(plus + 3);
      assertThat(EsmtpParameters.xtext(lower, false)).as(lower).isFalse();
    }
    if (plus >= 0) {
      assertThat(EsmtpParameters.xtext(x.substring(0, plus + 2), false)).as("cut escape").isFalse();
    }
    assertThat(EsmtpParameters.xtext(x + "=", false)).isFalse();
    assertThat(EsmtpParameters.xtext(x + " ", false)).isFalse();
  }

  @Test
  void notifyValues() {
    assertThat(List.of("NEVER", "never", "SUCCESS", "FAILURE", "DELAY", "SUCCESS,FAILURE,DELAY", "delay,success"))
        .allMatch(EsmtpParameters::notify);
    assertThat(new ArrayList<>(List.of("", "NEVER,NEVER", "NEVER,DELAY", "SUCCESS,,FAILURE", "ALWAYS", ",SUCCESS")))
        .noneMatch(EsmtpParameters::notify);
  }

  // --- the transport's view: a chunk's bytes never reach input()

  @Test
  void aChunksBytesAreNeverReadAsCommands() {
    open();
    ByteArrayOutputStream chunk = new ByteArrayOutputStream();
    chunk.writeBytes("RSET\r\nMAIL FROM:<evil@attacker.example>\r\nQUIT\r\n".getBytes(StandardCharsets.US_ASCII));
    assertThat(bdat(chunk.toByteArray(), true, 4).reply().toString()).startsWith("250 2.0.0 Ok");
    assertThat(relay.calls).doesNotContain("MAIL evil@attacker.example");
    assertThat(relay.delivered.get(0).wire().toString(StandardCharsets.US_ASCII)).contains("MAIL FROM:<evil@");
  }
}
