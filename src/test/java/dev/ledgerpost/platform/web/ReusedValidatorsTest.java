package dev.ledgerpost.platform.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.json.schema.Draft;
import io.vertx.json.schema.JsonSchema;
import io.vertx.json.schema.JsonSchemaOptions;
import io.vertx.json.schema.OutputUnit;
import io.vertx.json.schema.SchemaRepository;
import io.vertx.json.schema.Validator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The request validator's schemas validated by one kept validator each, on any thread, as by a new one each time. */
class ReusedValidatorsTest {
  static final JsonObject SCHEMA = new JsonObject()
      .put("type", "object")
      .put("additionalProperties", false)
      .put("required", new JsonArray().add("to"))
      .put("properties", new JsonObject()
          .put("to", new JsonObject().put("type", "array").put("minItems", 1).put("items", new JsonObject().put("type", "string")))
          .put("subject", new JsonObject().put("type", "string").put("maxLength", 10)));

  @Test
  void oneValidatorPerSchemaGivesEveryThreadTheAnswerANewOneGives() throws Exception {
    SchemaRepository plain = SchemaRepository.create(new JsonSchemaOptions().setDraft(Draft.DRAFT202012)
        .setBaseUri("https://ledgerpost.test/"));
    JsonSchema schema = JsonSchema.of(SCHEMA);
    ReusedValidators.Repository reused = new ReusedValidators.Repository(plain);
    Validator kept = reused.validator(schema);
    assertThat(reused.validator(schema)).isSameAs(kept);
    assertThat(reused.validator(JsonSchema.of(SCHEMA.copy()))).isNotSameAs(kept);
    assertThat(reused.kept()).isEqualTo(2);

    List<Object> inputs = List.of(
        new JsonObject().put("to", new JsonArray().add("b@example.net")),
        new JsonObject().put("to", new JsonArray()),
        new JsonObject().put("to", new JsonArray().add("b@example.net")).put("subject", "far too long a subject"),
        new JsonObject().put("to", new JsonArray().add("b@example.net")).put("unknown", 1),
        new JsonObject().put("subject", "no to"));
    List<Boolean> expected = new ArrayList<>();
    for (Object in : inputs) {
      expected.add(plain.validator(schema).validate(in).getValid());
    }
    assertThat(expected).containsExactly(true, false, false, false, false);

    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<List<Boolean>>> runs = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        runs.add(pool.submit(() -> {
          List<Boolean> seen = new ArrayList<>();
          for (int i = 0; i < 500; i++) {
            OutputUnit out = reused.validator(schema).validate(inputs.get(i % inputs.size()));
            seen.add(out.getValid());
          }
          return seen;
        }));
      }
      for (Future<List<Boolean>> run : runs) {
        List<Boolean> seen = run.get(60, TimeUnit.SECONDS);
        for (int i = 0; i < seen.size(); i++) {
          assertThat(seen.get(i)).as("validation %d", i).isEqualTo(expected.get(i % inputs.size()));
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void schemasBeyondTheLimitAreValidatedWithoutBeingKept() {
    ReusedValidators.Repository reused = new ReusedValidators.Repository(SchemaRepository.create(
        new JsonSchemaOptions().setDraft(Draft.DRAFT202012).setBaseUri("https://ledgerpost.test/")));
    for (int i = 0; i < ReusedValidators.LIMIT + 10; i++) {
      assertThat(reused.validator(JsonSchema.of(new JsonObject().put("type", "string"))).validate("x").getValid()).isTrue();
    }
    assertThat(reused.kept()).isEqualTo(ReusedValidators.LIMIT);
  }
}
