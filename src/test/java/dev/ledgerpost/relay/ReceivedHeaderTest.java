package dev.ledgerpost.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.Intake;
import java.nio.charset.StandardCharsets;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The gateway's Received: line against RFC 5321 §4.4, RFC 3848 and RFC 6531 §3.7.3. */
class ReceivedHeaderTest {
  static final UUID ID = UUID.fromString("0190f2c4-0000-7000-8000-000000000001");
  static final ZonedDateTime WHEN = ZonedDateTime.parse("2026-03-03T10:00:00Z");

  static String build(Submission s, List<String> recipients) {
    return new String(ReceivedHeader.build(s, "gw.example", ID, recipients, WHEN), StandardCharsets.UTF_8);
  }

  @Test
  void plainEsmtpWithOneRecipient() {
    assertThat(build(new Submission(Intake.SMTP, "192.0.2.7", "client.example", null, false, true), List.of("bob@example.net")))
        .isEqualTo("Received: from client.example ([192.0.2.7])\r\n\tby gw.example (Ledgerpost) with ESMTP id " + ID
            + "\r\n\tfor <bob@example.net>; Tue, 3 Mar 2026 10:00:00 +0000\r\n");
  }

  @Test
  void tlsAndAuthNameTheProtocolAndTheCipher() {
    Submission s = new Submission(Intake.SMTP, "192.0.2.7", "client.example", "alice", true, true,
        "TLSv1.3 with cipher TLS_AES_256_GCM_SHA384", false);
    assertThat(build(s, List.of("a@example.net", "b@example.net")))
        .isEqualTo("Received: from client.example ([192.0.2.7])\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)"
            + "\r\n\tby gw.example (Ledgerpost) with ESMTPSA id " + ID + "; Tue, 3 Mar 2026 10:00:00 +0000\r\n");
    assertThat(new Submission(Intake.SMTP, "192.0.2.7", "c.example", null, true, true).protocol()).isEqualTo("ESMTPS");
    assertThat(new Submission(Intake.SMTP, "192.0.2.7", "c.example", "alice", false, true).protocol()).isEqualTo("ESMTPA");
    assertThat(new Submission(Intake.SMTP, "192.0.2.7", "c.example", null, false, false).protocol()).isEqualTo("SMTP");
    assertThat(new Submission(Intake.SMTP, "192.0.2.7", "c.example", "alice", true, true, null, true).protocol())
        .isEqualTo("UTF8SMTPSA");
    assertThat(new Submission(Intake.SMTP, "192.0.2.7", "c.example", null, false, true, null, true).protocol())
        .isEqualTo("UTF8SMTP");
  }

  @Test
  void anIpv6ClientIsAnIpv6AddressLiteral() {
    assertThat(build(new Submission(Intake.SMTP, "2001:db8::7", "client.example", null, false, true), List.of()))
        .startsWith("Received: from client.example ([IPv6:2001:db8::7])\r\n");
  }

  @Test
  void aHeloThatIsNeitherDomainNorLiteralGoesIntoAComment() {
    assertThat(build(new Submission(Intake.SMTP, "192.0.2.7", "[192.0.2.7]", null, false, true), List.of()))
        .startsWith("Received: from [192.0.2.7] ([192.0.2.7])\r\n");
    assertThat(build(new Submission(Intake.SMTP, "192.0.2.7", "my(laptop)\\x", null, false, true), List.of()))
        .startsWith("Received: from [192.0.2.7] (HELO my?laptop??x)\r\n\tby ");
    assertThat(build(new Submission(Intake.SMTP, "192.0.2.7", "bad\r\nX-Injected: 1", null, false, true), List.of()))
        .startsWith("Received: from [192.0.2.7] (HELO bad??X-Injected: 1)\r\n\tby ")
        .doesNotContain("\r\nX-Injected");
  }

  /** The date is formatted once a second since issue 33: whatever the order of the times, each reads as formatted. */
  @Test
  void theDateOfEveryMessageIsItsOwnEvenWhenFormattedOnceASecond() {
    java.time.format.DateTimeFormatter format =
        java.time.format.DateTimeFormatter.ofPattern("EEE, d MMM yyyy HH:mm:ss Z", java.util.Locale.ENGLISH);
    ZonedDateTime base = ZonedDateTime.parse("2026-12-31T23:59:58.100Z");
    List<ZonedDateTime> times = List.of(base, base.plusNanos(800_000_000), base.plusSeconds(1), base.plusSeconds(2),
        base.plusSeconds(2).withZoneSameInstant(java.time.ZoneOffset.ofHours(1)),
        base.plusSeconds(2).withZoneSameInstant(java.time.ZoneId.of("America/New_York")), base.plusSeconds(2), base,
        base.minusYears(30));
    for (ZonedDateTime t : times) {
      assertThat(ReceivedHeader.date(t)).as(t.toString()).isEqualTo(format.format(t));
      assertThat(ReceivedHeader.date(t)).as(t.toString()).isEqualTo(format.format(t));
    }
  }

  /** The HELO's checks, by hand since issue 33, read every string as the regexes they replace did. */
  @Test
  void theHelosChecksAgreeWithTheRegexesTheyReplace() {
    java.util.regex.Pattern domain = java.util.regex.Pattern.compile(
        "[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\\.?");
    java.util.regex.Pattern literal = java.util.regex.Pattern.compile("\\[[A-Za-z0-9:.]+\\]");
    List<String> cases = new java.util.ArrayList<>(List.of("", ".", "..", "a", "a.", "a..", ".a", "-a", "a-", "a-b", "a_b.c",
        "mail.example.com", "mail.example.com.", "x.-y.z", "x.y-.z", "[192.0.2.7]", "[IPv6:2001:db8::7]", "[]", "[",
        "]", "[a b]", "[1.2.3.4", "1.2.3.4]", "[[1]]", "ex\u00e4mple.de", "a b", "A-Z.09", "_", "-", "a.b.", "a.b..",
        "[:]", "[.]"));
    java.util.Random random = new java.util.Random(33);
    String alphabet = "aZ09_-.[]: \u00e4/";
    for (int k = 0; k < 50_000; k++) {
      StringBuilder sb = new StringBuilder();
      for (int n = random.nextInt(9); n > 0; n--) {
        sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
      }
      cases.add(sb.toString());
    }
    for (String helo : cases) {
      assertThat(ReceivedHeader.isDomain(helo)).as("domain %s", helo).isEqualTo(domain.matcher(helo).matches());
      assertThat(ReceivedHeader.isAddressLiteral(helo)).as("literal %s", helo).isEqualTo(literal.matcher(helo).matches());
    }
  }
}
