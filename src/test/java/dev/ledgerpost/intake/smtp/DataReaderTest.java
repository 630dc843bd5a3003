package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.intake.smtp.DataReader.Problem;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

class DataReaderTest {
  private static final int TRANSPORT_MAX_LINE = 12288; // what SmtpConnection gives its splitter

  /** Feeds complete lines; returns whether the last one ended the body. */
  private static boolean accept(DataReader reader, String... lines) {
    boolean done = false;
    for (String line : lines) {
      assertThat(done).as("no line after the terminating dot").isFalse();
      done = reader.accept(Line.of(line));
    }
    return done;
  }

  private static Line raw(String content, boolean crlf, boolean bareCr, boolean tooLong) {
    return new Line(content.getBytes(StandardCharsets.ISO_8859_1), crlf, bareCr, tooLong);
  }

  private static String sha256(String s) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
  }

  /** Runs raw socket bytes through a splitter and a reader, in the given chunks, up to the dot. */
  private static DataReader receive(long maxSize, List<byte[]> chunks) {
    DataReader reader = new DataReader(maxSize);
    LineSplitter splitter = new LineSplitter(TRANSPORT_MAX_LINE);
    boolean[] done = {false};
    for (byte[] chunk : chunks) {
      splitter.feed(Buffer.buffer(chunk), line -> {
        assertThat(done[0]).as("no line after the dot").isFalse();
        done[0] = reader.accept(line);
      });
    }
    assertThat(done[0]).as("the body ended").isTrue();
    return reader;
  }

  @Test
  void theDotLineEndsTheBodyAndIsNotPartOfIt() throws Exception {
    DataReader reader = new DataReader(10_000);

    assertThat(accept(reader, "Subject: hi", "", "body")).isFalse();
    assertThat(reader.accept(Line.of("."))).isTrue();

    MessageData m = reader.result();
    assertThat(m.wire().toString(StandardCharsets.US_ASCII)).isEqualTo("Subject: hi\r\n\r\nbody\r\n");
    assertThat(m.size()).isEqualTo(21);
    assertThat(m.sha256()).isEqualTo(sha256("Subject: hi\r\n\r\nbody\r\n"));
    assertThat(reader.problem()).isEqualTo(Problem.NONE);
  }

  @Test
  void anEmptyBodyIsAllowed() throws Exception {
    DataReader reader = new DataReader(10_000);

    assertThat(reader.accept(Line.of("."))).isTrue();

    assertThat(reader.result().size()).isZero();
    assertThat(reader.result().sha256()).isEqualTo(sha256(""));
    assertThat(reader.result().messageIdHeader()).isNull();
  }

  @Test
  void dotStuffingStaysOnTheWireButNotInSizeAndHash() throws Exception {
    DataReader reader = new DataReader(10_000);

    assertThat(accept(reader, "Subject: dots", "", "..", "..x", ".")).isTrue();

    MessageData m = reader.result();
    assertThat(m.wire().toString(StandardCharsets.US_ASCII)).isEqualTo("Subject: dots\r\n\r\n..\r\n..x\r\n");
    String unstuffed = "Subject: dots\r\n\r\n.\r\n.x\r\n";
    assertThat(m.size()).isEqualTo(unstuffed.length());
    assertThat(m.sha256()).isEqualTo(sha256(unstuffed));
  }

  @Test
  void aDotEndedByBareLfIsNotTheEndOfData() {
    DataReader reader = new DataReader(10_000);

    assertThat(reader.accept(raw(".", false, false, false))).isFalse();
    assertThat(reader.accept(raw(".", true, true, false))).isFalse();
    assertThat(reader.accept(raw(".", true, false, true))).isFalse();
    assertThat(reader.accept(Line.of("."))).isTrue();
    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void aDotWithCrlfAfterABareLfIsNoEndOfDataEither() {
    DataReader reader = new DataReader(10_000);

    assertThat(reader.accept(raw("legit", false, false, false))).isFalse();
    assertThat(reader.accept(Line.of("."))).as("<LF>.<CRLF> is the smuggler's end of data").isFalse();
    assertThat(reader.accept(Line.of("MAIL FROM:<evil@attacker.example>"))).isFalse();
    assertThat(reader.accept(Line.of("."))).as("the real <CRLF>.<CRLF>").isTrue();
    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void theDataLinesCrlfIsTheOneBeforeADotOnTheFirstLine() {
    assertThat(new DataReader(10_000, true).accept(Line.of("."))).isTrue();

    DataReader afterBareLf = new DataReader(10_000, false);
    assertThat(afterBareLf.accept(Line.of("."))).as("DATA<LF>.<CRLF>").isFalse();
    assertThat(afterBareLf.accept(Line.of("."))).isTrue();
    assertThat(afterBareLf.problem()).as("that dot must never go downstream").isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void aDataLineEndedByABareLfDoesNotSpoilABodyWithoutADotFirst() {
    DataReader reader = new DataReader(10_000, false);

    assertThat(accept(reader, "Subject: s", "", "body", ".")).isTrue();
    assertThat(reader.problem()).isEqualTo(Problem.NONE);
  }

  @Test
  void aLineEndedInCrlfAfterABareCrInsideItStillCountsAsTheCrlfBeforeTheDot() {
    DataReader reader = new DataReader(10_000);

    assertThat(reader.accept(raw("a\rb", true, true, false))).isFalse();
    assertThat(reader.accept(Line.of("."))).as("a\rb<CRLF>.<CRLF> holds a real <CRLF>.<CRLF>").isTrue();
    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void aBareLfLineIsABareLineEnding() {
    DataReader reader = new DataReader(10_000);

    reader.accept(raw("line", false, false, false));

    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void aBareCrLineIsABareLineEnding() {
    DataReader reader = new DataReader(10_000);

    reader.accept(raw("li\rne", true, true, false));

    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void a998OctetLineIsFineAnd999IsTooLong() {
    DataReader ok = new DataReader(100_000);
    accept(ok, "x".repeat(DataReader.MAX_LINE));
    assertThat(ok.problem()).isEqualTo(Problem.NONE);

    DataReader tooLong = new DataReader(100_000);
    accept(tooLong, "x".repeat(DataReader.MAX_LINE + 1));
    assertThat(tooLong.problem()).isEqualTo(Problem.LINE_TOO_LONG);
  }

  @Test
  void theTransparencyDotDoesNotCountTowardTheLineLimitOnEitherPath() {
    String fine = "." + ".".repeat(1) + "x".repeat(DataReader.MAX_LINE - 1); // 998 octets of content, 999 on the wire
    String over = "." + ".".repeat(1) + "x".repeat(DataReader.MAX_LINE); // 999 octets of content
    DataReader lines = new DataReader(100_000);
    accept(lines, fine);
    assertThat(lines.problem()).isEqualTo(Problem.NONE);
    DataReader tooLong = new DataReader(100_000);
    accept(tooLong, over);
    assertThat(tooLong.problem()).isEqualTo(Problem.LINE_TOO_LONG);

    for (String line : java.util.List.of(fine, over)) {
      byte[] wire = (line + "\r\n.\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      DataReader bulk = new DataReader(100_000);
      assertThat(bulk.feed(wire, 0, wire.length)).isEqualTo(wire.length);
      assertThat(bulk.problem()).as("bulk path, %d octets on the wire", line.length())
          .isEqualTo(line == fine ? Problem.NONE : Problem.LINE_TOO_LONG);
    }
  }

  @Test
  void aLineTheSplitterCutIsTooLong() {
    DataReader reader = new DataReader(100_000);

    reader.accept(raw("short after the cut", true, false, true));

    assertThat(reader.problem()).isEqualTo(Problem.LINE_TOO_LONG);
  }

  @Test
  void aMessageExactlyAtTheLimitIsFineAndOneOctetMoreIsTooBig() {
    DataReader atLimit = new DataReader(10);
    accept(atLimit, "12345678"); // 8 + CRLF
    assertThat(atLimit.problem()).isEqualTo(Problem.NONE);
    assertThat(atLimit.size()).isEqualTo(10);

    DataReader over = new DataReader(10);
    accept(over, "123456789");
    assertThat(over.problem()).isEqualTo(Problem.TOO_BIG);
  }

  @Test
  void theSizeLimitCountsUnstuffedOctets() {
    DataReader reader = new DataReader(10);

    accept(reader, ".12345678"); // 9 on the wire, 8 + CRLF in the message

    assertThat(reader.problem()).isEqualTo(Problem.NONE);
  }

  @Test
  void theFirstProblemIsTheOneReported() {
    DataReader reader = new DataReader(20);

    reader.accept(raw("bare", false, false, false));
    accept(reader, "x".repeat(1500));

    assertThat(reader.problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  @Test
  void aRefusedBodyIsReadToTheDotWithoutKeepingIt() {
    DataReader reader = new DataReader(1000);
    String line = "y".repeat(98);

    for (int i = 0; i < 10_000; i++) { // about 1 MB after the limit
      assertThat(reader.accept(Line.of(line))).isFalse();
    }

    assertThat(reader.problem()).isEqualTo(Problem.TOO_BIG);
    assertThat(reader.size()).isEqualTo(1_000_000);
    assertThat(reader.result().wire().length()).isLessThanOrEqualTo(1000);
    assertThat(reader.accept(Line.of("."))).isTrue();
  }

  @Test
  void chunkBoundariesDoNotChangeTheReceivedMessage() {
    String message = "Message-ID:\r\n <chunks@client.example>\r\nSubject: chunks\r\n\r\n..stuffed\r\n"
        + "z".repeat(300) + "\r\nlast\r\n.\r\n";
    byte[] bytes = message.getBytes(StandardCharsets.US_ASCII);

    MessageData whole = receive(100_000, List.of(bytes)).result();
    List<byte[]> single = new ArrayList<>();
    for (byte b : bytes) {
      single.add(new byte[] {b});
    }
    MessageData byteByByte = receive(100_000, single).result();

    assertThat(byteByByte.wire().getBytes()).isEqualTo(whole.wire().getBytes());
    assertThat(byteByByte.size()).isEqualTo(whole.size());
    assertThat(byteByByte.sha256()).isEqualTo(whole.sha256());
    assertThat(byteByByte.messageIdHeader()).isEqualTo(whole.messageIdHeader()).isEqualTo("<chunks@client.example>");
    assertThat(whole.wire().toString(StandardCharsets.US_ASCII)).isEqualTo(message.substring(0, message.length() - 3));
  }

  @Test
  void aBareLfSplitAcrossChunksIsStillRefused() {
    byte[] a = "Subject: x\r\n\r\nline one".getBytes(StandardCharsets.US_ASCII);
    byte[] b = "\n.\n".getBytes(StandardCharsets.US_ASCII);
    byte[] c = "more\r\n.\r\n".getBytes(StandardCharsets.US_ASCII);

    assertThat(receive(10_000, List.of(a, b, c)).problem()).isEqualTo(Problem.BARE_LINE_ENDING);
  }

  // --- Message-ID

  @Test
  void messageIdIsFoundCaseInsensitivelyAndTrimmed() {
    assertThat(DataReader.messageId("From: a@b\nmessage-ID:  <id.1@b>  \nSubject: s\n")).isEqualTo("<id.1@b>");
  }

  @Test
  void messageIdWithoutSpaceAfterTheColonIsFound() {
    assertThat(DataReader.messageId("Message-Id:<id.2@b>\n")).isEqualTo("<id.2@b>");
  }

  @Test
  void aMessageIdFoldedAfterTheColonIsUnfolded() {
    assertThat(DataReader.messageId("Message-ID:\n\t<folded.3@b>\nSubject: s\n")).isEqualTo("<folded.3@b>");
  }

  @Test
  void aMessageIdFoldedAcrossSeveralLinesIsUnfolded() {
    assertThat(DataReader.messageId("Message-ID: \n <folded.4@b>\n \nSubject: s\n")).isEqualTo("<folded.4@b>");
  }

  /** Compared in place since issue 33: ASCII letters in any case, no look-alike (what String.toLowerCase gave). */
  @Test
  void onlyAsciiCaseVariantsNameTheMessageIdField() {
    assertThat(DataReader.messageId("MESSAGE-ID: <up@b>\n")).isEqualTo("<up@b>");
    assertThat(DataReader.messageId("Message-\u0130D: <dotted-i@b>\n")).isNull(); // lower-cases to "i" and a dot
    assertThat(DataReader.messageId("Me\u017F\u017Fage-ID: <long-s@b>\n")).isNull(); // upper-cases to "S"
    assertThat(DataReader.messageId("Message-ID <no-colon@b>\nMessage-I\n")).isNull();
  }

  @Test
  void noMessageIdGivesNull() {
    assertThat(DataReader.messageId("Subject: s\nX-Message-ID: <not@this>\n")).isNull();
    assertThat(DataReader.messageId("")).isNull();
  }

  @Test
  void anOversizedMessageIdIsCutTo998Characters() {
    assertThat(DataReader.messageId("Message-ID: <" + "a".repeat(2000) + ">\n")).hasSize(998);
  }

  @Test
  void theReaderTakesTheMessageIdFromTheHeaderOnly() {
    DataReader reader = new DataReader(10_000);

    accept(reader, "Subject: s", "", "Message-ID: <in-body@b>", ".");

    assertThat(reader.result().messageIdHeader()).isNull();
  }
}
