package dev.ledgerpost.platform.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

/** The NUL check of a request body: the byte scan that spares every ordinary body the walk, and the walk. */
class ContractValidationNulTest {
  @Test
  void onlyABodyWithTheEscapeOfNulIsWalkedAndTheWalkNamesWhereItIs() {
    String clean = "{\"note\": \"caf\\u00e9 \\\\u0000 is text here\", \"to\": [\"a@example.net\"]}";
    String nul = "{\"to\": [\"a@example.net\", \"b\\u0000@example.net\"]}";
    assertThat(ContractValidation.mayHoldNul(Buffer.buffer("{\"note\": \"plain\"}"))).isFalse();
    assertThat(ContractValidation.mayHoldNul(Buffer.buffer(nul))).isTrue();
    assertThat(ContractValidation.mayHoldNul(Buffer.buffer("\\u0000"))).as("at the very end").isTrue();
    assertThat(ContractValidation.mayHoldNul(Buffer.buffer("\\u000"))).isFalse();

    assertThat(ContractValidation.mayHoldNul(Buffer.buffer(clean))).as("an escaped backslash, then u0000").isTrue();
    assertThat(ContractValidation.nulAt(new JsonObject(clean), "")).as("the walk tells it is text").isNull();
    assertThat(ContractValidation.nulAt(new JsonObject(nul), "")).isEqualTo("/to/1");
  }
}
