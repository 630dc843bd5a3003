package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * AUTH across connections on real sockets: the brute-force throttle (growing delay, ban per address,
 * never per name), the sender policy and the per-user message rate. Each test speaks from its own
 * loopback address (127.0.0.0/8), so their counts do not mix.
 */
class AuthLimitsTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("auth.usersFile", Credentials.htpasswd(Map.of("alice", "s3cret", "bob", "b0b")).toString())
      .with("smtp.allowInsecureAuth", true)
      .with("smtp.relayNetworks", "10.0.0.0/8") // loopback must authenticate
      .with("auth.failureDelay", "50ms")
      .with("auth.banThreshold", 4)
      .with("auth.banWindow", "3s")
      .with("auth.senderPolicy", "own")
      .with("auth.sendersFile", Credentials.write("senders-", "senders",
          "alice: alice@example.com, @alice.example\nbob: bob@example.net\n").toString())
      .with("auth.rateLimit", 3);

  private static String plain(String user, String password) {
    return "AUTH PLAIN " + Base64.getEncoder().encodeToString(("\0" + user + "\0" + password).getBytes(StandardCharsets.UTF_8));
  }

  private static SmtpTestClient connect(String from) throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), from);
    assertThat(c.reply()).startsWith("220");
    assertThat(c.command("EHLO client.test")).startsWith("250");
    return c;
  }

  /** The reply to one AUTH line, and how long it took. */
  private record Timed(String reply, long millis) {}

  private static Timed timed(SmtpTestClient c, String line) throws Exception {
    long t0 = System.nanoTime();
    String reply = c.command(line);
    return new Timed(reply, (System.nanoTime() - t0) / 1_000_000);
  }

  private static double metric(String scrape, String nameAndLabels) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(nameAndLabels) + " (\\S+)$").matcher(scrape);
    return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
  }

  @Test
  void guessesOverSeveralConnectionsWaitLongerEachTimeThenTheAddressIsBannedUntilTheWindowEnds() throws Exception {
    String attacker = "127.0.0.10";
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.auth.AuthThrottle")) {
      Timed first;
      Timed second;
      Timed third;
      try (SmtpTestClient c = connect(attacker)) {
        first = timed(c, plain("guess1", "x"));
        second = timed(c, plain("guess2", "x"));
        third = timed(c, plain("guess3", "x"));
        assertThat(c.closedByServer()).isTrue();
      }
      assertThat(first.reply()).isEqualTo("535 5.7.8 Authentication credentials invalid");
      assertThat(second.reply()).isEqualTo("535 5.7.8 Authentication credentials invalid");
      assertThat(third.reply()).isEqualTo("421 4.7.0 Too many authentication failures");
      // 50 ms doubled per failure of the address: 50, 100, 200, and 400 on the next connection.
      assertThat(first.millis()).isGreaterThanOrEqualTo(50);
      assertThat(second.millis()).isGreaterThanOrEqualTo(100);
      assertThat(third.millis()).isGreaterThanOrEqualTo(200);

      try (SmtpTestClient c = connect(attacker)) {
        Timed fourth = timed(c, plain("guess4", "x"));
        assertThat(fourth.reply()).startsWith("535 5.7.8");
        assertThat(fourth.millis()).isGreaterThanOrEqualTo(400);
        // Banned now: even the right password is not checked.
        assertThat(c.command(plain("alice", "s3cret"))).isEqualTo(
            "454 4.7.0 Too many failed authentications from your address, try again later");
      }
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), attacker)) {
        assertThat(c.reply()).isEqualTo("421 4.7.0 Too many failed authentications from your address, try again later");
        assertThat(c.closedByServer()).isTrue();
      }
      // Another address is not affected.
      try (SmtpTestClient c = connect("127.0.0.11")) {
        assertThat(c.command(plain("alice", "s3cret"))).startsWith("235");
      }
      String scrape = gateway.get("/metrics", null).body();
      assertThat(metric(scrape, "ledgerpost_auth_banned_addresses")).isEqualTo(1.0);
      assertThat(metric(scrape, "ledgerpost_auth_failures_total{result=\"banned\"}")).isEqualTo(1.0);
      assertThat(metric(scrape, "ledgerpost_auth_failures_total{result=\"refused\"}")).isGreaterThanOrEqualTo(1.0);
      assertThat(metric(scrape, "ledgerpost_auth_failures_total{result=\"rejected\"}")).isGreaterThanOrEqualTo(3.0);
      assertThat(log.warningsContaining("client " + attacker + " banned")).hasSize(1);

      // The window ends: the address may connect again, and the right password works.
      Poll.until(Duration.ofSeconds(15), "the ban of " + attacker + " ends", () -> {
        try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), attacker)) {
          return c.reply().startsWith("220");
        }
      });
      try (SmtpTestClient c = connect(attacker)) {
        Timed ok = timed(c, plain("alice", "s3cret"));
        assertThat(ok.reply()).isEqualTo("235 2.7.0 Authentication successful");
      }
      assertThat(log.warningsContaining("client " + attacker + " banned")).hasSize(1);
    }
  }

  @Test
  void oneUserNameGuessedFromManyAddressesWaitsLongerButItsOwnerIsNeverLockedOut() throws Exception {
    long last = 0;
    for (int i = 0; i < 5; i++) {
      try (SmtpTestClient c = connect("127.0.0.2" + i)) {
        Timed t = timed(c, plain("bob", "wrong" + i));
        assertThat(t.reply()).startsWith("535 5.7.8");
        // One failure per address, but the name's count doubles the delay: 50, 100, 200, 400, 800 ms.
        assertThat(t.millis()).isGreaterThanOrEqualTo(50L << i);
        last = t.millis();
      }
    }
    assertThat(last).isGreaterThanOrEqualTo(800);
    for (int i = 0; i < 5; i++) {
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), "127.0.0.2" + i)) {
        assertThat(c.reply()).as("no address was banned").startsWith("220");
      }
    }
    try (SmtpTestClient c = connect("127.0.0.29")) {
      assertThat(c.command(plain("bob", "b0b"))).isEqualTo("235 2.7.0 Authentication successful");
    }
  }

  @Test
  void underTheOwnPolicyAUserSendsOnlyFromItsAddressesAndDomains() throws Exception {
    try (SmtpTestClient c = connect("127.0.0.30")) {
      assertThat(c.command(plain("alice", "s3cret"))).startsWith("235");
      assertThat(c.command("MAIL FROM:<bob@example.net>")).isEqualTo("553 5.7.1 Sender address not owned by the authenticated user");
      assertThat(c.command("MAIL FROM:<>")).startsWith("553 5.7.1");
      assertThat(c.command("MAIL FROM:<ceo@other.example>")).startsWith("553 5.7.1");
      assertThat(c.command("MAIL FROM:<Alice@Example.com>")).startsWith("250");
      assertThat(c.command("RSET")).startsWith("250");
      assertThat(c.command("MAIL FROM:<news@alice.example>")).startsWith("250");
      assertThat(c.command("RSET")).startsWith("250");
    }
  }

  @Test
  void aUserOverItsMessagesPerMinuteHears451AtMail() throws Exception {
    int before = gateway.downstream().messages().size();
    try (SmtpTestClient c = connect("127.0.0.40")) {
      assertThat(c.command(plain("bob", "b0b"))).startsWith("235");
      // auth.rateLimit 3: a minute's worth at once, then one every 20 s.
      for (int i = 0; i < 3; i++) {
        assertThat(c.command("MAIL FROM:<bob@example.net>")).as("message %d", i).startsWith("250");
        assertThat(c.command("RCPT TO:<carol@example.org>")).startsWith("250");
        assertThat(c.command("DATA")).startsWith("354");
        c.send("Subject: " + i + "\r\n\r\nbody\r\n.\r\n");
        assertThat(c.reply()).startsWith("250");
      }
      assertThat(c.command("MAIL FROM:<bob@example.net>")).isEqualTo("451 4.7.1 Sending rate limit exceeded, try again later");
    }
    // Per user, not per connection or address.
    try (SmtpTestClient c = connect("127.0.0.41")) {
      assertThat(c.command(plain("bob", "b0b"))).startsWith("235");
      assertThat(c.command("MAIL FROM:<bob@example.net>")).startsWith("451 4.7.1");
    }
    assertThat(gateway.downstream().messages()).hasSize(before + 3);
    String scrape = gateway.get("/metrics", null).body();
    assertThat(metric(scrape, "ledgerpost_auth_rate_limit_total{outcome=\"limited\"}")).isEqualTo(2.0);
  }
}
