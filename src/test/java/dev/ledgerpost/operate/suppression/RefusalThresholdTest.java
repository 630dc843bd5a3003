package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * suppression.refusalThreshold 2 within suppression.refusalWindow 1h (docs/design.md §8.8): two 5.1.1 refusals of an
 * address an hour and more apart (the gateway's clock moved) add nothing; a second within the window adds the entry.
 */
class RefusalThresholdTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  static final MutableClock CLOCK = new MutableClock(Instant.now());

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("suppression.refreshInterval", "200ms")
      .with("suppression.refusalThreshold", 2)
      .with("suppression.refusalWindow", "1h")
      .script(g -> new RefusalsTest.Smarthost())
      .clock(CLOCK);

  @Test
  void twoRefusalsWithinTheWindowSuppressTwoFurtherApartDoNot() throws Exception {
    refuse("twice@bad.example");
    recorded("twice@bad.example", 1);
    CLOCK.advance(Duration.ofMinutes(61)); // out of the window
    refuse("twice@bad.example");
    recorded("twice@bad.example", 2);
    // The feed runs after the batch is written: a third refusal within the window, once written, has been counted too,
    // so its entry is the proof that the two apart were counted and found below the threshold.
    assertThat(entries("twice@bad.example")).as("one refusal within the hour is below the threshold").isEmpty();
    refuse("other@bad.example");
    recorded("other@bad.example", 1);
    assertThat(entries("twice@bad.example")).isEmpty();

    CLOCK.advance(Duration.ofMinutes(30)); // the second refusal is 30 minutes old: within the window
    refuse("twice@bad.example");
    recorded("twice@bad.example", 3);
    Poll.until(WAIT, "the second refusal within the window adds the entry", () -> !entries("twice@bad.example").isEmpty());
    JsonObject entry = entries("twice@bad.example").getJsonObject(0);
    assertThat(entry.getString("reason")).startsWith("refused by the smarthost 2 times within 1h (refusal ");
    assertThat(entry.getString("source")).isEqualTo("refusal");
    try (SmtpTestClient c = RefusalsTest.client(gateway)) {
      RefusalsTest.expect(c.command("MAIL FROM:<app@example.com>"), "250");
      RefusalsTest.expect(c.command("RCPT TO:<twice@bad.example>"), "550 5.1.1 <twice@bad.example> suppressed since");
    }
    assertThat(entries("other@bad.example")).as("one refusal, threshold 2").isEmpty();
  }

  private static void refuse(String address) throws Exception {
    try (SmtpTestClient c = RefusalsTest.client(gateway)) {
      RefusalsTest.expect(c.command("MAIL FROM:<app@example.com>"), "250");
      RefusalsTest.expect(c.command("RCPT TO:<" + address + ">"), "550 5.1.1 <" + address + ">: Recipient address rejected");
    }
  }

  private static void recorded(String address, long n) throws Exception {
    Poll.until(WAIT, n + " refusal(s) of " + address + " recorded", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM recipient_refusals WHERE recipient = '" + address + "'") == n);
  }

  private static JsonArray entries(String address) throws Exception {
    HttpResponse<String> r = gateway.get("/api/v1/suppressions?address=" + address.replace("@", "%40"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getJsonArray("entries");
  }
}
