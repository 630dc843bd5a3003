package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.Cidr;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.smarthost.DownstreamUnavailable;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import dev.ledgerpost.ledger.Intake;
import dev.ledgerpost.intake.smtp.SmtpSession.Action;
import dev.ledgerpost.intake.smtp.SmtpSession.Step;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Transcript tests of the pure SMTP state machine: lines in, replies out, against a scripted
 * downstream. Every test's transcript is also checked for RFC 2034 enhanced status codes.
 */
class SmtpSessionTranscriptTest {
  private static final String TRUSTED_IP = "192.0.2.10";
  private static final String OUTSIDER_IP = "198.51.100.7";
  private static final Cidr RELAY_NETWORK = Cidr.parse("192.0.2.0/24");
  private static final UUID LEDGER_ID = UUID.fromString("0b7e1c52-4c1e-4d0a-9c36-6a8f3f2b9d11");

  // Settings of the session under test; a test changes them before its first line.
  private String hostname = "gw.ledgerpost.test";
  private long maxMessageSize = 10_000;
  private int maxRecipients = 3;
  private boolean tlsAvailable = true;
  private boolean authAvailable = true;
  private boolean allowInsecureAuth = false;
  private UnknownOutcomeReply unknownOutcomeReply = UnknownOutcomeReply.REPLY_451;
  private String clientIp = TRUSTED_IP;

  private final FakeRelay relay = new FakeRelay();
  private final FakeAuthenticator authenticator = new FakeAuthenticator();
  private final List<Exchange> transcript = new ArrayList<>();
  private SmtpSession session;

  // --- the transcript helpers

  private record Exchange(String command, Step step) {
    String verb() {
      int space = command.indexOf(' ');
      return (space < 0 ? command : command.substring(0, space)).toUpperCase(Locale.ROOT);
    }
  }

  private SmtpSession session() {
    if (session == null) {
      SmtpSession.Settings settings = new SmtpSession.Settings(hostname, maxMessageSize, maxRecipients, tlsAvailable,
          authAvailable, allowInsecureAuth, unknownOutcomeReply);
      session = new SmtpSession(settings, relay, authenticator, RELAY_NETWORK::contains, clientIp);
    }
    return session;
  }

  /** Feeds one line and returns the step; every fake answers at once, so the future is complete. */
  private Step send(Line line) {
    Future<Step> future = session().input(line);
    assertThat(future.isComplete()).as("step for %s is complete", new String(line.content(), StandardCharsets.UTF_8)).isTrue();
    assertThat(future.succeeded()).as("step succeeded: %s", future.cause()).isTrue();
    transcript.add(new Exchange(new String(line.content(), StandardCharsets.UTF_8), future.result()));
    return future.result();
  }

  private Step send(String command) {
    return send(Line.of(command));
  }

  /** One command and its reply as it goes on the wire, without the last CRLF. */
  private String say(String command) {
    Step step = send(command);
    assertThat(step.reply()).as("reply to %s", command).isNotNull();
    assertThat(step.action()).as("action after %s", command).isIn(Action.NONE, Action.READ_DATA);
    return step.reply().toString();
  }

  /** Sends body lines (each must get no reply) and the terminating dot; returns the step of the dot. */
  private Step body(String... lines) {
    for (String line : lines) {
      bodyLine(Line.of(line));
    }
    return send(".");
  }

  private void bodyLine(Line line) {
    Step step = send(line);
    assertThat(step.reply()).as("no reply inside DATA").isNull();
    assertThat(step.action()).isEqualTo(Action.NONE);
    assertThat(session().readingData()).isTrue();
  }

  private String transmit(String... lines) {
    return body(lines).reply().toString();
  }

  private void ehlo() {
    assertThat(say("EHLO client.example")).startsWith("250-" + hostname + " greets client.example");
  }

  /** EHLO, MAIL and one accepted RCPT. */
  private void openTransaction() {
    ehlo();
    assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
    assertThat(say("RCPT TO:<rcpt@dest.example>")).isEqualTo("250 2.1.5 Recipient ok");
  }

  private List<String> ehloKeywords(String domain) {
    Step step = send("EHLO " + domain);
    assertThat(step.reply().code()).isEqualTo(250);
    return step.reply().lines().subList(1, step.reply().lines().size());
  }

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  /** A command line of ASCII text and raw bytes (ints), in order: for bytes that are not UTF-8. */
  private static Line bytes(Object... parts) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (Object part : parts) {
      if (part instanceof Integer b) {
        out.write(b);
      } else {
        out.writeBytes(((String) part).getBytes(StandardCharsets.UTF_8));
      }
    }
    return new Line(out.toByteArray(), true, false, false);
  }

  private static Line raw(String content, boolean crlf, boolean bareCr, boolean tooLong) {
    return new Line(content.getBytes(StandardCharsets.UTF_8), crlf, bareCr, tooLong);
  }

  private static DownstreamReply downstream(int code, String enhanced, String text) {
    return new DownstreamReply(code, enhanced, text);
  }

  /**
   * RFC 2034: once ENHANCEDSTATUSCODES is offered, every reply carries one, except the greeting,
   * the EHLO/HELO reply and the intermediate 3xx replies (354, 334). Also: each reply line fits
   * RFC 5321's 512 octets and is printable ASCII, so nothing a downstream says can break the framing.
   */
  @AfterEach
  void everyReplyInTheTranscriptCarriesAnEnhancedStatusCodeWhereRequired() {
    for (Exchange e : transcript) {
      Reply r = e.step().reply();
      if (r == null) {
        continue;
      }
      boolean exempt = r.code() == 354 || r.code() == 334
          || (r.code() == 250 && (e.verb().equals("EHLO") || e.verb().equals("HELO")));
      if (exempt) {
        assertThat(r.enhanced()).as("%s -> %s", e.command(), r).isNull();
      } else {
        assertThat(r.enhanced()).as("enhanced code of the reply to '%s': %s", e.command(), r)
            .isNotNull()
            .matches("[245]\\.\\d{1,3}\\.\\d{1,3}")
            .startsWith(String.valueOf(r.code() / 100));
      }
      for (String wireLine : r.toWire().split("\r\n")) {
        assertThat(wireLine.length() + 2).as("reply line length: %s", wireLine).isLessThanOrEqualTo(512);
        assertThat(wireLine).as("reply line is printable ASCII").matches("[\\x20-\\x7e]*");
        assertThat(wireLine).matches("\\d{3}[ -].*");
      }
    }
  }

  /** Greeting, EHLO, HELO. */
  @Nested
  class Greeting {
    @Test
    void greetingNamesTheHostAndHasNoEnhancedCode() {
      assertThat(session().greeting().toWire()).isEqualTo("220 gw.ledgerpost.test ESMTP Ledgerpost\r\n");
      assertThat(session().greeting().enhanced()).isNull();
    }

    @Test
    void ehloAdvertisesTheExtensionsAndStartTlsWhileTlsIsAvailableButNotYetActive() {
      List<String> keywords = ehloKeywords("client.example");

      assertThat(keywords).contains("PIPELINING", "SIZE 10000", "8BITMIME", "ENHANCEDSTATUSCODES", "SMTPUTF8",
          "STARTTLS");
      assertThat(keywords).noneMatch(k -> k.startsWith("AUTH")); // no AUTH in clear without allowInsecureAuth
    }

    @Test
    void ehloReplyIsAMultiLineReplyWithTheGreetingFirst() {
      Step step = send("EHLO client.example");

      assertThat(step.reply().toWire())
          .startsWith("250-gw.ledgerpost.test greets client.example\r\n250-PIPELINING\r\n")
          .endsWith("\r\n250 HELP\r\n");
    }

    @Test
    void ehloOmitsStartTlsWhenTlsIsNotAvailable() {
      tlsAvailable = false;

      assertThat(ehloKeywords("client.example")).doesNotContain("STARTTLS").contains("ENHANCEDSTATUSCODES");
    }

    @Test
    void ehloOffersAuthInClearOnlyWithAllowInsecureAuth() {
      allowInsecureAuth = true;

      assertThat(ehloKeywords("client.example")).contains("AUTH PLAIN LOGIN", "STARTTLS");
    }

    @Test
    void ehloOmitsAuthWhenNoAuthenticatorIsConfigured() {
      authAvailable = false;
      allowInsecureAuth = true;

      assertThat(ehloKeywords("client.example")).noneMatch(k -> k.startsWith("AUTH"));
    }

    @Test
    void afterTlsStartedEhloOffersAuthAndNoLongerStartTls() {
      ehlo();
      assertThat(send("STARTTLS").action()).isEqualTo(Action.START_TLS);
      session().tlsStarted();

      assertThat(ehloKeywords("client.example")).contains("AUTH PLAIN LOGIN").doesNotContain("STARTTLS");
    }

    @Test
    void ehloWithoutADomainIs501() {
      assertThat(say("EHLO")).isEqualTo("501 5.5.4 HELO/EHLO requires a domain or address literal");
      assertThat(say("EHLO two words")).startsWith("501 5.5.4");
      assertThat(say("MAIL FROM:<a@b.example>")).startsWith("503 5.5.1"); // the failed EHLO greeted nobody
    }

    @Test
    void heloAnswersAPlain250AndAllowsAMailTransactionWithoutEsmtp() {
      assertThat(say("HELO client.example")).isEqualTo("250 gw.ledgerpost.test");
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");

      Submission submission = relay.submissions.get(0);
      assertThat(submission.esmtp()).isFalse();
      assertThat(submission.helo()).isEqualTo("client.example");
      assertThat(submission.protocol()).isEqualTo("SMTP");
    }

    @Test
    void authAfterHeloIs503BecauseAuthIsAnEsmtpExtension() {
      allowInsecureAuth = true;
      say("HELO client.example");

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).startsWith("503 5.5.1");
      assertThat(authenticator.calls).isEmpty();
    }

    @Test
    void verbsAreCaseInsensitive() {
      assertThat(say("ehlo client.example")).startsWith("250-");
      assertThat(say("mail from:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(say("rcpt to:<rcpt@dest.example>")).isEqualTo("250 2.1.5 Recipient ok");
    }
  }

  /** Command order. */
  @Nested
  class CommandOrder {
    @Test
    void mailBeforeEhloIs503() {
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("503 5.5.1 Send HELO or EHLO first");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void nestedMailIs503AndTheFirstTransactionStands() {
      openTransaction();

      assertThat(say("MAIL FROM:<other@client.example>")).isEqualTo("503 5.5.1 Sender already given; RSET first");
      assertThat(relay.calls).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example");
      assertThat(session().inTransaction()).isTrue();
    }

    @Test
    void rcptBeforeMailIs503() {
      ehlo();

      assertThat(say("RCPT TO:<rcpt@dest.example>")).isEqualTo("503 5.5.1 Send MAIL FROM first");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void dataBeforeMailIs503() {
      ehlo();

      assertThat(say("DATA")).isEqualTo("503 5.5.1 Send MAIL FROM first");
    }

    @Test
    void dataBeforeRcptIs503() {
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("DATA")).isEqualTo("503 5.5.1 Send RCPT TO first");
      assertThat(session().readingData()).isFalse();
    }

    @Test
    void dataWhenEveryRecipientWasRefusedIs554NoValidRecipients() {
      relay.rcptReplies.put("gone@dest.example", downstream(550, "5.1.1", "No such user"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");
      assertThat(say("RCPT TO:<gone@dest.example>")).startsWith("550 5.1.1");

      assertThat(say("DATA")).isEqualTo("554 5.5.1 No valid recipients");
      assertThat(session().readingData()).isFalse();
    }

    @Test
    void aCompletedTransactionLeavesTheSessionReadyForTheNextOne() {
      openTransaction();
      assertThat(say("DATA")).isEqualTo("354 End data with <CR><LF>.<CR><LF>");
      assertThat(transmit("Subject: one", "", "first")).startsWith("250 2.0.0");

      assertThat(session().inTransaction()).isFalse();
      assertThat(say("RCPT TO:<rcpt@dest.example>")).startsWith("503 5.5.1"); // the envelope is gone
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(say("RCPT TO:<second@dest.example>")).isEqualTo("250 2.1.5 Recipient ok");
      assertThat(say("DATA")).startsWith("354");
      assertThat(transmit("Subject: two", "", "second")).startsWith("250 2.0.0");
      assertThat(relay.delivered).hasSize(2);
    }
  }

  /** Syntax. */
  @Nested
  class Syntax {
    @Test
    void unknownCommandIs500_5_5_2() {
      assertThat(say("FROBNICATE now")).isEqualTo("500 5.5.2 Syntax error, command unrecognized");
      assertThat(say("")).startsWith("500 5.5.2");
    }

    @Test
    void knownButUnimplementedCommandsAre502() {
      assertThat(say("EXPN staff")).isEqualTo("502 5.5.1 Command not implemented");
      assertThat(say("TURN")).startsWith("502 5.5.1");
      assertThat(say("ETRN example.net")).startsWith("502 5.5.1");
    }

    @Test
    void mailWithBadSyntaxIs501() {
      ehlo();

      assertThat(say("MAIL <sender@client.example>")).isEqualTo("501 5.5.4 Syntax error in parameters or arguments");
      assertThat(say("MAIL FROM:")).isEqualTo("501 5.1.7 Bad sender address syntax");
      assertThat(say("MAIL FROM:<no-at-sign>")).isEqualTo("501 5.1.7 Bad sender address syntax");
      assertThat(say("MAIL FROM:<sender@client.example")).startsWith("501 5.1.7");
      assertThat(say("MAIL FROM:<sender@client.example> SIZE=lots")).startsWith("501 5.5.4");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void mailWithAnUnknownParameterIs555() {
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example> RET=HDRS")).isEqualTo("555 5.5.4 Unsupported MAIL/RCPT parameter");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void mailAcceptsTheNullSenderAndPassesItsParametersDownstream() {
      ehlo();

      assertThat(say("MAIL FROM:<> SIZE=500 BODY=8BITMIME AUTH=<>")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(relay.calls).containsExactly("MAIL ");
      assertThat(relay.parameters.get(0)).isEqualTo(new Relay.MailParameters(500, true, false));
    }

    @Test
    void rcptWithBadSyntaxIs501AndNotForwarded() {
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT <rcpt@dest.example>")).isEqualTo("501 5.5.4 Syntax error in parameters or arguments");
      assertThat(say("RCPT TO:<>")).isEqualTo("501 5.1.3 Bad recipient address syntax");
      assertThat(say("RCPT TO:<rcpt@-dest.example>")).startsWith("501 5.1.3");
      assertThat(say("RCPT TO:<rcpt@dest.example> NOTIFY=NEVER")).startsWith("555 5.5.4");
      assertThat(relay.calls).containsExactly("MAIL sender@client.example");
    }

    @Test
    void otherCommandsWithUnexpectedArgumentsAre501() {
      openTransaction();

      assertThat(say("DATA now")).startsWith("501 5.5.4");
      assertThat(say("RSET all")).startsWith("501 5.5.4");
      assertThat(say("STARTTLS please")).startsWith("501 5.5.4");
      assertThat(say("VRFY")).startsWith("501 5.5.4");
      assertThat(session().inTransaction()).isTrue();
    }

    @Test
    void aCommandLineCutForLengthIs500_5_5_2() {
      ehlo();
      String longLine = "MAIL FROM:<" + "a".repeat(600) + "@client.example>";

      Step step = send(raw(longLine, true, false, true));

      assertThat(step.reply().toString()).isEqualTo("500 5.5.2 Line too long");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void aBareCrInACommandLineIs500_5_5_2() {
      ehlo();

      Step step = send(raw("MAIL FROM:<sender@client.example>\rRCPT TO:<x@y.example>", true, true, false));

      assertThat(step.reply().toString()).isEqualTo("500 5.5.2 Bare CR in command line");
      assertThat(relay.calls).isEmpty();
    }
  }

  /** Limits. */
  @Nested
  class Limits {
    @Test
    void recipientsBeyondTheLimitGet452_4_5_3AndAreNotForwarded() {
      ehlo();
      say("MAIL FROM:<sender@client.example>");
      for (int i = 1; i <= 3; i++) {
        assertThat(say("RCPT TO:<r" + i + "@dest.example>")).startsWith("250 ");
      }

      assertThat(say("RCPT TO:<r4@dest.example>")).isEqualTo("452 4.5.3 Too many recipients");
      assertThat(relay.calls).doesNotContain("RCPT r4@dest.example");
      assertThat(say("DATA")).startsWith("354"); // the first three still go
    }

    @Test
    void declaredSizeAboveTheLimitIs552BeforeAnythingGoesDownstream() {
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example> SIZE=10001")).isEqualTo(
          "552 5.3.4 Message size exceeds fixed maximum message size");
      assertThat(relay.calls).isEmpty();
      assertThat(say("MAIL FROM:<sender@client.example> SIZE=10000")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(relay.parameters.get(0).declaredSize()).isEqualTo(10_000);
    }

    @Test
    void aBodyAboveTheLimitIs552AfterTheDotAndNothingIsDelivered() {
      maxMessageSize = 100;
      openTransaction();
      say("DATA");

      Step step = body("Subject: big", "", "x".repeat(60), "y".repeat(60));

      assertThat(step.reply().toString()).isEqualTo("552 5.3.4 Message size exceeds fixed maximum message size");
      assertThat(relay.delivered).isEmpty();
      assertThat(relay.calls).endsWith("ABORT");
      assertThat(session().inTransaction()).isFalse();
    }

    @Test
    void aBodyExactlyAtTheLimitIsDelivered() {
      maxMessageSize = 20;
      openTransaction();
      say("DATA");

      // "Subject: s" CRLF, CRLF, "abcd" CRLF: 12 + 2 + 6 = 20 octets
      assertThat(transmit("Subject: s", "", "abcd")).startsWith("250 2.0.0");
      assertThat(relay.delivered.get(0).size()).isEqualTo(20);
    }
  }

  /** DATA. */
  @Nested
  class Data {
    @Test
    void dataAnswers354AndAsksTheTransportToReadTheBody() {
      openTransaction();

      Step step = send("DATA");

      assertThat(step.reply().toString()).isEqualTo("354 End data with <CR><LF>.<CR><LF>");
      assertThat(step.action()).isEqualTo(Action.READ_DATA);
      assertThat(session().readingData()).isTrue();
    }

    @Test
    void aBareLfInTheBodyIsRefusedWith554OnlyAfterTheTerminatingDot() {
      openTransaction();
      say("DATA");
      bodyLine(Line.of("Subject: smuggle"));
      bodyLine(raw("", false, false, false));
      bodyLine(raw(".", false, false, false)); // "\n.\n" is no end of data: it is the smuggling trick
      bodyLine(Line.of("MAIL FROM:<evil@client.example>"));

      Step dot = send(".");

      assertThat(dot.reply().toString()).isEqualTo("554 5.6.0 Message refused: bare CR or LF; lines must end with CRLF");
      assertThat(relay.delivered).isEmpty();
      assertThat(relay.calls).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example", "ABORT");
      assertThat(session().readingData()).isFalse();
    }

    @Test
    void aBareCrInTheBodyIsRefusedWith554AfterTheDot() {
      openTransaction();
      say("DATA");
      bodyLine(Line.of("Subject: cr"));
      bodyLine(raw("one\rtwo", true, true, false));

      assertThat(body("after").reply().toString()).startsWith("554 5.6.0");
      assertThat(relay.delivered).isEmpty();
      assertThat(relay.calls).endsWith("ABORT");
    }

    @Test
    void aBodyLineOver998OctetsIsRefusedWith554AfterTheDot() {
      openTransaction();
      say("DATA");

      Step dot = body("Subject: long", "", "x".repeat(999));

      assertThat(dot.reply().toString()).isEqualTo("554 5.6.0 Message refused: a line exceeds 1000 octets");
      assertThat(relay.delivered).isEmpty();
    }

    @Test
    void aBodyLineFlaggedTooLongByTheSplitterIsRefusedWith554() {
      openTransaction();
      say("DATA");
      bodyLine(Line.of("Subject: long"));
      bodyLine(raw("x".repeat(500), true, false, true));

      assertThat(send(".").reply().toString()).startsWith("554 5.6.0");
      assertThat(relay.delivered).isEmpty();
    }

    @Test
    void aBodyLineOfExactly998OctetsIsAccepted() {
      openTransaction();
      say("DATA");

      assertThat(transmit("Subject: long", "", "x".repeat(998))).startsWith("250 2.0.0");
    }

    @Test
    void dotStuffedLinesStayStuffedOnTheWireWhileSizeAndHashDescribeTheUnstuffedMessage() throws Exception {
      openTransaction();
      say("DATA");

      assertThat(transmit("Subject: dots", "", "..leading dot", "...", "plain")).startsWith("250 2.0.0");

      MessageData m = relay.delivered.get(0);
      assertThat(m.wire().toString(StandardCharsets.US_ASCII))
          .isEqualTo("Subject: dots\r\n\r\n..leading dot\r\n...\r\nplain\r\n");
      String unstuffed = "Subject: dots\r\n\r\n.leading dot\r\n..\r\nplain\r\n";
      assertThat(m.size()).isEqualTo(unstuffed.length());
      assertThat(m.sha256()).isEqualTo(HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(unstuffed.getBytes(StandardCharsets.US_ASCII))));
    }

    @Test
    void theMessageIdHeaderIsExtracted() {
      openTransaction();
      say("DATA");

      transmit("From: a@client.example", "message-id:   <abc.123@client.example>  ", "Subject: x", "", "body");

      assertThat(relay.delivered.get(0).messageIdHeader()).isEqualTo("<abc.123@client.example>");
    }

    @Test
    void aFoldedMessageIdHeaderIsUnfolded() {
      openTransaction();
      say("DATA");

      transmit("From: a@client.example", "Message-ID:", "\t<folded.456@client.example>", "Subject: x", "", "body");

      assertThat(relay.delivered.get(0).messageIdHeader()).isEqualTo("<folded.456@client.example>");
    }

    @Test
    void aMessageIdInTheBodyIsNotTakenForTheHeader() {
      openTransaction();
      say("DATA");

      transmit("Subject: none", "", "Message-ID: <not-a-header@client.example>");

      assertThat(relay.delivered.get(0).messageIdHeader()).isNull();
    }
  }

  /** VRFY, HELP, NOOP, RSET, QUIT. */
  @Nested
  class OtherCommands {
    @Test
    void vrfyIs252() {
      assertThat(say("VRFY alice")).isEqualTo("252 2.5.0 Cannot VRFY user, but will accept message and attempt delivery");
    }

    @Test
    void helpIs214() {
      Step step = send("HELP");

      assertThat(step.reply().code()).isEqualTo(214);
      assertThat(step.reply().toWire()).startsWith("214-2.0.0 Commands: EHLO HELO MAIL RCPT DATA");
    }

    @Test
    void noopIs250AndLeavesTheTransactionAlone() {
      openTransaction();

      assertThat(say("NOOP")).isEqualTo("250 2.0.0 OK");
      assertThat(session().inTransaction()).isTrue();
      assertThat(relay.calls).doesNotContain("ABORT");
    }

    @Test
    void rsetAbortsTheRelayTransaction() {
      openTransaction();

      assertThat(say("RSET")).isEqualTo("250 2.0.0 Reset OK");

      assertThat(relay.calls).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example", "ABORT");
      assertThat(session().inTransaction()).isFalse();
      assertThat(say("DATA")).startsWith("503 5.5.1");
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK"); // still greeted
    }

    @Test
    void quitIs221AndClosesAndAbortsAnOpenTransaction() {
      openTransaction();

      Step step = send("QUIT");

      assertThat(step.reply().toString()).isEqualTo("221 2.0.0 Bye");
      assertThat(step.action()).isEqualTo(Action.CLOSE);
      assertThat(relay.calls).endsWith("ABORT");
    }

    @Test
    void aClosedConnectionReleasesTheDownstreamTransaction() {
      openTransaction();

      session().closed();

      assertThat(relay.calls).endsWith("ABORT");
      assertThat(session().inTransaction()).isFalse();
    }
  }

  /** STARTTLS. */
  @Nested
  class StartTls {
    @Test
    void startTlsIs220AndAsksTheTransportToUpgrade() {
      ehlo();

      Step step = send("STARTTLS");

      assertThat(step.reply().toString()).isEqualTo("220 2.0.0 Ready to start TLS");
      assertThat(step.action()).isEqualTo(Action.START_TLS);
    }

    @Test
    void startTlsAbortsATransactionInProgress() {
      openTransaction();

      assertThat(send("STARTTLS").action()).isEqualTo(Action.START_TLS);

      assertThat(relay.calls).endsWith("ABORT");
      assertThat(session().inTransaction()).isFalse();
    }

    @Test
    void afterTlsStartedTheSessionRequiresEhloAgain() {
      ehlo();
      send("STARTTLS");
      session().tlsStarted();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("503 5.5.1 Send HELO or EHLO first");
      ehlo();
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(relay.submissions.get(0).tls()).isTrue();
      assertThat(relay.submissions.get(0).protocol()).isEqualTo("ESMTPS");
    }

    @Test
    void startTlsTwiceIs503() {
      ehlo();
      send("STARTTLS");
      session().tlsStarted();
      ehlo();

      assertThat(say("STARTTLS")).isEqualTo("503 5.5.1 TLS already active");
    }

    @Test
    void startTlsWithoutTlsMaterialIs454() {
      tlsAvailable = false;
      ehlo();

      assertThat(say("STARTTLS")).isEqualTo("454 4.7.0 TLS not available");
    }

    /** RFC 3207 §4.2: after the handshake the server forgets everything the client told it in clear. */
    @Test
    void anIdentityAuthenticatedInClearIsForgottenByStartTls() {
      allowInsecureAuth = true;
      clientIp = OUTSIDER_IP;
      ehlo();
      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).startsWith("235 2.7.0");
      send("STARTTLS");
      session().tlsStarted();

      assertThat(ehloKeywords("client.example")).contains("AUTH PLAIN LOGIN");
      assertThat(say("MAIL FROM:<alice@client.example>")).isEqualTo("530 5.7.0 Authentication required");
      assertThat(relay.calls).isEmpty();
    }
  }

  /** AUTH. */
  @Nested
  class Auth {
    private void ehloOverTls() {
      ehlo();
      send("STARTTLS");
      session().tlsStarted();
      ehlo();
    }

    @Test
    void authPlainWithAnInitialResponseAuthenticatesTheSession() {
      clientIp = OUTSIDER_IP;
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).isEqualTo("235 2.7.0 Authentication successful");

      assertThat(authenticator.calls).containsExactly("alice:secret");
      assertThat(say("MAIL FROM:<alice@client.example>")).isEqualTo("250 2.1.0 Sender OK");
      Submission submission = relay.submissions.get(0);
      assertThat(submission.authUser()).isEqualTo("alice");
      assertThat(submission.clientIp()).isEqualTo(OUTSIDER_IP);
      assertThat(submission.intake()).isEqualTo(Intake.SMTP);
      assertThat(submission.protocol()).isEqualTo("ESMTPSA");
    }

    @Test
    void authPlainWithAnAuthorizationIdentityEqualToTheUserIsAccepted() {
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("alice\0alice\0secret"))).startsWith("235 2.7.0");
    }

    @Test
    void authPlainActingAsAnotherIdentityIs535() {
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("bob\0alice\0secret"))).isEqualTo("535 5.7.8 Authentication credentials invalid");
      assertThat(authenticator.calls).isEmpty();
    }

    @Test
    void authPlainWithoutAnInitialResponseAsksFor334Continuation() {
      ehloOverTls();

      Step challenge = send("AUTH PLAIN");
      assertThat(challenge.reply().toWire()).isEqualTo("334 \r\n");
      assertThat(challenge.action()).isEqualTo(Action.NONE);

      assertThat(say(b64("\0alice\0secret"))).isEqualTo("235 2.7.0 Authentication successful");
    }

    @Test
    void authLoginAsksForUserAndPasswordIn334Steps() {
      ehloOverTls();

      assertThat(say("AUTH LOGIN")).isEqualTo("334 VXNlcm5hbWU6");
      assertThat(say(b64("alice"))).isEqualTo("334 UGFzc3dvcmQ6");
      assertThat(say(b64("secret"))).isEqualTo("235 2.7.0 Authentication successful");
      assertThat(authenticator.calls).containsExactly("alice:secret");
    }

    @Test
    void authLoginWithTheUserAsInitialResponseAsksOnlyForThePassword() {
      ehloOverTls();

      assertThat(say("AUTH LOGIN " + b64("alice"))).isEqualTo("334 UGFzc3dvcmQ6");
      assertThat(say(b64("secret"))).startsWith("235 2.7.0");
    }

    @Test
    void aWrongPasswordIs535() {
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0wrong"))).isEqualTo("535 5.7.8 Authentication credentials invalid");
      assertThat(ehloKeywords("client.example")).contains("AUTH PLAIN LOGIN"); // still not authenticated
    }

    @Test
    void theThirdFailedAuthenticationCloses421() {
      ehloOverTls();
      assertThat(say("AUTH PLAIN " + b64("\0alice\0one"))).startsWith("535 5.7.8");
      assertThat(say("AUTH LOGIN")).startsWith("334");
      assertThat(say(b64("alice"))).startsWith("334");
      assertThat(say(b64("two"))).startsWith("535 5.7.8");

      Step third = send("AUTH PLAIN " + b64("\0alice\0three"));

      assertThat(third.reply().toString()).isEqualTo("421 4.7.0 Too many authentication failures");
      assertThat(third.action()).isEqualTo(Action.CLOSE);
    }

    @Test
    void anAuthenticatorErrorCountsAsAFailedCheck() {
      authenticator.failure = new IllegalStateException("bcrypt worker gone");
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).startsWith("535 5.7.8");
    }

    @Test
    void authCancelledWithAStarIs501AndIsNoFailure() {
      ehloOverTls();
      for (int i = 0; i < 3; i++) {
        assertThat(say("AUTH LOGIN")).startsWith("334");
        assertThat(say("*")).isEqualTo("501 5.0.0 Authentication cancelled");
      }
      assertThat(say("AUTH PLAIN")).startsWith("334");
      assertThat(say("*")).startsWith("501 5.0.0");

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).startsWith("235 2.7.0");
      assertThat(authenticator.calls).containsExactly("alice:secret");
    }

    @Test
    void aResponseThatIsNotBase64Is501() {
      ehloOverTls();

      assertThat(say("AUTH PLAIN %%%")).isEqualTo("501 5.5.2 Cannot decode the authentication response");
      assertThat(say("AUTH LOGIN")).startsWith("334");
      assertThat(say("not base64!")).startsWith("501 5.5.2");
      assertThat(say("AUTH PLAIN " + b64("no separators"))).startsWith("501 5.5.2");
    }

    @Test
    void anUnknownMechanismIs504() {
      ehloOverTls();

      assertThat(say("AUTH CRAM-MD5")).isEqualTo("504 5.5.4 Unrecognized authentication mechanism");
    }

    @Test
    void authBeforeTlsWithoutAllowInsecureAuthIs538() {
      ehlo();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret")))
          .isEqualTo("538 5.7.11 Encryption required for requested authentication mechanism");
      assertThat(authenticator.calls).isEmpty();
    }

    @Test
    void authBeforeTlsWithAllowInsecureAuthIsAccepted() {
      allowInsecureAuth = true;
      ehlo();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).startsWith("235 2.7.0");
    }

    @Test
    void authWithoutAnAuthenticatorIs503() {
      authAvailable = false;
      ehloOverTls();

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).isEqualTo("503 5.5.1 AUTH not available");
    }

    @Test
    void authTwiceIs503() {
      ehloOverTls();
      say("AUTH PLAIN " + b64("\0alice\0secret"));

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).isEqualTo("503 5.5.1 Already authenticated");
      assertThat(ehloKeywords("client.example")).noneMatch(k -> k.startsWith("AUTH"));
    }

    @Test
    void authDuringAMailTransactionIs503() {
      ehloOverTls();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("AUTH PLAIN " + b64("\0alice\0secret"))).isEqualTo("503 5.5.1 AUTH not allowed during a mail transaction");
    }
  }

  /** Relay policy. */
  @Nested
  class RelayPolicy {
    @Test
    void anUnauthenticatedClientOutsideTheRelayNetworksIsAskedToAuthenticate530() {
      clientIp = OUTSIDER_IP;
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("530 5.7.0 Authentication required");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void anUnauthenticatedClientOutsideTheRelayNetworksIsDenied550WhenThereIsNoAuth() {
      clientIp = OUTSIDER_IP;
      authAvailable = false;
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("550 5.7.1 Relaying denied");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void aClientInsideTheRelayNetworksRelaysWithoutAuth() {
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(relay.submissions.get(0).authUser()).isNull();
    }
  }

  /** SMTPUTF8. */
  @Nested
  class SmtpUtf8 {
    @Test
    void aNonAsciiSenderWithoutSmtpUtf8Is553() {
      ehlo();

      assertThat(say("MAIL FROM:<jürgen@client.example>")).isEqualTo("553 5.6.7 Non-ASCII address requires SMTPUTF8");
      assertThat(relay.calls).isEmpty();
    }

    @Test
    void aNonAsciiSenderWithSmtpUtf8IsAccepted() {
      ehlo();

      assertThat(say("MAIL FROM:<jürgen@client.example> SMTPUTF8")).isEqualTo("250 2.1.0 Sender OK");
      assertThat(relay.parameters.get(0).smtpUtf8()).isTrue();
      assertThat(say("RCPT TO:<sí@dest.example>")).startsWith("250 2.1.5");
    }

    /** Issue 26, item 12: bytes that are not UTF-8 were decoded to U+FFFD, then relayed and recorded as such. */
    @Test
    void aSenderThatIsNotUtf8IsRefusedWhateverItsParametersAndNothingReachesTheRelay() {
      ehlo();

      for (String parameters : List.of(" SMTPUTF8", "")) {
        Step step = send(bytes("MAIL FROM:<j", 0xFC, "rgen@client.example>" + parameters));
        assertThat(step.reply().toString()).as(parameters).isEqualTo("501 5.1.7 Sender address is not valid UTF-8");
      }
      // An overlong encoding of '@' and a lone continuation byte are not UTF-8 either.
      assertThat(send(bytes("MAIL FROM:<a", 0xC0, 0x80, "b@client.example> SMTPUTF8")).reply().toString()).startsWith("501 5.1.7");
      assertThat(send(bytes("MAIL FROM:<a", 0x80, "@client.example> SMTPUTF8")).reply().toString()).startsWith("501 5.1.7");
      assertThat(relay.calls).isEmpty();
      assertThat(say("MAIL FROM:<jürgen@client.example> SMTPUTF8")).isEqualTo("250 2.1.0 Sender OK");
    }

    @Test
    void aRecipientThatIsNotUtf8IsRefusedAndTheTransactionGoesOn() {
      ehlo();
      assertThat(say("MAIL FROM:<jürgen@client.example> SMTPUTF8")).isEqualTo("250 2.1.0 Sender OK");

      Step step = send(bytes("RCPT TO:<s", 0xED, 0xA0, 0x80, "@dest.example>")); // a UTF-16 surrogate, encoded
      assertThat(step.reply().toString()).isEqualTo("501 5.1.3 Recipient address is not valid UTF-8");
      assertThat(relay.calls).containsExactly("MAIL jürgen@client.example");
      assertThat(say("RCPT TO:<sí@dest.example>")).startsWith("250 2.1.5");
    }

    @Test
    void aHeloDomainThatIsNotUtf8IsRefusedAndNotKept() {
      Step step = send(bytes("EHLO client", 0xFF, ".example"));
      assertThat(step.reply().toString()).isEqualTo("501 5.5.4 HELO/EHLO requires a domain or address literal");
      assertThat(say("MAIL FROM:<sender@client.example>")).startsWith("503 5.5.1");
    }

    @Test
    void aNonAsciiRecipientWithoutSmtpUtf8Is553() {
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT TO:<sí@dest.example>")).isEqualTo("553 5.6.7 Non-ASCII address requires SMTPUTF8");
      assertThat(relay.calls).containsExactly("MAIL sender@client.example");
    }
  }

  /** Downstream verdicts on MAIL and RCPT. */
  @Nested
  class DownstreamVerdicts {
    @Test
    void aDownstreamRefusalOfMailIsMirroredWithItsCodeAndEnhancedCode() {
      relay.mailReply = downstream(550, "5.7.1", "Sender blocked by policy");
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("550 5.7.1 Sender blocked by policy");
      assertThat(session().inTransaction()).isFalse();
      assertThat(say("RCPT TO:<rcpt@dest.example>")).startsWith("503 5.5.1");
    }

    @Test
    void aDownstreamRefusalOfMailWithoutEnhancedCodeGetsAGenericOneOfTheSameClass() {
      relay.mailReply = downstream(451, null, "Try later");
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("451 4.1.0 Try later");
    }

    @Test
    void aDownstreamRefusalOfRcptIsMirroredWithItsCodeAndEnhancedCode() {
      relay.rcptReplies.put("gone@dest.example", downstream(550, "5.1.1", "No such user here"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT TO:<gone@dest.example>")).isEqualTo("550 5.1.1 No such user here");
      assertThat(say("RCPT TO:<rcpt@dest.example>")).isEqualTo("250 2.1.5 Recipient ok");
      assertThat(say("DATA")).startsWith("354");
    }

    @Test
    void aTemporaryDownstreamRefusalOfRcptIsMirroredAs4xx() {
      relay.rcptReplies.put("full@dest.example", downstream(452, "4.2.2", "Mailbox full"));
      relay.rcptReplies.put("grey@dest.example", downstream(450, null, "Greylisted"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT TO:<full@dest.example>")).isEqualTo("452 4.2.2 Mailbox full");
      assertThat(say("RCPT TO:<grey@dest.example>")).isEqualTo("450 4.1.0 Greylisted");
    }

    @Test
    void aDownstreamHangUpOnRcptIsMirroredAs451NotAsOurOwn421() {
      relay.rcptReplies.put("bye@dest.example", downstream(421, "4.3.2", "Shutting down"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT TO:<bye@dest.example>")).isEqualTo("451 4.3.2 Downstream closing: Shutting down");
      assertThat(say("NOOP")).startsWith("250");
    }

    @Test
    void aDownstreamAcceptanceWithoutEnhancedCodeGets2_1_5() {
      relay.rcptReplies.put("plain@dest.example", downstream(250, null, "OK"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      assertThat(say("RCPT TO:<plain@dest.example>")).isEqualTo("250 2.1.5 OK");
    }

    @Test
    void aDownstreamReplyTextCannotInjectLinesIntoOurReply() {
      relay.rcptReplies.put("evil@dest.example", downstream(550, "5.1.1", "No\r\n250 2.0.0 fake\u00e9"));
      ehlo();
      say("MAIL FROM:<sender@client.example>");

      Step step = send("RCPT TO:<evil@dest.example>");

      assertThat(step.reply().lines()).hasSize(1);
      assertThat(step.reply().toWire()).isEqualTo("550 5.1.1 No??250 2.0.0 fake?\r\n");
    }

    @Test
    void anUnreachableDownstreamAtMailIs451_4_4_1() {
      relay.beginFailure = new DownstreamUnavailable("connection refused", null);
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("451 4.4.1 Downstream server unavailable, try again later");
      assertThat(session().inTransaction()).isFalse();
    }

    @Test
    void anUnexpectedErrorFromTheRelayAtMailIsStill451() {
      relay.beginFailure = new IllegalStateException("pool closed");
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).startsWith("451 4.4.1");
    }

    @Test
    void aRelayThatThrowsInsteadOfFailingTheFutureGets451LocalError() {
      relay.throwOnBegin = true;
      ehlo();

      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("451 4.3.0 Local error in processing");
      assertThat(say("MAIL FROM:<sender@client.example>")).startsWith("451 4.3.0"); // no half-open state
    }

    @Test
    void aDownstreamLostAtRcptBreaksTheTransactionUntilRset() {
      relay.rcptUnreachable.add("rcpt2@dest.example");
      ehlo();
      say("MAIL FROM:<sender@client.example>");
      assertThat(say("RCPT TO:<rcpt1@dest.example>")).startsWith("250");

      assertThat(say("RCPT TO:<rcpt2@dest.example>")).isEqualTo("451 4.4.1 Downstream server unavailable, try again later");

      assertThat(relay.calls).endsWith("ABORT");
      assertThat(say("RCPT TO:<rcpt3@dest.example>")).startsWith("451 4.4.1");
      assertThat(say("DATA")).startsWith("451 4.4.1");
      assertThat(say("MAIL FROM:<sender@client.example>")).startsWith("503 5.5.1");
      assertThat(say("RSET")).startsWith("250 2.0.0");
      assertThat(say("MAIL FROM:<sender@client.example>")).isEqualTo("250 2.1.0 Sender OK");
    }

    @Test
    void aRecipientOnAnotherRouteGets452_4_5_3AndIsNotForwarded() {
      ehlo();
      say("MAIL FROM:<sender@client.example>");
      assertThat(say("RCPT TO:<rcpt@dest.example>")).startsWith("250");

      assertThat(say("RCPT TO:<someone@" + FakeRelay.OTHER_ROUTE_DOMAIN + ">"))
          .isEqualTo("452 4.5.3 Recipient needs another route; send it in a new transaction");
      assertThat(relay.calls).doesNotContain("RCPT someone@" + FakeRelay.OTHER_ROUTE_DOMAIN);
      assertThat(say("RCPT TO:<other@dest.example>")).startsWith("250");
    }
  }

  /** Outcomes after DATA (docs/contract.md §1.9 reply table). */
  @Nested
  class Outcomes {
    private Step deliverWith(DeliveryOutcome outcome) {
      relay.outcome = outcome;
      openTransaction();
      say("DATA");
      return body("Subject: test", "", "Hello");
    }

    @Test
    void anAcceptedMessageIs250WithTheLedgerIdAndTheDownstreamText() {
      Step step = deliverWith(new DeliveryOutcome.Accepted(LEDGER_ID, downstream(250, "2.0.0", "Ok: queued as 4XyZ"), true));

      assertThat(step.reply().toString())
          .isEqualTo("250 2.0.0 Ok: queued as " + LEDGER_ID + " (downstream: Ok: queued as 4XyZ)");
      assertThat(step.action()).isEqualTo(Action.NONE);
      assertThat(relay.calls).containsExactly("MAIL sender@client.example", "RCPT rcpt@dest.example", "DELIVER");
    }

    @Test
    void anAcceptedMessageWhoseSettleFailedIsStill250() {
      Step step = deliverWith(new DeliveryOutcome.Accepted(LEDGER_ID, downstream(250, null, "queued"), false));

      assertThat(step.reply().code()).isEqualTo(250);
      assertThat(step.reply().enhanced()).isEqualTo("2.0.0");
      assertThat(step.reply().text()).contains(LEDGER_ID.toString());
    }

    @Test
    void aLedgerThatCouldNotRecordIs451_4_3_0() {
      Step step = deliverWith(new DeliveryOutcome.NotRecorded());

      assertThat(step.reply().toString()).isEqualTo("451 4.3.0 Temporary local persistence failure");
    }

    @Test
    void aDeferredMessageIs451WithTheDownstreamEnhancedCode() {
      Step step = deliverWith(new DeliveryOutcome.Deferred(LEDGER_ID, downstream(452, "4.3.1", "Insufficient storage"), true));

      assertThat(step.reply().toString()).isEqualTo("451 4.3.1 Downstream: Insufficient storage");
    }

    @Test
    void aDeferredMessageWithoutEnhancedCodeIs451_4_0_0() {
      Step step = deliverWith(new DeliveryOutcome.Deferred(LEDGER_ID, downstream(421, null, ""), true));

      assertThat(step.reply().toString()).isEqualTo("451 4.0.0 Downstream: 421");
    }

    @Test
    void aRejectedMessageIsTheDownstream5yzWithItsEnhancedCode() {
      Step step = deliverWith(new DeliveryOutcome.Rejected(LEDGER_ID, downstream(554, "5.7.1", "Spam detected"), true));

      assertThat(step.reply().toString()).isEqualTo("554 5.7.1 Downstream: Spam detected");
    }

    @Test
    void aRejectedMessageWithoutEnhancedCodeIs5yz_5_0_0() {
      Step step = deliverWith(new DeliveryOutcome.Rejected(LEDGER_ID, downstream(552, null, "Too large"), false));

      assertThat(step.reply().toString()).isEqualTo("552 5.0.0 Downstream: Too large");
    }

    @Test
    void aConnectionLostBeforeTheDotIs451_4_4_2() {
      Step step = deliverWith(new DeliveryOutcome.LostBeforeDot(LEDGER_ID, "connection reset", true));

      assertThat(step.reply().code()).isEqualTo(451);
      assertThat(step.reply().enhanced()).isEqualTo("4.4.2");
      assertThat(step.reply().text()).contains("nothing was delivered");
    }

    @Test
    void anUnknownOutcomeIs451_4_4_2ByDefault() {
      Step step = deliverWith(new DeliveryOutcome.Unknown(LEDGER_ID, "reply timeout", true));

      assertThat(step.reply().code()).isEqualTo(451);
      assertThat(step.reply().enhanced()).isEqualTo("4.4.2");
      assertThat(step.reply().text()).contains(LEDGER_ID.toString()).contains("outcome unknown");
    }

    @Test
    void anUnknownOutcomeIs250WhenConfiguredSo() {
      unknownOutcomeReply = UnknownOutcomeReply.REPLY_250;

      Step step = deliverWith(new DeliveryOutcome.Unknown(LEDGER_ID, "reply timeout", true));

      assertThat(step.reply().code()).isEqualTo(250);
      assertThat(step.reply().enhanced()).isEqualTo("2.0.0");
      assertThat(step.reply().text()).contains(LEDGER_ID.toString());
    }

    @Test
    void aDeliveryThatFailsInsteadOfReturningAnOutcomeIs451_4_3_0() {
      relay.deliverFailure = new IllegalStateException("bug");
      openTransaction();
      say("DATA");

      assertThat(transmit("Subject: x", "", "y")).isEqualTo("451 4.3.0 Local error in processing");
    }

    @Test
    void theMessageHandedToTheRelayIsTheBodyWithoutTheDot() {
      deliverWith(new DeliveryOutcome.NotRecorded());

      MessageData m = relay.delivered.get(0);
      assertThat(m.wire().toString(StandardCharsets.US_ASCII)).isEqualTo("Subject: test\r\n\r\nHello\r\n");
      assertThat(m.size()).isEqualTo(m.wire().length());
    }
  }

  /** Drain. */
  @Nested
  class Drain {
    @Test
    void afterDrainTheNextCommandGets421_4_3_2AndClose() {
      openTransaction();

      session().drain();
      Step step = send("NOOP");

      assertThat(step.reply().toString()).isEqualTo("421 4.3.2 Service shutting down, try again later");
      assertThat(step.action()).isEqualTo(Action.CLOSE);
      assertThat(relay.calls).endsWith("ABORT");
      assertThat(session().draining()).isTrue();
    }

    @Test
    void aMessageInFlightWhenDrainBeginsIsFinishedAndThenTheConnectionCloses() {
      openTransaction();
      say("DATA");
      bodyLine(Line.of("Subject: late"));

      session().drain();
      bodyLine(Line.of(""));
      Step dot = body("still part of the message");

      assertThat(dot.reply().toString()).startsWith("250 2.0.0");
      assertThat(dot.action()).isEqualTo(Action.CLOSE);
      assertThat(relay.delivered).hasSize(1);
    }
  }

  // --- fakes

  /** Answers "alice"/"secret" and records every check as "user:password". */
  static final class FakeAuthenticator implements SmtpSession.Authenticator {
    final List<String> calls = new ArrayList<>();
    RuntimeException failure;

    @Override
    public Future<Boolean> verify(String user, String password) {
      calls.add(user + ":" + password);
      if (failure != null) {
        return Future.failedFuture(failure);
      }
      return Future.succeededFuture("alice".equals(user) && "secret".equals(password));
    }
  }

  /**
   * A scripted downstream. Records "MAIL from", "RCPT to", "DELIVER" and "ABORT" in order; refuses
   * or loses what the test says; sends recipients at {@link #OTHER_ROUTE_DOMAIN} on another route.
   */
  static final class FakeRelay implements Relay {
    static final String ROUTE = "smarthost:test:25";
    static final String OTHER_ROUTE_DOMAIN = "mx-routed.example";

    final List<String> calls = new ArrayList<>();
    final List<Submission> submissions = new ArrayList<>();
    final List<MailParameters> parameters = new ArrayList<>();
    final List<MessageData> delivered = new ArrayList<>();
    final Map<String, DownstreamReply> rcptReplies = new HashMap<>();
    final List<String> rcptUnreachable = new ArrayList<>();
    /** What the smarthost offers (EHLO keywords): its transactions' connections offer the same. */
    final java.util.Set<String> extensions = new java.util.HashSet<>();
    final List<RelayTransaction.RcptParameters> rcptParameters = new ArrayList<>();
    DownstreamReply mailReply = new DownstreamReply(250, "2.1.0", "Sender ok");
    RuntimeException beginFailure;
    boolean throwOnBegin;
    RuntimeException deliverFailure;
    DeliveryOutcome outcome =
        new DeliveryOutcome.Accepted(LEDGER_ID, new DownstreamReply(250, "2.0.0", "Ok: queued as D0WN"), true);

    @Override
    public boolean downstreamOffers(String keyword) {
      return extensions.contains(keyword);
    }

    @Override
    public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters params) {
      if (throwOnBegin) {
        throw new IllegalStateException("relay bug");
      }
      calls.add("MAIL " + mailFrom);
      submissions.add(submission);
      parameters.add(params);
      if (beginFailure != null) {
        return Future.failedFuture(beginFailure);
      }
      return Future.succeededFuture(new Transaction(mailReply));
    }

    final class Transaction implements RelayTransaction {
      private final DownstreamReply mailReply;

      Transaction(DownstreamReply mailReply) {
        this.mailReply = mailReply;
      }

      @Override
      public DownstreamReply mailReply() {
        return mailReply;
      }

      @Override
      public String route() {
        return ROUTE;
      }

      @Override
      public String routeFor(String recipient) {
        return recipient.endsWith("@" + OTHER_ROUTE_DOMAIN) ? "mx:" + OTHER_ROUTE_DOMAIN : ROUTE;
      }

      @Override
      public boolean offers(String keyword) {
        return extensions.contains(keyword);
      }

      @Override
      public Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters) {
        calls.add("RCPT " + recipient);
        rcptParameters.add(parameters);
        if (rcptUnreachable.contains(recipient)) {
          return Future.failedFuture(new DownstreamUnavailable("connection reset", null));
        }
        return Future.succeededFuture(rcptReplies.getOrDefault(recipient, new DownstreamReply(250, "2.1.5", "Recipient ok")));
      }

      @Override
      public Future<DeliveryOutcome> deliver(MessageData message, dev.ledgerpost.relay.Opening opening) {
        calls.add("DELIVER");
        delivered.add(message);
        return deliverFailure != null ? Future.failedFuture(deliverFailure) : Future.succeededFuture(outcome);
      }

      @Override
      public Future<Void> abort() {
        calls.add("ABORT");
        return Future.succeededFuture();
      }
    }
  }
}
