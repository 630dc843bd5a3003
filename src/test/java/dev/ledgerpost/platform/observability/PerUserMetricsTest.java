package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The opt-in per-user counters on a live gateway (metrics.perUser, issue 31): with a cap of 2, the first two users seen
 * get their own label and every later one (an SMTP user, a send API key's user) is counted under {@code #other}; mail
 * without a user is not counted per user; a quota refusal at the open is counted for its user. With the default
 * configuration no series has a {@code user} label.
 */
class PerUserMetricsTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final String PASSWORD = "per-user-metrics-password";
  static final String KEY = "per-user-metrics-key";
  static final Pattern SERIES = Pattern.compile("(?m)^(ledgerpost_user_[a-z_]+)\\{([^}]*)\\} (\\S+)$");

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  /** Alice, bob, carol over SMTP; dave through the send API; bob may send one message an hour. */
  private void start(Map<String, Object> more) throws Exception {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("auth.usersFile", Credentials.htpasswd(Map.of("alice", PASSWORD, "bob", PASSWORD, "carol", PASSWORD)).toString());
    o.put("smtp.allowInsecureAuth", true);
    o.put("api.keysFile", SendClient.keysFile(Map.of(KEY, "dave:1000")).toString());
    o.put("tenants.file", Credentials.write("tenants-", "tenants.yaml", "users:\n  bob:\n    messagesPerHour: 1\n").toString());
    // The node's copy of the counts is read at start only (empty): bob's second message passes MAIL and the open's
    // own count refuses it, the refusal this test counts.
    o.put("tenants.refreshInterval", "1h");
    o.putAll(more);
    // Ten minutes into an hour, frozen: bob's hourly window cannot end while the test runs.
    gateway.begin(o, new MutableClock(Instant.now().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofMinutes(10))));
  }

  /** Six messages: alice 2, bob 1 (and 1 refused for his quota), carol 1, dave 1 through the API, 1 without a user. */
  private void sendAll() throws Exception {
    try (SmtpTestClient c = authenticated("alice")) {
      assertThat(mail(c, "alice@example.com")).startsWith("250");
      assertThat(mail(c, "alice@example.com")).startsWith("250");
    }
    try (SmtpTestClient c = authenticated("bob")) {
      assertThat(mail(c, "bob@example.com")).startsWith("250");
      assertThat(mail(c, "bob@example.com")).startsWith("451 4.7.1 Quota messagesPerHour of 1 used up for bob");
    }
    try (SmtpTestClient c = authenticated("carol")) {
      assertThat(mail(c, "carol@example.com")).startsWith("250");
    }
    HttpResponse<String> sent = gateway.sendClient().send(KEY, null, new JsonObject().put("from", "app@example.com")
        .put("to", new JsonArray().add("rcpt@example.net")).put("subject", "per user").put("text", "hello"));
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) { // loopback: a relay network, no AUTH
      c.reply();
      assertThat(c.sendMail("relay@example.com", List.of("rcpt@example.net"), "Subject: no user\r\n\r\nbody")).startsWith("250");
    }
  }

  @Test
  void withACapOfTwoTheFirstTwoUsersHaveTheirOwnLabelAndTheOthersShareOne() throws Exception {
    start(Map.of("metrics.perUser", true, "metrics.perUserMax", 2));
    sendAll();

    Map<String, Double> expected = new TreeMap<>(Map.of(
        "ledgerpost_user_messages_total{outcome=\"accepted\",user=\"alice\"}", 2.0,
        "ledgerpost_user_messages_total{outcome=\"accepted\",user=\"bob\"}", 1.0,
        "ledgerpost_user_messages_total{outcome=\"over_quota\",user=\"bob\"}", 1.0,
        "ledgerpost_user_messages_total{outcome=\"accepted\",user=\"#other\"}", 2.0,
        "ledgerpost_user_quota_refusals_total{user=\"bob\"}", 1.0));
    // The counters are incremented as the outcome is known, beside the reply: the scrape may be a moment behind it.
    String[] scrape = new String[1];
    Poll.until(WAIT, "the per-user counters reach their values", () -> {
      scrape[0] = scrape();
      return nonZero(scrape[0]).equals(expected);
    });
    Map<String, Double> series = series(scrape[0]);
    assertThat(nonZero(scrape[0])).isEqualTo(expected);
    // Every other series of those users is there at zero; no other user has a label.
    assertThat(series).containsEntry("ledgerpost_user_quota_refusals_total{user=\"alice\"}", 0.0)
        .containsEntry("ledgerpost_user_quota_refusals_total{user=\"#other\"}", 0.0)
        .containsEntry("ledgerpost_user_messages_total{outcome=\"deferred\",user=\"alice\"}", 0.0);
    Set<String> users = new TreeSet<>();
    Matcher m = Pattern.compile("[{,]user=\"([^\"]*)\"").matcher(scrape[0]);
    while (m.find()) {
      users.add(m.group(1));
    }
    assertThat(users).containsExactlyInAnyOrder("alice", "bob", "#other");
    assertThat(series).hasSize(3 * 10); // 9 outcomes and a refusal counter per label
    // The node-wide counter has every message, the one without a user too.
    assertThat(scrape[0]).contains("ledgerpost_delivery_outcomes_total{outcome=\"accepted\"} 6.0");
    assertThat(scrape[0]).contains("ledgerpost_delivery_outcomes_total{outcome=\"over_quota\"} 1.0");
  }

  @Test
  void byDefaultNoSeriesHasAUserLabel() throws Exception {
    start(Map.of());
    sendAll();

    String[] scrape = new String[1];
    Poll.until(WAIT, "the node-wide counters have the six messages", () -> {
      scrape[0] = scrape();
      return scrape[0].contains("ledgerpost_delivery_outcomes_total{outcome=\"accepted\"} 6.0")
          && scrape[0].contains("ledgerpost_delivery_outcomes_total{outcome=\"over_quota\"} 1.0");
    });
    assertThat(scrape[0]).doesNotContainPattern("[{,]user=\"").doesNotContain("ledgerpost_user_");
  }

  private String scrape() throws Exception {
    HttpResponse<String> r = gateway.get("/metrics", null);
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }

  /** The per-user series of a scrape, name and labels as written, to their values. */
  private static Map<String, Double> series(String scrape) {
    Map<String, Double> out = new TreeMap<>();
    Matcher m = SERIES.matcher(scrape);
    while (m.find()) {
      out.put(m.group(1) + "{" + m.group(2) + "}", Double.parseDouble(m.group(3)));
    }
    return out;
  }

  private static Map<String, Double> nonZero(String scrape) {
    Map<String, Double> out = series(scrape);
    out.values().removeIf(v -> v == 0.0);
    return out;
  }

  private SmtpTestClient authenticated(String user) throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    c.reply();
    assertThat(c.command("EHLO client.test")).startsWith("250");
    String plain = Base64.getEncoder().encodeToString(("\0" + user + "\0" + PASSWORD).getBytes(StandardCharsets.UTF_8));
    assertThat(c.command("AUTH PLAIN " + plain)).startsWith("235");
    return c;
  }

  /** One message on an authenticated session; the final dot's reply. */
  private static String mail(SmtpTestClient c, String from) throws Exception {
    assertThat(c.command("MAIL FROM:<" + from + ">")).startsWith("250");
    assertThat(c.command("RCPT TO:<rcpt@example.net>")).startsWith("250");
    assertThat(c.command("DATA")).startsWith("354");
    c.send("Subject: per user\r\n\r\nbody\r\n.\r\n");
    return c.reply();
  }
}
