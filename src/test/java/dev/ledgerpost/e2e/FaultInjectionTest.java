package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Fault injection for captured users end to end (docs/design.md §8.11): rules from the tenants file answer what they
 * say, at the probability they say (seeded: the exact count of the documented sequence), over SMTP and the send API;
 * a delay delays; a bad rule, or rules on a user whose mail is not captured, stop the start with one line each.
 *
 * <p>Until capture itself is in, mail that passes the faults is relayed: these tests assert the faults' replies, and
 * that a refused message reaches nobody.
 */
class FaultInjectionTest {
  static final long SEED = 20261204L;
  static final String TEMP_KEY = "fault-test-temp";
  static final String PERM_KEY = "fault-test-perm";
  static final String SLOW_KEY = "fault-test-slow";

  static final String TENANTS = """
      users:
        sandbox:
          capture: true
          faultSeed: %d
          faults:
            - {at: MAIL, probability: 0, reply: "550 5.7.1 never"}
            - {at: RCPT, probability: 0.25, reply: "451 4.3.0 try again"}
        slow:
          capture: true
          faults: [{at: MAIL, probability: 1, delay: 1500ms}]
        bodyfault:
          capture: true
          faults: [{at: DATA, probability: 1, reply: "452 4.3.1 injected: insufficient storage"}]
        apitemp:
          capture: true
          faults: [{at: MAIL, probability: 1, reply: "451 4.3.0 injected: try later"}]
        apiperm:
          capture: true
          faults: [{at: RCPT, probability: 1, reply: "550 5.1.1 injected: no such user"}]
        reloaded:
          capture: true
          faults: [{at: MAIL, probability: 1, reply: "451 4.3.0 before the reload"}]
        apislow:
          capture: true
          faults:
            - {at: RCPT, probability: 1, delay: 700ms}
            - {at: DATA, probability: 1, delay: 600ms}
      """.formatted(SEED);

  static final Path TENANTS_FILE = Credentials.write("tenants-", "tenants.yaml", TENANTS);

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("tenants.file", TENANTS_FILE.toString())
      .with("auth.usersFile", Credentials.htpasswd(Map.of("sandbox", "pw", "slow", "pw", "bodyfault", "pw", "reloaded", "pw"))
          .toString())
      .with("smtp.allowInsecureAuth", true)
      .with("smtp.maxRecipients", 500)
      .with("api.keysFile", SendClient.keysFile(Map.of(TEMP_KEY, "apitemp:1000", PERM_KEY, "apiperm:1000",
          SLOW_KEY, "apislow:1000")).toString());

  private static SmtpTestClient as(String user) throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    assertThat(c.reply()).startsWith("220");
    assertThat(c.command("EHLO client.test")).startsWith("250");
    assertThat(c.command("AUTH PLAIN " + Base64.getEncoder().encodeToString(("\0" + user + "\0pw")
        .getBytes(StandardCharsets.UTF_8)))).startsWith("235");
    return c;
  }

  @Test
  void aSeededRcptRuleAnswersAtItsProbabilityExactlyAsTheSeedSays() throws Exception {
    int injected = 0;
    int accepted = 0;
    try (LogCapture log = LogCapture.of("dev.ledgerpost.platform.tenants.FaultInjector");
        SmtpTestClient c = as("sandbox")) {
      // A MAIL rule at probability 0 never fires (and takes one draw of the sequence, as documented).
      assertThat(c.command("MAIL FROM:<app@example.com>")).startsWith("250");
      for (int i = 0; i < 200; i++) {
        String reply = c.command("RCPT TO:<r" + i + "@example.net>");
        if (reply.equals("451 4.3.0 try again")) {
          injected++;
        } else {
          assertThat(reply).startsWith("250 2.1.5");
          accepted++;
        }
      }
      assertThat(c.command("RSET")).startsWith("250");
      assertThat(log.linesContaining("fault injected for captured user 'sandbox' at RCPT over SMTP: 451 4.3.0 try again"))
          .hasSize(injected);
    }
    // The documented sequence: java.util.Random(faultSeed).nextDouble(), one draw per rule tried (MAIL's first).
    Random sequence = new Random(SEED);
    sequence.nextDouble();
    int expected = 0;
    for (int i = 0; i < 200; i++) {
      expected += sequence.nextDouble() < 0.25 ? 1 : 0;
    }
    assertThat(injected).isEqualTo(expected).isBetween(30, 70);
    assertThat(accepted).isEqualTo(200 - injected);
    assertThat(metric("ledgerpost_faults_injected_total{kind=\"reply\",stage=\"rcpt\"}")).isEqualTo(injected);
  }

  @Test
  void aDelayRuleHoldsTheReplyAtLeastItsDelayAndTheMailThenGoesThrough() throws Exception {
    try (SmtpTestClient c = as("slow")) {
      long t0 = System.nanoTime();
      assertThat(c.command("MAIL FROM:<app@example.com>")).startsWith("250");
      long millis = (System.nanoTime() - t0) / 1_000_000;
      assertThat(millis).as("the MAIL reply waited for the rule's delay").isGreaterThanOrEqualTo(1500);
      assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: slow\r\n\r\nbody\r\n.\r\n");
      assertThat(c.reply()).startsWith("250 2.0.0");
    }
    assertThat(metric("ledgerpost_faults_injected_total{kind=\"delay\",stage=\"mail\"}")).isGreaterThanOrEqualTo(1.0);
  }

  @Test
  void aDataRuleRefusesTheMessageAtItsEndAndNothingReachesTheSmarthost() throws Exception {
    int before = gateway.downstream().messages().size();
    try (SmtpTestClient c = as("bodyfault")) {
      assertThat(c.command("MAIL FROM:<app@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: refused\r\n\r\nbody\r\n.\r\n");
      assertThat(c.reply()).isEqualTo("452 4.3.1 injected: insufficient storage");
      // The session goes on: the client may try again at once (and meets the rule again: probability 1).
      assertThat(c.command("NOOP")).startsWith("250");
      c.send("MAIL FROM:<app@example.com>\r\nRCPT TO:<b@example.net>\r\nDATA\r\n");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.reply()).startsWith("354");
      c.send("Subject: refused\r\n\r\nbody\r\n.\r\n");
      assertThat(c.reply()).isEqualTo("452 4.3.1 injected: insufficient storage");
    }
    assertThat(gateway.downstream().messages()).hasSize(before);
  }

  @Test
  void overTheSendApiA4yzIs503WithRetryAfterAndA5yzIs422NamingTheFault() throws Exception {
    int before = gateway.downstream().messages().size();
    HttpResponse<String> temp = gateway.sendClient().send(TEMP_KEY, "fault-key-1", send("b@example.net"));
    assertThat(temp.statusCode()).as(temp.body()).isEqualTo(503);
    assertThat(temp.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(temp.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
    JsonObject problem = new JsonObject(temp.body());
    assertThat(problem.getJsonObject("injectedFault")).isEqualTo(new JsonObject()
        .put("at", "MAIL").put("reply", "451 4.3.0 injected: try later"));
    assertThat(problem.getString("detail")).contains("fault injected by the gateway").contains("nothing was sent");

    HttpResponse<String> perm = gateway.sendClient().send(PERM_KEY, null, send("a@example.net", "b@example.net"));
    assertThat(perm.statusCode()).as(perm.body()).isEqualTo(422);
    assertThat(perm.headers().firstValue("Retry-After")).isEmpty();
    assertThat(new JsonObject(perm.body()).getJsonObject("injectedFault")).isEqualTo(new JsonObject()
        .put("at", "RCPT").put("reply", "550 5.1.1 injected: no such user"));
    assertThat(gateway.downstream().messages()).hasSize(before);

    // The 503's key was never claimed: the same key with another body is no reuse (a claimed key would answer 422).
    HttpResponse<String> again = gateway.sendClient().send(TEMP_KEY, "fault-key-1", send("c@example.net"));
    assertThat(again.statusCode()).as(again.body()).isEqualTo(503);
    assertThat(new JsonObject(again.body()).containsKey("injectedFault")).isTrue();
  }

  @Test
  void overTheSendApiTheDelaysOfEveryStageAddUpAndTheSendIsThenCaptured() throws Exception {
    int before = gateway.downstream().messages().size();
    long t0 = System.nanoTime();
    // Two recipients: RCPT's delay twice, then DATA's: 700 + 700 + 600 ms.
    HttpResponse<String> slow = gateway.sendClient().send(SLOW_KEY, null, send("a@example.net", "b@example.net"));
    long millis = (System.nanoTime() - t0) / 1_000_000;
    assertThat(slow.statusCode()).as(slow.body()).isEqualTo(200);
    assertThat(new JsonObject(slow.body()).getString("status")).as("a fault-ruled user is captured").isEqualTo("CAPTURED");
    assertThat(millis).as("the answer waited for every delay").isGreaterThanOrEqualTo(2000);
    assertThat(gateway.downstream().messages()).as("captured mail is never relayed").hasSize(before);
  }

  @Test
  void aReloadTakesNewRulesAndABadFileKeepsThePreviousOnes() throws Exception {
    try (SmtpTestClient c = as("reloaded")) {
      assertThat(c.command("MAIL FROM:<app@example.com>")).isEqualTo("451 4.3.0 before the reload");
      try {
        Files.writeString(TENANTS_FILE, TENANTS.replace("before the reload", "after the reload"));
        assertThat(gateway.gateway().reloadCredentials()).isZero();
        assertThat(c.command("MAIL FROM:<app@example.com>")).isEqualTo("451 4.3.0 after the reload");

        // Rules on mail that is relayed: refused, and the rules in force stay.
        Files.writeString(TENANTS_FILE, TENANTS.replace("""
              reloaded:
                capture: true
            """, """
              reloaded:
                capture: false
            """));
        assertThat(gateway.gateway().reloadCredentials()).isEqualTo(1);
        assertThat(c.command("MAIL FROM:<app@example.com>")).isEqualTo("451 4.3.0 after the reload");
      } finally {
        Files.writeString(TENANTS_FILE, TENANTS);
        assertThat(gateway.gateway().reloadCredentials()).isZero();
      }
    }
  }

  @Test
  void aMalformedRuleStopsTheStartWithOneLineNamingItsLine() throws Exception {
    Path bad = Credentials.write("tenants-bad-", "tenants.yaml", """
        users:
          sandbox:
            capture: true
            faults:
              - {at: RCPT, probability: 0.2, reply: "451 try again"}
        """);
    assertThat(startFailure(bad)).containsExactly("tenants.file " + bad + " line 5: users.sandbox.faults[0].reply: "
        + "'451 try again' is not an SMTP reply with an enhanced status code (e.g. \"451 4.3.0 try again\", "
        + "\"550 5.1.1 no such user\"; 4yz or 5yz)");
  }

  @Test
  void rulesOnAUserWhoseMailIsNotCapturedStopTheStart() throws Exception {
    Path relayed = Credentials.write("tenants-relayed-", "tenants.yaml", """
        users:
          shop:
            messagesPerHour: 100
            faults: [{at: RCPT, probability: 0.1, reply: "451 4.3.0 x"}]
        """);
    assertThat(startFailure(relayed)).containsExactly("tenants.file " + relayed + " line 4: users.shop.faults: fault rules "
        + "need capture: true (faults are injected into captured mail only, never into mail that is relayed)");
  }

  /** The problems a gateway with this tenants file fails to start with. */
  private static List<String> startFailure(Path tenants) {
    Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("tenants.file", tenants.toString());
    java.util.concurrent.atomic.AtomicReference<List<String>> problems = new java.util.concurrent.atomic.AtomicReference<>();
    assertThatThrownBy(() -> GatewayHarness.start(gateway.vertx(), config).close())
        .satisfies(e -> {
          Throwable t = e;
          while (t != null && !(t instanceof ConfigException)) {
            t = t.getCause();
          }
          assertThat(t).as("a configuration error: %s", e).isInstanceOf(ConfigException.class);
          problems.set(((ConfigException) t).problems());
        });
    return problems.get();
  }

  private static JsonObject send(String... to) {
    return new JsonObject().put("from", "app@example.com").put("to", new JsonArray(List.of((Object[]) to)))
        .put("subject", "s").put("text", "body\n");
  }

  private static double metric(String nameAndLabels) throws Exception {
    String scrape = gateway.get("/metrics", null).body();
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(nameAndLabels) + " (\\S+)$").matcher(scrape);
    assertThat(m.find()).as(nameAndLabels + " in\n" + scrape).isTrue();
    return Double.parseDouble(m.group(1));
  }
}
