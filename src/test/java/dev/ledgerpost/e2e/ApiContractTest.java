package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SendClient;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.yaml.snakeyaml.Yaml;

/** openapi.yaml describes every endpoint, and the server enforces it on the admin endpoints too. */
class ApiContractTest {
  static SendClient client;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().afterStart(g -> client = g.sendClient());

  @Test
  @SuppressWarnings("unchecked")
  void theDocumentDescribesEveryEndpoint() throws Exception {
    Map<String, Object> doc = new Yaml().load(Files.readString(Path.of("openapi.yaml")));
    assertThat(doc.get("openapi")).isEqualTo("3.1.0");
    Map<String, Map<String, Object>> paths = (Map<String, Map<String, Object>>) doc.get("paths");
    assertThat(paths.get("/api/v1/messages")).containsKeys("get", "post");
    assertThat(paths.get("/api/v1/messages/{id}")).containsKey("get");
    assertThat(paths.get("/api/v1/messages/stale")).containsKey("get");
    assertThat(paths.get("/api/v1/messages/{id}/resolution")).containsKey("post");
    assertThat(paths.get("/api/v1/operations/{id}")).containsKey("get");
    assertThat(paths.get("/api/v1/events")).containsKey("get");
    assertThat(paths.get("/health/live")).containsKey("get");
    assertThat(paths.get("/health/ready")).containsKey("get");
    assertThat(paths.get("/metrics")).containsKey("get");
    assertThat(paths.get("/api/v1/chaos/locks")).containsKey("post");
    assertThat(paths.get("/api/v1/reconcile/proposals")).containsKey("get");
    assertThat(paths.get("/api/v1/reconcile/proposals/{id}/accept")).containsKey("post");
    assertThat(paths.get("/api/v1/reconcile/proposals/{id}/reject")).containsKey("post");
    assertThat(paths.get("/api/v1/webhooks")).containsKey("get");
    assertThat(paths.get("/api/v1/webhooks/{name}/enable")).containsKey("post");
    assertThat(paths.get("/api/v1/webhooks/{name}/deliveries")).containsKey("get");
    assertThat(paths.get("/api/v1/webhooks/{name}/deliveries/{id}")).containsKey("get");
    assertThat(paths.get("/api/v1/webhooks/{name}/deliveries/{id}/retry")).containsKey("post");
    assertThat(paths.get("/api/v1/webhooks/{name}/replay")).containsKey("post");
    assertThat(paths.get("/api/v1/webhooks/endpoints")).containsKeys("get", "post");
    assertThat(paths.get("/api/v1/webhooks/endpoints/{id}")).containsKeys("get", "patch", "delete");
    assertThat(paths.get("/api/v1/webhooks/endpoints/{id}/rotate-secret")).containsKey("post");
  }

  @Test
  void adminRequestsAreValidatedAgainstTheDocument() throws Exception {
    String token = gateway.gateway().adminToken();
    HttpResponse<String> limit = client.get("/api/v1/messages?limit=abc", token);
    SendClient.assertProblem(limit, 400);
    assertThat(new JsonObject(limit.body()).getString("detail")).contains("openapi.yaml");
    // A mistyped ledger id is said so, wherever one is taken, not as the pattern's "String does not match pattern".
    for (String path : new String[] {"/api/v1/messages/not-a-uuid", "/api/v1/operations/not-a-uuid",
        "/api/v1/reconcile/proposals?message=not-a-uuid"}) {
      HttpResponse<String> id = client.get(path, token);
      SendClient.assertProblem(id, 400);
      assertThat(new JsonObject(id.body()).getString("detail")).as(path)
          .isEqualTo("not a ledger id: not-a-uuid (a ledger id is a UUID such as " + LedgerIds.EXAMPLE
              + ", as in the 250 reply's \"queued as\" or `ledgerpost messages list`)");
    }
    HttpResponse<String> badId = client.post("/api/v1/messages/0193a5c2-7c1e-7d4a-9b1e/resolution", token,
        "{\"outcome\": \"DELIVERED\", \"note\": \"seen in the smarthost log\"}");
    SendClient.assertProblem(badId, 400);
    assertThat(new JsonObject(badId.body()).getString("detail")).startsWith("not a ledger id: 0193a5c2-7c1e-7d4a-9b1e (");
    HttpResponse<String> resolution = client.post("/api/v1/messages/" + UUID.randomUUID() + "/resolution", token,
        "{\"outcome\": \"DELIVERED\", \"note\": \"seen in the smarthost log\", \"ticket\": 7}");
    SendClient.assertProblem(resolution, 400);
    assertThat(new JsonObject(resolution.body()).getString("detail")).contains("/ticket: unknown member");
    // Authentication comes first: an anonymous caller learns nothing about the shape of requests.
    assertThat(client.get("/api/v1/messages?limit=abc", null).statusCode()).isEqualTo(401);
    assertThat(client.get("/api/v1/messages?limit=5", token).statusCode()).isEqualTo(200);
  }
}
