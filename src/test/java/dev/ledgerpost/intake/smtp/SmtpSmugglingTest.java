package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * SMTP smuggling (issue 11): only {@code <CRLF>.<CRLF>} ends DATA. A client hides a second transaction
 * behind a dot that follows a bare CR or LF; a server that ends DATA there runs the hidden MAIL, RCPT
 * and DATA as commands and relays a message the first one never showed. Here the bytes go through the
 * transport's splitter and the session in every way TCP could cut them.
 */
class SmtpSmugglingTest {
  /** Every end-of-data look-alike that is not {@code <CRLF>.<CRLF>}. */
  static final List<String> VARIANTS = List.of("\n.\r\n", "\n.\n", "\r.\r", "\r\n.\n", "\r\n.\r", "\n.\r", "\r.\n", "\r.\r\n");

  static final String OPEN = "EHLO client.example\r\nMAIL FROM:<sender@client.example>\r\nRCPT TO:<rcpt@dest.example>\r\n"
      + "DATA\r\n";
  static final String HIDDEN = "MAIL FROM:<evil@attacker.example>\r\nRCPT TO:<victim@dest.example>\r\nDATA\r\n"
      + "Subject: hidden\r\n\r\nhidden body\r\n";

  /** A whole client stream: a transaction whose body smuggles another one, the real end, then QUIT. */
  static byte[] attack(String variant) {
    return (OPEN + "Subject: smuggle\r\n\r\nlegit body" + variant + HIDDEN + ".\r\nQUIT\r\n")
        .getBytes(StandardCharsets.ISO_8859_1);
  }

  static Stream<String> variants() {
    return VARIANTS.stream();
  }

  /** The refused message swallowed everything up to the real end; nothing hidden ran or went downstream. */
  private static void assertSmugglingRefused(SessionDriver d, String what) {
    assertThat(d.replies()).as(what).hasSize(6);
    assertThat(d.replies().subList(1, 6)).as(what).containsExactly(
        "250 2.1.0 Sender OK",
        "250 2.1.5 Recipient ok",
        "354 End data with <CR><LF>.<CR><LF>",
        "554 5.6.0 Message refused: bare CR or LF; lines must end with CRLF",
        "221 2.0.0 Bye");
    assertThat(d.commands()).as(what).containsExactly("EHLO client.example", "MAIL FROM:<sender@client.example>",
        "RCPT TO:<rcpt@dest.example>", "DATA", "QUIT");
    assertThat(d.relay.calls).as(what).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example", "ABORT");
    assertThat(d.relay.delivered).as(what).isEmpty();
  }

  @ParameterizedTest
  @MethodSource("variants")
  void aSmuggledTransactionIsPartOfTheRefusedMessageInOneRead(String variant) {
    assertSmugglingRefused(new SessionDriver(100_000).feed(attack(variant)), "one read");
  }

  @ParameterizedTest
  @MethodSource("variants")
  void aSmuggledTransactionIsPartOfTheRefusedMessageInTwoReadsCutAnywhere(String variant) {
    byte[] bytes = attack(variant);
    for (int cut = 0; cut <= bytes.length; cut++) {
      assertSmugglingRefused(new SessionDriver(100_000).feedCut(bytes, cut), "cut at " + cut);
    }
  }

  @ParameterizedTest
  @MethodSource("variants")
  void aSmuggledTransactionIsPartOfTheRefusedMessageInThreeReadsCutAnywhereAroundTheLookAlike(String variant) {
    byte[] bytes = attack(variant);
    // Every pair of cuts from the end of the DATA line to the hidden MAIL's first bytes (all pairs of the
    // whole stream took seconds, and the splitter's state that matters lives here).
    int from = OPEN.length() - 2;
    int to = (OPEN + "Subject: smuggle\r\n\r\nlegit body" + variant).length() + 6;
    for (int a = from; a <= to; a++) {
      for (int b = a; b <= to; b++) {
        assertSmugglingRefused(new SessionDriver(100_000).feedCut(bytes, a, b), "cuts at " + a + " and " + b);
      }
    }
  }

  @ParameterizedTest
  @MethodSource("variants")
  void aSmuggledTransactionIsPartOfTheRefusedMessageByteByByte(String variant) {
    byte[] bytes = attack(variant);
    int[] everyByte = new int[bytes.length - 1];
    for (int i = 0; i < everyByte.length; i++) {
      everyByte[i] = i + 1;
    }
    assertSmugglingRefused(new SessionDriver(100_000).feedCut(bytes, everyByte), "byte by byte");
  }

  /** The look-alikes at the very start of the body; the last two use the DATA line's CRLF as their own. */
  static Stream<String> bodyStarts() {
    return Stream.concat(VARIANTS.stream(), Stream.of(".\n", ".\r"));
  }

  @ParameterizedTest
  @MethodSource("bodyStarts")
  void aLookAlikeAtTheVeryStartOfTheBodyDoesNotEndDataEither(String start) {
    byte[] bytes = (OPEN + start + HIDDEN + ".\r\nQUIT\r\n").getBytes(StandardCharsets.ISO_8859_1);
    for (int cut = 0; cut <= bytes.length; cut++) {
      assertSmugglingRefused(new SessionDriver(100_000).feedCut(bytes, cut), "cut at " + cut);
    }
  }

  @Test
  void aDotLineAfterABareLfEndedDataLineIsNoEndOfData() {
    // "DATA\n" is taken leniently as a command, but "\n.\r\n" is still no <CRLF>.<CRLF>.
    String stream = "EHLO client.example\r\nMAIL FROM:<sender@client.example>\r\nRCPT TO:<rcpt@dest.example>\r\nDATA\n"
        + ".\r\n" + HIDDEN + ".\r\nQUIT\r\n";
    SessionDriver d = new SessionDriver(100_000).feed(stream.getBytes(StandardCharsets.ISO_8859_1));

    assertSmugglingRefused(d, "DATA ended by a bare LF");
  }

  @Test
  void theRealEndOfDataRightAfterTheDataLineIsAnEmptyMessage() {
    SessionDriver d = new SessionDriver(100_000).feed((OPEN + ".\r\nQUIT\r\n").getBytes(StandardCharsets.ISO_8859_1));

    assertThat(d.replies().get(4)).startsWith("250 2.0.0 Ok: queued as ");
    assertThat(d.relay.delivered).hasSize(1);
    assertThat(d.relay.delivered.get(0).wire().length()).isZero();
  }

  @Test
  void aBodyWithoutLookAlikesIsDeliveredWithTheSessionInStepAfterwards() {
    String stream = OPEN + "Subject: fine\r\n\r\n.leading dot\r\n..\r\nend\r\n.\r\n"
        + "MAIL FROM:<next@client.example>\r\nQUIT\r\n";
    SessionDriver d = new SessionDriver(100_000).feed(stream.getBytes(StandardCharsets.ISO_8859_1));

    assertThat(d.replies().get(4)).startsWith("250 2.0.0 Ok: queued as ");
    assertThat(d.relay.delivered.get(0).wire().toString(StandardCharsets.ISO_8859_1))
        .isEqualTo("Subject: fine\r\n\r\n.leading dot\r\n..\r\nend\r\n");
    assertThat(d.commands()).endsWith("MAIL FROM:<next@client.example>", "QUIT");
    assertThat(d.replies().get(5)).isEqualTo("250 2.1.0 Sender OK");
  }
}
