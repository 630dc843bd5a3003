package dev.ledgerpost.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class DownstreamReplyTest {

  @Test
  void aSingleLineReplyGivesCodeEnhancedCodeAndText() {
    DownstreamReply r = DownstreamReply.parse(List.of("250 2.0.0 Ok: queued as 4Xk2"));

    assertThat(r.code()).isEqualTo(250);
    assertThat(r.enhancedCode()).isEqualTo("2.0.0");
    assertThat(r.text()).isEqualTo("Ok: queued as 4Xk2");
    assertThat(r).hasToString("250 2.0.0 Ok: queued as 4Xk2");
  }

  @Test
  void aMultiLineReplyJoinsItsLinesAndStripsTheEnhancedCodeFromEach() {
    DownstreamReply r = DownstreamReply.parse(List.of(
        "550-5.7.1 Message rejected as spam.",
        "550-5.7.1 See https://postmaster.example/spam",
        "550 5.7.1 for details"));

    assertThat(r.code()).isEqualTo(550);
    assertThat(r.enhancedCode()).isEqualTo("5.7.1");
    assertThat(r.text()).isEqualTo("Message rejected as spam. See https://postmaster.example/spam for details");
  }

  @Test
  void aMultiLineReplyWithoutEnhancedCodesKeepsEveryLine() {
    DownstreamReply r = DownstreamReply.parse(List.of("250-smtp.example at your service", "250-PIPELINING", "250 8BITMIME"));

    assertThat(r.enhancedCode()).isNull();
    assertThat(r.text()).isEqualTo("smtp.example at your service PIPELINING 8BITMIME");
  }

  @Test
  void theEnhancedCodeMayFirstAppearOnALaterLine() {
    DownstreamReply r = DownstreamReply.parse(List.of("451-Greylisted,", "451 4.7.1 please retry later"));

    assertThat(r.enhancedCode()).isEqualTo("4.7.1");
    assertThat(r.text()).isEqualTo("Greylisted, please retry later");
  }

  @Test
  void anEnhancedCodeOfAnotherClassThanTheReplyIsIgnored() {
    DownstreamReply r = DownstreamReply.parse(List.of("550 4.7.1 inconsistent"));

    assertThat(r.enhancedCode()).isNull();
    assertThat(r.enhancedOrDefault("0.0")).isEqualTo("5.0.0");
  }

  @Test
  void subjectAndDetailMayHaveUpToThreeDigits() {
    assertThat(DownstreamReply.parse(List.of("554 5.123.456 wide")).enhancedCode()).isEqualTo("5.123.456");
    assertThat(DownstreamReply.parse(List.of("250 2.0.0")).enhancedCode()).isEqualTo("2.0.0");
  }

  @Test
  void textThatOnlyLooksLikeAnEnhancedCodeIsKeptAsText() {
    assertThat(DownstreamReply.parse(List.of("554 5.1234.1 too wide")).enhancedCode()).isNull();
    assertThat(DownstreamReply.parse(List.of("250 2.0.0.1 four parts")).enhancedCode()).isNull();
    assertThat(DownstreamReply.parse(List.of("250 2.0.0ok glued")).enhancedCode()).isNull();
    assertThat(DownstreamReply.parse(List.of("250 1.2.3 class one")).enhancedCode()).isNull();
    assertThat(DownstreamReply.parse(List.of("250 1.2.3 class one")).text()).isEqualTo("1.2.3 class one");
  }

  @Test
  void aReplyWithoutTextHasEmptyText() {
    DownstreamReply r = DownstreamReply.parse(List.of("354"));

    assertThat(r.code()).isEqualTo(354);
    assertThat(r.text()).isEmpty();
    assertThat(r).hasToString("354");
  }

  @Test
  void theClassDecidesPositiveTransientAndPermanent() {
    DownstreamReply ok = new DownstreamReply(250, null, "");
    DownstreamReply more = new DownstreamReply(354, null, "");
    DownstreamReply later = new DownstreamReply(451, null, "");
    DownstreamReply never = new DownstreamReply(550, null, "");

    assertThat(ok.positive()).isTrue();
    assertThat(more.positive()).isTrue();
    assertThat(later.positive()).isFalse();
    assertThat(later.transientFailure()).isTrue();
    assertThat(later.permanentFailure()).isFalse();
    assertThat(never.permanentFailure()).isTrue();
    assertThat(never.transientFailure()).isFalse();
  }

  @Test
  void enhancedOrDefaultPrefersTheDownstreamCode() {
    assertThat(new DownstreamReply(550, "5.1.1", "x").enhancedOrDefault("1.0")).isEqualTo("5.1.1");
    assertThat(new DownstreamReply(550, null, "x").enhancedOrDefault("1.0")).isEqualTo("5.1.0");
    assertThat(new DownstreamReply(421, null, "x").enhancedOrDefault("0.0")).isEqualTo("4.0.0");
  }

  @Test
  void sanitizedTextReplacesControlAndNonAsciiCharacters() {
    DownstreamReply r = new DownstreamReply(550, "5.7.1", "Bad\tthing\r\n250 ok\u0007 caf\u00e9 \u2603 \u001b[31m");

    String text = r.sanitizedText();

    assertThat(text).isEqualTo("Bad?thing??250 ok? caf? ? ?[31m");
    assertThat(text).matches("[\\x20-\\x7e]*");
  }

  @Test
  void sanitizedTextIsAtMost128Characters() {
    DownstreamReply r = new DownstreamReply(550, null, "x".repeat(500));

    assertThat(r.sanitizedText()).hasSize(DownstreamReply.MAX_RELAYED_TEXT).isEqualTo("x".repeat(128));
  }

  @Test
  void sanitizedTextOfLongNonAsciiTextIsStillAtMost128AsciiBytes() {
    DownstreamReply r = new DownstreamReply(550, null, "\u00e9\u00e8".repeat(300));

    String text = r.sanitizedText();

    assertThat(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)).hasSizeLessThanOrEqualTo(128);
    assertThat(text).matches("\\?+");
  }

  @Test
  void sanitizedTextIsTrimmed() {
    assertThat(new DownstreamReply(250, null, "  padded  ").sanitizedText()).isEqualTo("padded");
    assertThat(new DownstreamReply(250, null, "").sanitizedText()).isEmpty();
  }

  @Test
  void parsedMultiLineTextIsSanitizedIntoOneLine() {
    DownstreamReply r = DownstreamReply.parse(List.of("550-5.1.1 first", "550 5.1.1 second"));

    assertThat(r.sanitizedText()).isEqualTo("first second").doesNotContain("\n");
  }

  /**
   * Since issue 33 a reply is parsed without a regex; the regex parse is kept here as the reference, and both must
   * agree on code, enhanced code and text for every edge of the enhanced code's grammar.
   */
  @Test
  void theParseAgreesWithTheRegexOne() {
    List<List<String>> replies = List.of(
        List.of("250 2.0.0 Ok"), List.of("250 2.0.0"), List.of("250 2.0.0  \t Ok  "), List.of("250"), List.of("250 "),
        List.of("250 2.0.0Ok"), List.of("250 2.0.0000 Ok"), List.of("250 2.1234.0 Ok"), List.of("250 2..0 Ok"),
        List.of("250 2.0. Ok"), List.of("250 2.0 Ok"), List.of("250 3.0.0 Ok"), List.of("250 5.7.1 mismatch"),
        List.of("550 5.7.1 spam"), List.of("451 4.3.0\tTry later"), List.of("250 2.٠.0 Arabic-Indic digit"),
        List.of("250 2.0.0\u000BVT"), List.of("250 2.0.0\u00A0nbsp"), List.of("250   spaced text   "),
        List.of("250-", "250 last"), List.of("250-first", "250-", "250 last"), List.of("250-", "250-", "250 "),
        List.of("550-5.7.1 a", "550-5.7.2 b", "550 c"), List.of("550-no code", "550 5.1.1 later"),
        List.of("550-2.0.0 other class", "550 5.0.0 same"), List.of("250-PIPELINING", "250 2.0.0"),
        List.of("250-\u0001ctl\u0001", "250 x"), List.of("250 2.0.0\u2028"), List.of("250 2.0.0\u2029x"),
        List.of("250 2.0.0\u0085"), List.of("250 2.0.0\u2028\u2028"));
    for (List<String> lines : replies) {
      DownstreamReply expected = regexParse(lines);
      DownstreamReply actual = DownstreamReply.parse(lines);
      assertThat(actual).as(lines.toString()).isEqualTo(expected);
    }
  }

  /** DownstreamReply.parse as it was before issue 33. */
  private static DownstreamReply regexParse(List<String> lines) {
    java.util.regex.Pattern enhancedCode =
        java.util.regex.Pattern.compile("^([245])\\.(\\d{1,3})\\.(\\d{1,3})(?:\\s+|$)");
    String first = lines.get(0);
    int code = Integer.parseInt(first.substring(0, 3));
    StringBuilder text = new StringBuilder();
    String enhanced = null;
    for (String line : lines) {
      String t = line.length() > 4 ? line.substring(4) : "";
      java.util.regex.Matcher m = enhancedCode.matcher(t);
      if (m.find()) {
        if (enhanced == null && m.group(1).charAt(0) == first.charAt(0)) {
          enhanced = m.group(1) + "." + m.group(2) + "." + m.group(3);
        }
        t = t.substring(m.end());
      }
      if (text.length() > 0) {
        text.append(' ');
      }
      text.append(t.trim());
    }
    return new DownstreamReply(code, enhanced, text.toString());
  }
}
