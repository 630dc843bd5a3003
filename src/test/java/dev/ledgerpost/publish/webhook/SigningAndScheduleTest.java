package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.standardwebhooks.Webhook;
import com.standardwebhooks.exceptions.WebhookVerificationException;
import dev.ledgerpost.platform.auth.WebhookSecrets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The signature as the Standard Webhooks reference library checks it; the retry schedule's bounds. */
class SigningAndScheduleTest {
  static final String A = WebhookDeliveryTest.secret(7);
  static final String B = WebhookDeliveryTest.secret(8);

  static Map<String, List<String>> headers(String id, long ts, String signature) {
    return Map.of("webhook-id", List.of(id), "webhook-timestamp", List.of(Long.toString(ts)),
        "webhook-signature", List.of(signature));
  }

  @Test
  void theReferenceLibraryVerifiesTheSignatureWithEverySecretThatSigned() throws Exception {
    Signer signer = new Signer(() -> List.of(WebhookSecrets.decode(A), WebhookSecrets.decode(B)));
    String body = "{\"type\":\"message.settled\",\"data\":{\"id\":\"x\",\"note\":\"grüße\"}}";
    long ts = Instant.now().getEpochSecond();
    String signature = signer.sign("msg:2", ts, body);
    assertThat(signature.split(" ")).hasSize(2);
    new Webhook(A).verify(body, headers("msg:2", ts, signature));
    new Webhook(B).verify(body, headers("msg:2", ts, signature));
    assertThat(signature.split(" ")[0]).isEqualTo(new Webhook(A).sign("msg:2", ts, body));
    // Anything changed fails: the body, the id, the timestamp, or another key.
    assertThatThrownBy(() -> new Webhook(A).verify(body + " ", headers("msg:2", ts, signature)))
        .isInstanceOf(WebhookVerificationException.class);
    assertThatThrownBy(() -> new Webhook(A).verify(body, headers("msg:3", ts, signature)))
        .isInstanceOf(WebhookVerificationException.class);
    assertThatThrownBy(() -> new Webhook(A).verify(body, headers("msg:2", ts + 1, signature)))
        .isInstanceOf(WebhookVerificationException.class);
    assertThatThrownBy(() -> new Webhook(WebhookDeliveryTest.secret(9)).verify(body, headers("msg:2", ts, signature)))
        .isInstanceOf(WebhookVerificationException.class);
  }

  @Test
  void secretsMustBeTheSpecificationsForm() {
    assertThat(WebhookSecrets.decode(A)).hasSize(32);
    assertThatThrownBy(() -> WebhookSecrets.decode("c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0")).hasMessageContaining("whsec_");
    assertThatThrownBy(() -> WebhookSecrets.decode("whsec_not*base64")).hasMessageContaining("not base64");
    assertThatThrownBy(() -> WebhookSecrets.decode("whsec_c2hvcnQ=")).hasMessageContaining("5 bytes");
    assertThat(WebhookSecrets.urlProblem("https://app.example.com/hooks")).isNull();
    assertThat(WebhookSecrets.urlProblem("ftp://app.example.com/hooks")).contains("http");
    assertThat(WebhookSecrets.urlProblem("https://user:pw@app.example.com/hooks")).contains("credentials");
    assertThat(WebhookSecrets.urlProblem("/hooks")).contains("http");
  }

  @Test
  void attemptsComeNoEarlierThanTheScheduleAndAtMostTenPercentLater() {
    Schedule s = new Schedule(List.of(Duration.ZERO, Duration.ofSeconds(5), Duration.ofMinutes(5)));
    Instant now = Instant.parse("2026-01-01T00:00:00Z");
    assertThat(s.firstDue(now)).isEqualTo(now);
    for (int i = 0; i < 1000; i++) {
      assertThat(s.next(1, now, null)).isBetween(now.plusSeconds(5), now.plusMillis(5500));
      assertThat(s.next(2, now, null)).isBetween(now.plusSeconds(300), now.plusSeconds(330));
    }
    assertThat(s.next(3, now, null)).as("after the last attempt: FAILED").isNull();
    // Retry-After pushes an attempt later, never earlier, and at most a day.
    assertThat(s.next(1, now, Duration.ofSeconds(120))).isEqualTo(now.plusSeconds(120));
    assertThat(s.next(2, now, Duration.ofSeconds(1))).isAfterOrEqualTo(now.plusSeconds(300));
    assertThat(s.next(1, now, Duration.ofDays(30))).isEqualTo(now.plus(Duration.ofHours(24)));
  }

  @Test
  void retryAfterIsReadOn429And503Only() {
    assertThat(Sender.retryAfter(429, "120")).isEqualTo(Duration.ofSeconds(120));
    assertThat(Sender.retryAfter(503, " 7 ")).isEqualTo(Duration.ofSeconds(7));
    assertThat(Sender.retryAfter(500, "120")).isNull();
    assertThat(Sender.retryAfter(429, "soon")).isNull();
    assertThat(Sender.retryAfter(429, "Wed, 21 Oct 2015 07:28:00 GMT")).isEqualTo(Duration.ZERO); // a date in the past
    String inAMinute = java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(
        java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC).plusSeconds(60));
    assertThat(Sender.retryAfter(503, inAMinute)).isBetween(Duration.ofSeconds(55), Duration.ofSeconds(60));
  }
}
