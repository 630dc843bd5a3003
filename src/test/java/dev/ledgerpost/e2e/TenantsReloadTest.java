package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The tenants file on a real gateway process (docs/design.md §8.9): a malformed file at start is one line and exit
 * status 2; a quota raised in the file applies at once on SIGHUP; a malformed file on SIGHUP keeps the previous one in
 * force, with one ERROR line.
 */
class TenantsReloadTest {
  private static final String KEY = "tenants-reload-test-key-of-shop";

  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();

  @Test
  void aMalformedTenantsFileAtStartIsOneLineAndExitStatus2() throws Exception {
    Path dir = GatewayHarness.tempDir("bad-tenants-");
    Files.writeString(dir.resolve("tenants.yaml"), "users:\n  shop:\n    messagesPerHour: lots\n");
    try (ChildGateway child = ChildGateway.start(dir, config(dir), null)) {
      assertThat(child.awaitExit(Duration.ofSeconds(120))).as(String.join("\n", child.lines())).isEqualTo(2);
      assertThat(child.log("tenants.file " + dir.resolve("tenants.yaml") + " line 3",
          "users.shop.messagesPerHour: 'lots' is not a whole number")).hasSize(1);
      assertThat(child.log("messagesPerHour")).as("one line").hasSize(1);
      assertThat(child.log("\tat ")).as("no stack trace").isEmpty();
    }
  }

  @Test
  void aRaisedQuotaAppliesOnSighupAndAMalformedFileKeepsThePreviousOne() throws Exception {
    Path dir = GatewayHarness.tempDir("reload-tenants-");
    Path tenants = dir.resolve("tenants.yaml");
    Files.writeString(tenants, "users:\n  shop:\n    messagesPerHour: 1\n");
    try (ChildGateway child = ChildGateway.start(dir, config(dir), null).awaitReady(Duration.ofSeconds(120))) {
      SendClient client = new SendClient(child.httpPort());
      assertThat(status(client.send(KEY, null, message()))).isEqualTo(200);
      HttpResponse<String> refused = client.send(KEY, null, message());
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
      assertThat(new JsonObject(refused.body()).getString("quota")).isEqualTo("messagesPerHour");

      Files.writeString(tenants, "users:\n  shop:\n    messagesPerHour: 3\n");
      child.signal("HUP");
      Poll.until(Duration.ofSeconds(30), "the reload logged", () -> !child.log("reloaded tenants.file " + tenants).isEmpty());
      assertThat(status(client.send(KEY, null, message()))).as("the raised limit applies at once").isEqualTo(200);

      Files.writeString(tenants, "users:\n  shop:\n    messagesPerHour: 1\n    messagesPerHour: 2\n");
      child.signal("HUP");
      Poll.until(Duration.ofSeconds(30), "the failed reload logged", () -> !child.log("tenants.file " + tenants
          + " not reloaded").isEmpty());
      assertThat(child.log("ERROR", "tenants.file " + tenants + " not reloaded, still using the previous content"))
          .hasSize(1);
      assertThat(status(client.send(KEY, null, message()))).as("3 an hour still").isEqualTo(200);
      assertThat(status(client.send(KEY, null, message()))).isEqualTo(429);
      assertThat(child.log("shutting down")).as("SIGHUP is not a stop").isEmpty();
    }
  }

  private static int status(HttpResponse<String> r) {
    return r.statusCode();
  }

  private static String config(Path dir) throws Exception {
    Files.writeString(dir.resolve("api-keys"), "shop:" + SendClient.sha256(KEY) + "\n");
    return ChildGateway.config(dir, harness.downstream().port(), TestDatabase.newDatabase())
        + "  keysFile: api-keys\ntenants:\n  file: tenants.yaml\n  refreshInterval: 100ms\n";
  }

  private static JsonObject message() {
    return new JsonObject().put("from", "shop@example.com").put("to", new JsonArray().add("bob@example.net"))
        .put("subject", "tenants").put("text", "hello");
  }
}
