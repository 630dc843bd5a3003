package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.relay.Relay;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** MAIL and RCPT arguments: paths with quotes, and parameters that are malformed, repeated or not offered. */
class MailRcptParametersTest {
  private static final long MAX = 10_000;

  /** The reply to the last of the commands, after EHLO. */
  private static SessionDriver run(String... commands) {
    StringBuilder s = new StringBuilder("EHLO client.example\r\n");
    for (String c : commands) {
      s.append(c).append("\r\n");
    }
    return new SessionDriver(MAX).feed(s.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static String lastReply(SessionDriver d) {
    return d.replies().get(d.replies().size() - 1);
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(delimiter = '|', value = {
      "SIZE=-1 | 501 5.5.4 SIZE= needs a number of octets (RFC 1870)",
      "SIZE=+5 | 501 5.5.4 SIZE= needs a number of octets (RFC 1870)",
      "SIZE=5k | 501 5.5.4 SIZE= needs a number of octets (RFC 1870)",
      "SIZE | 501 5.5.4 SIZE= needs a number of octets (RFC 1870)",
      "SIZE=123456789012345678901 | 501 5.5.4 SIZE= needs a number of octets (RFC 1870)",
      "SIZE= | 501 5.5.4 Syntax error in parameters or arguments",
      "SIZE=5 SIZE=5 | 501 5.5.4 A MAIL/RCPT parameter is given more than once",
      "size=5 Size=6 | 501 5.5.4 A MAIL/RCPT parameter is given more than once",
      "BODY=8BITMIME BODY=7BIT | 501 5.5.4 A MAIL/RCPT parameter is given more than once",
      "SMTPUTF8 SMTPUTF8 | 501 5.5.4 A MAIL/RCPT parameter is given more than once",
      "SMTPUTF8=yes | 501 5.5.4 Syntax error in parameters or arguments",
      "BODY | 501 5.5.4 Syntax error in parameters or arguments",
      "AUTH | 501 5.5.4 Syntax error in parameters or arguments",
      "=5 | 501 5.5.4 Syntax error in parameters or arguments",
      "-X=1 | 501 5.5.4 Syntax error in parameters or arguments",
      "X=a=b | 501 5.5.4 Syntax error in parameters or arguments",
      "SIZE=99999999999999999999 | 552 5.3.4 Message size exceeds fixed maximum message size",
      "SIZE=10001 | 552 5.3.4 Message size exceeds fixed maximum message size",
      "BODY=BINARYMIME | 555 5.5.4 Unsupported MAIL/RCPT parameter",
      "RET=HDRS | 555 5.5.4 Unsupported MAIL/RCPT parameter",
      "SIZE=10000 BODY=8bitmime SMTPUTF8 AUTH=<> | 250 2.1.0 Sender OK",
      "SIZE=00000000000000000005 | 250 2.1.0 Sender OK"})
  void mailParameters(String parameters, String reply) {
    SessionDriver d = run("MAIL FROM:<sender@client.example> " + parameters);

    assertThat(lastReply(d)).isEqualTo(reply);
    assertThat(d.relay.calls).hasSize(reply.startsWith("250") ? 1 : 0);
  }

  @Test
  void theParametersReachTheRelayAsDeclared() {
    SessionDriver d = run("MAIL FROM:<sender@client.example> SIZE=00000000000000000005 BODY=8BITMIME");

    assertThat(d.relay.parameters).containsExactly(new Relay.MailParameters(5, true, false));
  }

  @Test
  void aTabInAParameterIsASyntaxError() {
    assertThat(lastReply(run("MAIL FROM:<sender@client.example> SIZE=\t5"))).startsWith("501 5.5.4");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "<\"john@example.com>",
      "<\"john@example.com> SIZE=5",
      "\"john@example.com",
      "<john\"@example.com>",
      "<sender@client.example>SIZE=5",
      "<a@b@client.example>"})
  void aSenderWithAnUnbalancedQuoteOrOtherJunkIs501_5_1_7AndNothingGoesDownstream(String path) {
    SessionDriver d = run("MAIL FROM:" + path);

    assertThat(lastReply(d)).isEqualTo("501 5.1.7 Bad sender address syntax");
    assertThat(d.relay.calls).isEmpty();
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "<\"john smith\"@example.net> SIZE=100 | \"john smith\"@example.net",
      "\"john smith\"@example.net | \"john smith\"@example.net",
      "<\"a\\\"b\"@x.example> | \"a\\\"b\"@x.example",
      "<\"a>b c\"@x.example> BODY=7BIT | \"a>b c\"@x.example",
      "<@relay.example:\"j s\"@x.example> | \"j s\"@x.example"})
  void aQuotedLocalPartIsAcceptedAndRelayedAsWritten(String path, String mailbox) {
    SessionDriver d = run("MAIL FROM:" + path);

    assertThat(lastReply(d)).isEqualTo("250 2.1.0 Sender OK");
    assertThat(d.relay.calls).containsExactly("MAIL " + mailbox);
  }

  @Test
  void aQuotedRecipientIsAcceptedAndRelayedAsWritten() {
    SessionDriver d = run("MAIL FROM:<sender@client.example>", "RCPT TO:<\"jane doe\"@dest.example>",
        "RCPT TO:<\"a\\\"b\"@dest.example>");

    assertThat(d.replies().subList(2, 4)).containsOnly("250 2.1.5 Recipient ok");
    assertThat(d.relay.calls).containsExactly("MAIL sender@client.example", "RCPT \"jane doe\"@dest.example",
        "RCPT \"a\\\"b\"@dest.example");
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(delimiter = '|', value = {
      "<\"jane@dest.example> | 501 5.1.3 Bad recipient address syntax",
      "<jane@dest.example>NOTIFY=NEVER | 501 5.1.3 Bad recipient address syntax",
      "<jane@dest.example> NOTIFY=NEVER NOTIFY=NEVER | 501 5.5.4 A MAIL/RCPT parameter is given more than once",
      "<jane@dest.example> NOTIFY= | 501 5.5.4 Syntax error in parameters or arguments",
      "<jane@dest.example> NOTIFY=NEVER | 555 5.5.4 Unsupported MAIL/RCPT parameter",
      "<jane@dest.example> ORCPT=rfc822;jane@dest.example | 555 5.5.4 Unsupported MAIL/RCPT parameter"})
  void rcptParameters(String argument, String reply) {
    SessionDriver d = run("MAIL FROM:<sender@client.example>", "RCPT TO:" + argument);

    assertThat(lastReply(d)).isEqualTo(reply);
    assertThat(d.relay.calls).containsExactly("MAIL sender@client.example");
  }
}
