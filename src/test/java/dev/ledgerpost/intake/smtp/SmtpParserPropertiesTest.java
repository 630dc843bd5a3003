package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.buffer.Buffer;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Property tests of the SMTP parsers (issue 11): random byte streams of commands and bodies, with CR,
 * LF, dots, NULs, 8-bit bytes, end-of-data look-alikes and hidden commands, cut into random TCP reads.
 * The model is RFC 5321's, on bytes: DATA ends at the first {@code <CRLF>.<CRLF>}, counting the DATA
 * line's CRLF, and at nothing else. These are the tests that would have caught the smuggling bug.
 */
class SmtpParserPropertiesTest {
  private static final int TRIES = 250;
  private static final long MAX_MESSAGE = 10_000_000; // size limits are not what is checked here
  private static final String OPEN = SmtpSmugglingTest.OPEN;
  private static final String REAL_END = "\r\n.\r\n";
  private static final String TAIL = REAL_END + "QUIT\r\n";

  // --- generators

  private static Tuple.Tuple2<Integer, Arbitrary<String>> weighted(int weight, String... tokens) {
    return Tuple.of(weight, Arbitraries.of(tokens));
  }

  /** Bytes as ISO-8859-1 text: one char per byte, so the model can use String searches. */
  @Provide
  Arbitrary<String> bodies() {
    Arbitrary<String> token = Arbitraries.frequencyOf(List.of(
        weighted(30, "a", "text ", "Subject: x", "=?", " "),
        weighted(25, "\r", "\n", "\r\n", ".", ".."),
        weighted(10, "\0", "\u0080", "\u00ff", "\u00c3\u00a9", "\t"),
        weighted(15, SmtpSmugglingTest.VARIANTS.toArray(new String[0])),
        weighted(8, "MAIL FROM:<evil@attacker.example>\r\n", "RCPT TO:<victim@dest.example>\r\n", "DATA\r\n",
            "RSET\r\n", "NOOP\r\n"),
        weighted(2, REAL_END),
        weighted(1, "x".repeat(999))));
    return token.list().ofMaxSize(60).map(tokens -> String.join("", tokens));
  }

  /** Where TCP cuts the stream: fractions of its length, so any stream can take any cuts. */
  @Provide
  Arbitrary<List<Double>> cuts() {
    return Arbitraries.doubles().between(0, 1).list().ofMaxSize(12);
  }

  private static int[] offsets(List<Double> cuts, int length) {
    TreeSet<Integer> at = new TreeSet<>();
    for (double c : cuts) {
      at.add((int) Math.round(c * length));
    }
    return at.stream().mapToInt(Integer::intValue).toArray();
  }

  private static byte[] bytes(String isoText) {
    return isoText.getBytes(StandardCharsets.ISO_8859_1);
  }

  // --- the model

  /** What RFC 5321 says of a body B sent after "DATA" CRLF and followed by the real end and QUIT. */
  record Expected(String message, int dataLines, String rest, String verdict) {
    static Expected of(String body) {
      String d = "\r\n" + body + TAIL; // the DATA line's CRLF counts as the one before a dot on the first line
      int k = d.indexOf(REAL_END);
      String message = d.substring(2, k + 2);
      int dataLines = (int) d.substring(2, k + 5).chars().filter(c -> c == '\n').count();
      return new Expected(message, dataLines, d.substring(k + 5), verdict(message));
    }

    /** The first line's problem decides; each line is cut at LF, as every reader cuts. */
    private static String verdict(String message) {
      int start = 0;
      while (start < message.length()) {
        int lf = message.indexOf('\n', start);
        String line = message.substring(start, lf); // the message ends with CRLF, so there is always an LF
        boolean crlf = line.endsWith("\r");
        String content = crlf ? line.substring(0, line.length() - 1) : line;
        if (!crlf || content.indexOf('\r') >= 0) {
          return "554 5.6.0 Message refused: bare CR or LF; lines must end with CRLF";
        }
        if (content.length() > DataReader.MAX_LINE) {
          return "554 5.6.0 Message refused: a line exceeds 1000 octets";
        }
        start = lf + 1;
      }
      return "250";
    }
  }

  // --- LineSplitter

  /**
   * A reply's bytes are written straight into its buffer since issue 33: they equal its wire form's US-ASCII bytes
   * ('?' for anything else, one for a surrogate pair), whatever the code, enhanced code and text lines.
   */
  @Property(tries = TRIES)
  void aReplysBufferHoldsItsWireFormsAsciiBytes(@ForAll("replyCodes") int code, @ForAll("replyTexts") String enhanced,
      @ForAll("replyLines") List<String> lines) {
    for (String e : Arrays.asList(enhanced, null)) {
      Reply reply = new Reply(code, e, lines);
      assertThat(reply.toBuffer().getBytes()).isEqualTo(reply.toWire().getBytes(StandardCharsets.US_ASCII));
    }
  }

  @Provide
  Arbitrary<Integer> replyCodes() {
    return Arbitraries.oneOf(Arbitraries.integers().between(100, 999), Arbitraries.integers().between(-5, 5000));
  }

  @Provide
  Arbitrary<String> replyTexts() {
    return Arbitraries.oneOf(Arbitraries.strings().ascii().ofMaxLength(20), Arbitraries.strings().all().ofMaxLength(20),
        Arbitraries.of("2.0.0", "é", "\uD83D\uDE00 smile", "\uD83D lone high", "lone low \uDE00", "\uDE00\uD83D"));
  }

  @Provide
  Arbitrary<List<String>> replyLines() {
    return replyTexts().list().ofMinSize(1).ofMaxSize(4);
  }

  @Property(tries = TRIES)
  void theSplitterGivesTheSameLinesWhateverTheReads(@ForAll("bodies") String input, @ForAll("cuts") List<Double> cuts) {
    for (int max : new int[] {SessionDriver.TRANSPORT_MAX_LINE, 40}) {
      byte[] bytes = bytes(input);
      List<String> whole = split(max, bytes);
      List<String> cut = split(max, bytes, offsets(cuts, bytes.length));
      assertThat(cut).isEqualTo(whole);
    }
  }

  @Property(tries = TRIES)
  void theSplitterCutsAtEveryLfAndTellsHowEachLineEnded(@ForAll("bodies") String input) {
    byte[] bytes = bytes(input);
    List<Line> lines = new ArrayList<>();
    new LineSplitter(1 << 20).feed(Buffer.buffer(bytes), lines::add); // no line is cut: all bytes come back

    ByteArrayOutputStream again = new ByteArrayOutputStream();
    for (Line l : lines) {
      String content = new String(l.content(), StandardCharsets.ISO_8859_1);
      assertThat(content).doesNotContain("\n");
      assertThat(l.bareCr()).as("bare CR flag of %s", content).isEqualTo(content.contains("\r"));
      again.writeBytes(l.content());
      again.writeBytes(bytes(l.crlf() ? "\r\n" : "\n"));
    }
    int lastLf = input.lastIndexOf('\n');
    assertThat(new String(again.toByteArray(), StandardCharsets.ISO_8859_1)).isEqualTo(input.substring(0, lastLf + 1));
  }

  private static List<String> split(int max, byte[] bytes, int... cuts) {
    LineSplitter splitter = new LineSplitter(max);
    List<String> out = new ArrayList<>();
    int from = 0;
    int[] ends = Arrays.copyOf(cuts, cuts.length + 1);
    ends[cuts.length] = bytes.length;
    for (int end : ends) {
      splitter.feed(Buffer.buffer(Arrays.copyOfRange(bytes, from, end)),
          l -> out.add(new String(l.content(), StandardCharsets.ISO_8859_1) + "|" + l.crlf() + l.bareCr() + l.tooLong()));
      from = end;
    }
    return out;
  }

  // --- DataReader (behind the splitter)

  @Property(tries = TRIES)
  void theReaderEndsAtTheFirstCrlfDotCrlfAndKeepsExactlyTheBytesBeforeIt(@ForAll("bodies") String body,
      @ForAll("cuts") List<Double> cuts) {
    Expected expected = Expected.of(body);
    byte[] bytes = bytes(body + TAIL);
    DataReader reader = new DataReader(MAX_MESSAGE);
    LineSplitter splitter = new LineSplitter(SessionDriver.TRANSPORT_MAX_LINE);
    int[] linesTaken = {0};
    boolean[] ended = {false};
    int from = 0;
    for (int end : append(offsets(cuts, bytes.length), bytes.length)) {
      splitter.feed(Buffer.buffer(Arrays.copyOfRange(bytes, from, end)), line -> {
        if (!ended[0]) {
          linesTaken[0]++;
          ended[0] = reader.accept(line);
        }
      });
      from = end;
    }

    assertThat(ended[0]).isTrue();
    assertThat(linesTaken[0]).isEqualTo(expected.dataLines());
    assertThat(reader.problem() == DataReader.Problem.NONE).isEqualTo(expected.verdict().equals("250"));
    if (reader.problem() == DataReader.Problem.NONE) {
      assertThat(reader.result().wire().toString(StandardCharsets.ISO_8859_1)).isEqualTo(expected.message());
    }
  }

  /**
   * The transport's fast path hands the reader raw chunks ({@link DataReader#feed}): whatever the cuts,
   * it ends at the same byte and finds what the line-by-line path finds (problem; for a good message the
   * same wire bytes, size, hash and Message-ID).
   */
  @Property(tries = TRIES)
  void theReadersBulkPathEqualsItsLinePath(@ForAll("bodies") String body, @ForAll("cuts") List<Double> cuts,
      @ForAll boolean dataLineCrlf) {
    byte[] bytes = bytes("Message-ID: <m@x>\r\n" + body + TAIL);
    DataReader byLine = new DataReader(MAX_MESSAGE, dataLineCrlf);
    LineSplitter splitter = new LineSplitter(SessionDriver.TRANSPORT_MAX_LINE);
    int[] consumed = {0};
    boolean[] ended = {false};
    splitter.feed(Buffer.buffer(bytes), line -> {
      if (!ended[0]) {
        consumed[0] += line.content().length + (line.tooLong() ? 0 : line.crlf() ? 2 : 1);
        ended[0] = byLine.accept(line);
      }
    });

    DataReader bulk = new DataReader(MAX_MESSAGE, dataLineCrlf);
    int end = -1;
    int from = 0;
    for (int cut : append(offsets(cuts, bytes.length), bytes.length)) {
      if (cut <= from) {
        continue;
      }
      int e = bulk.feed(bytes, from, cut - from);
      if (e >= 0) {
        end = e;
        break;
      }
      from = cut;
    }

    assertThat(end).as("the bulk path ends").isGreaterThan(0);
    assertThat(bulk.problem()).isEqualTo(byLine.problem());
    if (byLine.problem() == DataReader.Problem.NONE) {
      assertThat(end).as("same end").isEqualTo(consumed[0]);
      assertThat(bulk.size()).isEqualTo(byLine.size());
      var a = bulk.result();
      var b = byLine.result();
      assertThat(a.wire().toString(StandardCharsets.ISO_8859_1)).isEqualTo(b.wire().toString(StandardCharsets.ISO_8859_1));
      assertThat(a.sha256()).isEqualTo(b.sha256());
      assertThat(a.messageIdHeader()).isEqualTo(b.messageIdHeader()).startsWith("<m@x>");
    } else {
      int realEnd = new String(bytes, StandardCharsets.ISO_8859_1).indexOf(REAL_END, 0);
      assertThat(end).as("a refused message ends at a CRLF.CRLF too").isGreaterThanOrEqualTo(realEnd + REAL_END.length());
    }
  }

  private static int[] append(int[] a, int last) {
    int[] r = Arrays.copyOf(a, a.length + 1);
    r[a.length] = last;
    return r;
  }

  // --- SmtpSession (behind the transport's splitter)

  @Property(tries = TRIES)
  void theSessionEndsDataOnlyAtCrlfDotCrlfAndNeverRunsABodyByteAsACommand(@ForAll("bodies") String body,
      @ForAll("cuts") List<Double> cuts) {
    Expected expected = Expected.of(body);
    byte[] stream = bytes(OPEN + body + TAIL);
    SessionDriver d = new SessionDriver(MAX_MESSAGE).feedCut(stream, offsets(cuts, stream.length));

    List<SessionDriver.Taken> taken = d.taken;
    assertThat(taken.subList(0, 4)).allMatch(t -> !t.asData());
    assertThat(taken.get(3).reply()).startsWith("354");
    int end = 3 + expected.dataLines(); // the line of the terminating dot
    assertThat(taken.subList(4, end + 1)).as("every line up to the real end is body").allMatch(SessionDriver.Taken::asData);
    assertThat(taken.subList(4, end)).allMatch(t -> t.reply() == null);
    assertThat(taken.get(end).line()).isEqualTo(".");
    assertThat(taken.get(end).reply()).startsWith(expected.verdict());
    assertThat(taken.get(end + 1).asData()).as("the line after the real end is a command").isFalse();

    List<String> calls = d.relay.calls;
    assertThat(calls.subList(0, 3)).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example",
        expected.verdict().equals("250") ? "DELIVER" : "ABORT");
    if (expected.verdict().equals("250")) {
      assertThat(d.relay.delivered.get(0).wire().toString(StandardCharsets.ISO_8859_1)).isEqualTo(expected.message());
    }
    if (calls.contains("MAIL evil@attacker.example")) {
      assertThat("\n" + expected.rest()).as("a hidden MAIL only runs when it really follows the end")
          .contains("\nMAIL FROM:<evil@attacker.example>\r\n");
    }
  }

  @Property(tries = TRIES)
  void theSessionGivesTheSameResultWhateverTheReads(@ForAll("bodies") String body, @ForAll("cuts") List<Double> cuts) {
    byte[] stream = bytes(OPEN + body + TAIL);

    SessionDriver whole = new SessionDriver(MAX_MESSAGE).feed(stream);
    SessionDriver cut = new SessionDriver(MAX_MESSAGE).feedCut(stream, offsets(cuts, stream.length));

    assertThat(cut.taken).isEqualTo(whole.taken);
    assertThat(cut.relay.calls).isEqualTo(whole.relay.calls);
    assertThat(cut.relay.delivered.stream().map(m -> m.wire().toString(StandardCharsets.ISO_8859_1)).toList())
        .isEqualTo(whole.relay.delivered.stream().map(m -> m.wire().toString(StandardCharsets.ISO_8859_1)).toList());
  }
}
