package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tracking's events to a webhook endpoint (docs/design.md §6.6, §8.13): an endpoint that asks for recipient.bounced
 * gets one signed call per bounce fact, with its category, rule and reply, and none for the deliveries.
 */
class TrackingWebhookTest {
  static final Path LOG = GatewayHarness.tempDir("tracking-webhook-").resolve("mail.log");
  WebhookReceiver receiver;

  @RegisterExtension
  final GatewayHarness gateway = TrackingWebhookGateway.extension(LOG, "C0FFEE0", "bounces", 4, List.of("recipient.bounced"),
      r -> receiver = r);

  private static String line(String to, String dsn, String status, String detail) {
    String at = DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(Instant.now().truncatedTo(ChronoUnit.MICROS).atOffset(ZoneOffset.UTC));
    return at + " smarthost postfix/smtp[7]: C0FFEE01: to=<" + to + ">, relay=mx.example.net[192.0.2.1]:25, delay=1, dsn=" + dsn
        + ", status=" + status + " (" + detail + ")\n";
  }

  @Test
  void anEndpointAskingForBouncesGetsEachBounceWithItsCategory() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("s@example.com", List.of("a@example.net", "b@example.net"), "Subject: w\r\n\r\nbody")).startsWith("250");
    }
    Files.writeString(LOG, line("a@example.net", "2.0.0", "sent", "250 2.0.0 Ok")
        + line("b@example.net", "5.2.2", "bounced", "host mx.example.net[192.0.2.1] said: 552 5.2.2 Mailbox full"),
        StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    String url = gateway.databaseUrl();
    Poll.until(Duration.ofSeconds(30), "both facts", () -> LedgerRows.count(url, "SELECT count(*) FROM delivery_facts") == 2);
    Poll.until(Duration.ofSeconds(30), "the bounce's webhook call", () -> !receiver.requests().isEmpty());
    Poll.until(Duration.ofSeconds(30), "every delivery of the endpoint ended", () -> LedgerRows.count(url,
        "SELECT count(*) FROM webhook_deliveries WHERE state NOT IN ('DELIVERED', 'FAILED')") == 0);

    assertThat(receiver.requests()).hasSize(1);
    WebhookReceiver.Request r = receiver.requests().get(0);
    WebhookReceiver.verify(WebhookDeliveryTest.secret(4), r);
    JsonObject body = new JsonObject(r.body());
    assertThat(body.getString("type")).isEqualTo("recipient.bounced");
    JsonObject data = body.getJsonObject("data");
    assertThat(data.getString("recipient")).isEqualTo("b@example.net");
    assertThat(data.getString("category")).isEqualTo("mailbox_full");
    assertThat(data.getString("rule")).isEqualTo("mailbox-full-codes");
    assertThat(data.getString("dsn")).isEqualTo("5.2.2");
    assertThat(data.getString("reply")).isEqualTo("host mx.example.net[192.0.2.1] said: 552 5.2.2 Mailbox full");
    assertThat(data.getString("queueId")).isEqualTo("C0FFEE01");
  }
}
