package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The SMTP intake's hardening of issue 11 over real sockets. SMTP smuggling: a body that hides a second
 * transaction behind an end-of-data look-alike is refused whole, and nothing after the look-alike
 * reaches the smarthost. Quoted local parts: accepted and relayed as written; an unbalanced quote is refused.
 */
class SmtpHardeningEndToEndTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension();

  @ParameterizedTest
  @ValueSource(strings = {"\n.\r\n", "\n.\n", "\r.\r", "\r\n.\n", "\r\n.\r", "\n.\r", "\r.\n", "\r.\r\n"})
  void aSmuggledTransactionIsRefusedWithTheMessageAndNeverReachesTheSmarthost(String lookAlike) throws Exception {
    String tag = "v" + Integer.toHexString(lookAlike.hashCode());
    String evil = "evil-" + tag + "@attacker.example";
    String victim = "victim-" + tag + "@dest.example";
    int messagesBefore = gateway.downstream().messages().size();

    try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(client.reply()).startsWith("220 ");
      assertThat(client.command("EHLO client.test")).startsWith("250");
      assertThat(client.command("MAIL FROM:<sender-" + tag + "@client.example>")).startsWith("250");
      assertThat(client.command("RCPT TO:<rcpt-" + tag + "@dest.example>")).startsWith("250");
      assertThat(client.command("DATA")).startsWith("354");
      // One write: the look-alike and the hidden transaction arrive together, as an attacker pipelines them.
      client.sendBytes(("Subject: smuggle\r\n\r\nlegit body" + lookAlike
          + "MAIL FROM:<" + evil + ">\r\nRCPT TO:<" + victim + ">\r\nDATA\r\n"
          + "Subject: hidden " + tag + "\r\n\r\nhidden body\r\n.\r\n").getBytes(StandardCharsets.ISO_8859_1));

      assertThat(client.reply()).isEqualTo("554 5.6.0 Message refused: bare CR or LF; lines must end with CRLF");
      // In step: the next command is answered as a command, and a clean message after it goes through.
      assertThat(client.command("NOOP")).isEqualTo("250 2.0.0 OK");
      assertThat(client.sendMail("after-" + tag + "@client.example", List.of("rcpt-" + tag + "@dest.example"),
          "Subject: after " + tag + "\r\n\r\nclean\r\n")).startsWith("250 2.0.0 Ok: queued as ");
      assertThat(client.command("QUIT")).startsWith("221");
    }

    List<ScriptedSmtpServer.Received> received = gateway.downstream().messages().subList(messagesBefore, gateway.downstream().messages().size());
    assertThat(received).hasSize(1);
    assertThat(received.get(0).mailFrom()).isEqualTo("after-" + tag + "@client.example");
    String everything = new String(gateway.downstream().receivedBytes(), StandardCharsets.ISO_8859_1);
    assertThat(everything).doesNotContain(evil, victim, "hidden " + tag, "legit body");
    assertThat(gateway.downstream().commands()).noneMatch(c -> c.contains(evil) || c.contains(victim));
    assertThat(gateway.downstream().bareLineEndings()).isEmpty();
  }

  /** Issue 26, item 12: such bytes were read as U+FFFD, and the replacement relayed and recorded as the address. */
  @Test
  void addressesThatAreNotUtf8AreRefusedAndNeitherRelayedNorRecorded() throws Exception {
    byte[] latin1 = "j\u00fcrgen".getBytes(StandardCharsets.ISO_8859_1); // a Latin-1 client's bytes: not UTF-8
    int before = gateway.downstream().messages().size();
    try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(client.reply()).startsWith("220 ");
      assertThat(client.command("EHLO client.test")).startsWith("250");
      client.sendBytes(concat("MAIL FROM:<", latin1, "@client.example> SMTPUTF8\r\n"));
      assertThat(client.reply()).isEqualTo("501 5.1.7 Sender address is not valid UTF-8");
      assertThat(client.command("MAIL FROM:<utf8-check@client.example> SMTPUTF8")).startsWith("250");
      client.sendBytes(concat("RCPT TO:<", latin1, "@dest.example>\r\n"));
      assertThat(client.reply()).isEqualTo("501 5.1.3 Recipient address is not valid UTF-8");
      assertThat(client.command("RCPT TO:<j\u00fcrgen@dest.example>")).startsWith("250");
      assertThat(client.command("DATA")).startsWith("354");
      assertThat(client.command("Subject: utf8\r\n\r\nbody\r\n.")).startsWith("250 2.0.0 Ok: queued as ");
    }
    ScriptedSmtpServer.Received got = gateway.downstream().messages().get(before);
    assertThat(got.recipients()).containsExactly("j\u00fcrgen@dest.example");
    String everything = String.join("\n", gateway.downstream().commands());
    assertThat(everything).doesNotContain("\ufffd");
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE mail_from LIKE '%\ufffd%'"))
        .isZero();
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM recipients WHERE address LIKE '%\ufffd%'"))
        .isZero();
  }

  private static byte[] concat(String head, byte[] middle, String tail) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    out.writeBytes(head.getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(middle);
    out.writeBytes(tail.getBytes(StandardCharsets.US_ASCII));
    return out.toByteArray();
  }

  @Test
  void quotedLocalPartsAreRelayedAsWrittenAndTheSmarthostReceivesThem() throws Exception {
    String from = "\"john smith\"@client.example";
    String to = "\"a\\\"b\"@dest.example";
    int before = gateway.downstream().messages().size();

    try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(client.reply()).startsWith("220 ");
      assertThat(client.sendMail(from, List.of(to), "Subject: quoted\r\n\r\nhello\r\n")).startsWith("250 2.0.0 Ok: queued as ");
      assertThat(client.command("QUIT")).startsWith("221");
    }

    assertThat(gateway.downstream().commands()).contains("MAIL FROM:<" + from + ">", "RCPT TO:<" + to + ">");
    ScriptedSmtpServer.Received got = gateway.downstream().messages().get(before);
    assertThat(got.mailFrom()).isEqualTo(from);
    assertThat(got.recipients()).containsExactly(to);
  }

  @Test
  void anUnbalancedQuoteIs501AndNothingReachesTheSmarthost() throws Exception {
    try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(client.reply()).startsWith("220 ");
      assertThat(client.command("EHLO client.test")).startsWith("250");
      assertThat(client.command("MAIL FROM:<\"unbalanced@client.example>")).isEqualTo("501 5.1.7 Bad sender address syntax");
      assertThat(client.command("MAIL FROM:<sender@client.example> SIZE=-1")).startsWith("501 5.5.4");
      assertThat(client.command("MAIL FROM:<sender@client.example> SIZE=1 SIZE=1")).startsWith("501 5.5.4");
      assertThat(client.command("QUIT")).startsWith("221");
    }

    assertThat(gateway.downstream().commands()).noneMatch(c -> c.contains("unbalanced@"));
  }
}
