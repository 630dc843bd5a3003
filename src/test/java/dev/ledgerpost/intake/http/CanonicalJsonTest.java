package dev.ledgerpost.intake.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class CanonicalJsonTest {
  @Test
  void memberOrderAndWhitespaceDoNotChangeTheHash() {
    JsonObject a = new JsonObject("{\"to\": [\"b@x\"], \"from\": \"a@x\", \"headers\": {\"X-B\": \"2\", \"X-A\": \"1\"}}");
    JsonObject b = new JsonObject("{\"headers\":{\"X-A\":\"1\",\"X-B\":\"2\"},\"from\":\"a@x\",\"to\":[\"b@x\"]}");
    assertThat(CanonicalJson.sha256(a)).isEqualTo(CanonicalJson.sha256(b)).hasSize(64);
  }

  @Test
  void anyChangeOfContentChangesTheHash() {
    JsonObject a = new JsonObject("{\"to\": [\"b@x\", \"c@x\"], \"from\": \"a@x\"}");
    assertThat(CanonicalJson.sha256(a)).isNotEqualTo(CanonicalJson.sha256(new JsonObject("{\"to\": [\"c@x\", \"b@x\"], \"from\": \"a@x\"}")));
    assertThat(CanonicalJson.sha256(a)).isNotEqualTo(CanonicalJson.sha256(new JsonObject("{\"to\": [\"b@x\", \"c@x\"], \"from\": \"A@x\"}")));
  }
}
