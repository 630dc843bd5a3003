package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.buffer.Buffer;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LineSplitterTest {

  /** A line as a comparable value: content and how it ended. */
  private record Seen(String content, boolean crlf, boolean bareCr, boolean tooLong) {
    static Seen of(Line l) {
      return new Seen(new String(l.content(), StandardCharsets.ISO_8859_1), l.crlf(), l.bareCr(), l.tooLong());
    }
  }

  private static Seen crlf(String content) {
    return new Seen(content, true, false, false);
  }

  private static List<Seen> split(LineSplitter splitter, String... chunks) {
    List<Seen> out = new ArrayList<>();
    for (String chunk : chunks) {
      splitter.feed(Buffer.buffer(chunk.getBytes(StandardCharsets.ISO_8859_1)), l -> out.add(Seen.of(l)));
    }
    return out;
  }

  private static List<Seen> split(int max, String... chunks) {
    return split(new LineSplitter(max), chunks);
  }

  private static List<Seen> byteByByte(int max, String input) {
    LineSplitter splitter = new LineSplitter(max);
    List<Seen> out = new ArrayList<>();
    byte[] bytes = input.getBytes(StandardCharsets.ISO_8859_1);
    for (byte b : bytes) {
      splitter.feed(Buffer.buffer(new byte[] {b}), l -> out.add(Seen.of(l)));
    }
    return out;
  }

  @Test
  void crlfTerminatedLinesComeOutWithoutTheirTerminator() {
    assertThat(split(100, "EHLO a.example\r\nMAIL FROM:<x@y.example>\r\n\r\n"))
        .containsExactly(crlf("EHLO a.example"), crlf("MAIL FROM:<x@y.example>"), crlf(""));
  }

  @Test
  void aBareLfEndsALineMarkedAsNotCrlf() {
    assertThat(split(100, "one\ntwo\r\n"))
        .containsExactly(new Seen("one", false, false, false), crlf("two"));
  }

  @Test
  void aBareCrInsideALineIsFlaggedAndKept() {
    assertThat(split(100, "one\rtwo\r\n"))
        .containsExactly(new Seen("one\rtwo", true, true, false));
  }

  @Test
  void aCrAtTheStartOfALineIsABareCr() {
    assertThat(split(100, "\rdata\r\n")).containsExactly(new Seen("\rdata", true, true, false));
  }

  @Test
  void crCrLfIsACrlfLineWithABareCr() {
    assertThat(split(100, "data\r\r\n")).containsExactly(new Seen("data\r", true, true, false));
  }

  @Test
  void aBareCrFlagDoesNotLeakIntoTheNextLine() {
    assertThat(split(100, "a\rb\r\nclean\r\n"))
        .containsExactly(new Seen("a\rb", true, true, false), crlf("clean"));
  }

  @Test
  void aCrlfSplitAcrossTwoChunksIsStillCrlf() {
    assertThat(split(100, "QUIT\r", "\n")).containsExactly(crlf("QUIT"));
  }

  @Test
  void aCrAtTheEndOfAChunkFollowedByMoreTextIsABareCr() {
    assertThat(split(100, "ab\r", "cd\r\n")).containsExactly(new Seen("ab\rcd", true, true, false));
  }

  @Test
  void nothingIsEmittedUntilTheLineEndArrives() {
    LineSplitter splitter = new LineSplitter(100);

    assertThat(split(splitter, "MAIL FROM:", "<x@y.example>")).isEmpty();
    assertThat(splitter.partial()).isTrue();
    assertThat(split(splitter, "\r\n")).containsExactly(crlf("MAIL FROM:<x@y.example>"));
    assertThat(splitter.partial()).isFalse();
  }

  /** Every way of cutting the stream into chunks gives the same lines. */
  @Test
  void chunkBoundariesAnywhereGiveTheSameLines() {
    String input = "EHLO a\r\nbare lf\n\r\nmid\rcr\r\n" + "x".repeat(40) + "\r\n" + "y".repeat(40) + "\n"
        + "cr before cut" + "\r".repeat(2) + "\n.\r\n";
    List<Seen> allAtOnce = split(16, input);

    assertThat(allAtOnce).hasSize(8);
    assertThat(byteByByte(16, input)).isEqualTo(allAtOnce);
    for (int cut = 0; cut <= input.length(); cut++) {
      assertThat(split(16, input.substring(0, cut), input.substring(cut))).as("cut at %d", cut).isEqualTo(allAtOnce);
    }
    for (int a = 1; a < input.length(); a += 3) {
      for (int b = a; b < input.length(); b += 5) {
        assertThat(split(16, input.substring(0, a), input.substring(a, b), input.substring(b)))
            .as("cuts at %d and %d", a, b).isEqualTo(allAtOnce);
      }
    }
  }

  @Test
  void aLineOverTheLimitIsCutAndFlaggedAndTheNextLineIsClean() {
    assertThat(split(8, "0123456789abcdef\r\nnext\r\n"))
        .containsExactly(new Seen("01234567", true, false, true), crlf("next"));
  }

  @Test
  void aLineOfExactlyTheLimitIsNotTooLong() {
    assertThat(split(8, "01234567\r\n")).containsExactly(crlf("01234567"));
  }

  @Test
  void aLineOneOverTheLimitEndingInBareLfIsFlaggedTooLong() {
    List<Seen> lines = split(8, "012345678\n");

    assertThat(lines).hasSize(1);
    assertThat(lines.get(0).tooLong()).isTrue();
    assertThat(lines.get(0).content()).isEqualTo("01234567");
    assertThat(lines.get(0).crlf()).isFalse();
  }

  @Test
  void anOverflowingLineEndingInBareLfKeepsOnlyTheFirstBytesWithinTheLimit() {
    List<Seen> lines = split(8, "0123456789abcdef\n");

    assertThat(lines).containsExactly(new Seen("01234567", false, false, true));
  }

  @Test
  void aBareCrBeyondTheCutIsStillNoticed() {
    assertThat(split(8, "0123456789\rab\r\n")).containsExactly(new Seen("01234567", true, true, true));
  }

  @Test
  void aLongLineIsHeldInBoundedMemory() throws Exception {
    LineSplitter splitter = new LineSplitter(1000);
    List<Line> out = new ArrayList<>();
    byte[] chunk = new byte[64 * 1024];
    java.util.Arrays.fill(chunk, (byte) 'x');

    for (int i = 0; i < 160; i++) { // 10 MiB without a line end
      splitter.feed(Buffer.buffer(chunk), out::add);
    }

    assertThat(out).isEmpty();
    assertThat(splitter.partial()).isTrue();
    assertThat(internalBuffer(splitter).length).isLessThanOrEqualTo(1001);
    splitter.feed(Buffer.buffer("\r\n"), out::add);
    assertThat(out).hasSize(1);
    assertThat(out.get(0).content()).hasSize(1000);
    assertThat(out.get(0).tooLong()).isTrue();
    assertThat(out.get(0).crlf()).isTrue();
  }

  private static byte[] internalBuffer(LineSplitter splitter) throws ReflectiveOperationException {
    Field f = LineSplitter.class.getDeclaredField("buf");
    f.setAccessible(true);
    return (byte[]) f.get(splitter);
  }

  @Test
  void resetForgetsAPartialLine() {
    LineSplitter splitter = new LineSplitter(100);
    assertThat(split(splitter, "RCPT TO:<evil@inject")).isEmpty();

    splitter.reset();

    assertThat(splitter.partial()).isFalse();
    assertThat(split(splitter, "EHLO a\r\n")).containsExactly(crlf("EHLO a"));
  }

  @Test
  void resetClearsTheOverflowAndBareCrFlags() {
    LineSplitter splitter = new LineSplitter(4);
    assertThat(split(splitter, "a\rbcdefgh")).isEmpty();
    assertThat(splitter.partial()).isTrue();

    splitter.reset();

    assertThat(split(splitter, "QUIT\r\n")).containsExactly(crlf("QUIT"));
  }
}
