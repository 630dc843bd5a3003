package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.platform.tenants.FaultRule;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The session with fault rules (docs/design.md §8.11): the decision is the test's own, so what is checked is where
 * the session asks (MAIL, RCPT, the message's end, after its own checks, with the AUTH user) and what it does with the
 * answer: the rule's reply instead of the relay's, the relay's after the rule's timer.
 */
class SmtpSessionFaultsTest {
  private final SmtpSessionTranscriptTest.FakeRelay relay = new SmtpSessionTranscriptTest.FakeRelay();
  /** What the test's decision function answers per stage, and who it was asked about. */
  private final Map<FaultRule.Stage, FaultRule> rules = new HashMap<>();
  private final List<String> asked = new ArrayList<>();
  private final List<Duration> delays = new ArrayList<>();
  private final List<Promise<Void>> timers = new ArrayList<>();

  private SmtpSession session() {
    SmtpSession.Settings settings = new SmtpSession.Settings("gw.test", 10_000, 10, false, true, true,
        UnknownOutcomeReply.REPLY_451);
    SmtpSession.Delays timer = d -> {
      delays.add(d);
      Promise<Void> p = Promise.promise();
      timers.add(p);
      return p.future();
    };
    SmtpSession.Faults faults = (user, stage) -> {
      asked.add(user + "@" + stage);
      return Optional.ofNullable(rules.get(stage));
    };
    SmtpSession s = new SmtpSession(new SmtpSession.Setup(settings, relay, new SmtpSessionTranscriptTest.FakeAuthenticator(),
        ip -> false, new SmtpSession.Guards(AuthThrottle.off(), SenderPolicy.ANY, UserQuota.UNLIMITED, timer).with(faults)),
        "198.51.100.7");
    say(s, "EHLO client.test");
    assertThat(say(s, "AUTH PLAIN " + Base64.getEncoder().encodeToString("\0alice\0secret".getBytes(StandardCharsets.UTF_8))))
        .startsWith("235");
    return s;
  }

  private static String say(SmtpSession s, String line) {
    Future<SmtpSession.Step> step = s.input(Line.of(line));
    assertThat(step.isComplete()).as(line + " answered at once").isTrue();
    return step.result().reply() == null ? null : step.result().reply().toString();
  }

  @Test
  void aReplyRuleAtMailAnswersInsteadOfTheRelayAndNothingBegins() {
    rules.put(FaultRule.Stage.MAIL, FaultRule.reply(FaultRule.Stage.MAIL, 1, "452 4.3.1 injected: no room"));
    SmtpSession s = session();
    assertThat(say(s, "MAIL FROM:<app@example.com>")).isEqualTo("452 4.3.1 injected: no room");
    assertThat(relay.calls).isEmpty();
    assertThat(asked).containsExactly("alice@MAIL");
    // Nothing of a transaction is left: the client may try MAIL again, and without the rule it goes downstream.
    rules.clear();
    assertThat(say(s, "MAIL FROM:<app@example.com>")).startsWith("250");
    assertThat(relay.calls).containsExactly("MAIL app@example.com");
  }

  @Test
  void aReplyRuleAtRcptRefusesThatRecipientOnlyAndDataAfterOnlySuchRecipientsIs554() {
    SmtpSession s = session();
    assertThat(say(s, "MAIL FROM:<app@example.com>")).startsWith("250");
    rules.put(FaultRule.Stage.RCPT, FaultRule.reply(FaultRule.Stage.RCPT, 1, "550 5.1.1 injected: no such user"));
    assertThat(say(s, "RCPT TO:<a@example.net>")).isEqualTo("550 5.1.1 injected: no such user");
    assertThat(say(s, "DATA")).startsWith("554 5.5.1");
    rules.clear();
    assertThat(say(s, "RCPT TO:<b@example.net>")).startsWith("250");
    assertThat(relay.calls).containsExactly("MAIL app@example.com", "RCPT b@example.net");
    // A recipient the gateway itself refuses is never put to the rules: its own checks come first.
    int before = asked.size();
    assertThat(say(s, "RCPT TO:<not an address>")).startsWith("501");
    assertThat(asked).hasSize(before);
  }

  @Test
  void aReplyRuleAtDataRefusesTheMessageAtItsEndAndNothingIsDelivered() {
    SmtpSession s = session();
    say(s, "MAIL FROM:<app@example.com>");
    say(s, "RCPT TO:<b@example.net>");
    rules.put(FaultRule.Stage.DATA, FaultRule.reply(FaultRule.Stage.DATA, 1, "451 4.3.0 injected"));
    assertThat(say(s, "DATA")).startsWith("354"); // the DATA command itself is not a rule's stage
    assertThat(say(s, "Subject: x")).isNull();
    assertThat(say(s, "")).isNull();
    assertThat(say(s, "body")).isNull();
    assertThat(say(s, ".")).isEqualTo("451 4.3.0 injected");
    assertThat(relay.calls).containsExactly("MAIL app@example.com", "RCPT b@example.net", "ABORT");
    assertThat(relay.delivered).isEmpty();
    assertThat(asked).containsExactly("alice@MAIL", "alice@RCPT", "alice@DATA");
  }

  @Test
  void aDataRuleAnswersBdatLastNotTheChunksBeforeIt() {
    SmtpSession s = session();
    say(s, "MAIL FROM:<app@example.com>");
    say(s, "RCPT TO:<b@example.net>");
    rules.put(FaultRule.Stage.DATA, FaultRule.reply(FaultRule.Stage.DATA, 1, "554 5.3.4 injected: too big"));
    assertThat(chunk(s, "Subject: x\r\n\r\n", false)).startsWith("250 2.0.0");
    assertThat(chunk(s, "body\r\n", true)).isEqualTo("554 5.3.4 injected: too big");
    assertThat(relay.delivered).isEmpty();
    assertThat(asked).containsExactly("alice@MAIL", "alice@RCPT", "alice@DATA");
  }

  private static String chunk(SmtpSession s, String bytes, boolean last) {
    byte[] b = bytes.getBytes(StandardCharsets.US_ASCII);
    Future<SmtpSession.Step> command = s.input(Line.of("BDAT " + b.length + (last ? " LAST" : "")));
    assertThat(command.result().action()).isEqualTo(SmtpSession.Action.READ_CHUNK);
    s.chunk(b, 0, b.length);
    Future<SmtpSession.Step> end = s.endOfChunk();
    assertThat(end.isComplete()).isTrue();
    return end.result().reply().toString();
  }

  @Test
  void aDelayRuleHoldsTheCommandUntilItsTimerFiresThenGoesOnAsWithoutIt() {
    SmtpSession s = session();
    rules.put(FaultRule.Stage.RCPT, FaultRule.delay(FaultRule.Stage.RCPT, 1, Duration.ofSeconds(3)));
    say(s, "MAIL FROM:<app@example.com>");
    Future<SmtpSession.Step> rcpt = s.input(Line.of("RCPT TO:<b@example.net>"));
    assertThat(rcpt.isComplete()).isFalse();
    assertThat(delays).containsExactly(Duration.ofSeconds(3));
    assertThat(relay.calls).containsExactly("MAIL app@example.com"); // nothing downstream before the timer
    timers.get(0).complete();
    assertThat(rcpt.result().reply().toString()).startsWith("250 2.1.5");
    assertThat(relay.calls).containsExactly("MAIL app@example.com", "RCPT b@example.net");

    rules.put(FaultRule.Stage.DATA, FaultRule.delay(FaultRule.Stage.DATA, 1, Duration.ofMillis(500)));
    say(s, "DATA");
    say(s, "body");
    Future<SmtpSession.Step> end = s.input(Line.of("."));
    assertThat(end.isComplete()).isFalse();
    assertThat(relay.delivered).isEmpty();
    timers.get(1).complete();
    assertThat(end.result().reply().toString()).startsWith("250 2.0.0 Ok: queued as");
    assertThat(relay.delivered).hasSize(1);
  }

  @Test
  void aClientGoneDuringADelayAtTheMessagesEndGetsNothingDelivered() {
    SmtpSession s = session();
    say(s, "MAIL FROM:<app@example.com>");
    say(s, "RCPT TO:<b@example.net>");
    rules.put(FaultRule.Stage.DATA, FaultRule.delay(FaultRule.Stage.DATA, 1, Duration.ofSeconds(1)));
    say(s, "DATA");
    say(s, "body");
    Future<SmtpSession.Step> end = s.input(Line.of("."));
    s.closed();
    timers.get(0).complete();
    assertThat(end.succeeded()).isTrue();
    assertThat(relay.delivered).isEmpty();
    assertThat(relay.calls).endsWith("ABORT");
  }

  @Test
  void withoutRulesTheSessionAsksAndGoesOn() {
    SmtpSession s = session();
    say(s, "MAIL FROM:<app@example.com>");
    say(s, "RCPT TO:<b@example.net>");
    say(s, "DATA");
    say(s, "body");
    assertThat(say(s, ".")).startsWith("250 2.0.0");
    assertThat(asked).containsExactly("alice@MAIL", "alice@RCPT", "alice@DATA");
    assertThat(delays).isEmpty();
  }
}
