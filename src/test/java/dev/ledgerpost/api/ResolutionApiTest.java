package dev.ledgerpost.api;

import dev.ledgerpost.relay.retry.RetryPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.relay.retry.KnownOutcome;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** POST /api/v1/messages/{id}/resolution: who may, what it writes, what it refuses and how. */
class ResolutionApiTest {
  static final String NOTE = "{\"outcome\": \"DELIVERED\", \"note\": \"recipient confirmed by phone\"}";

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension();

  String url() {
    return gateway.databaseUrl();
  }

  HttpResponse<String> resolve(Object id, String body, String... headers) throws Exception {
    return gateway.post("/api/v1/messages/" + id + "/resolution", body, headers);
  }

  @Test
  void anUnknownOutcomeIsResolvedWithItsRecipientsAuditRowAndOutboxEventInOneVersionedStep() throws Exception {
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url(), id, "UNKNOWN", "UNKNOWN", Instant.now(), "<unknown@example.com>");

    HttpResponse<String> r = resolve(id, "{\"outcome\": \"DELIVERED\", \"note\": \"in the recipient's inbox\", "
        + "\"operator\": \"carol\", \"version\": 1}");

    assertThat(r.statusCode()).isEqualTo(200);
    JsonObject body = new JsonObject(r.body());
    assertThat(body.getString("status")).isEqualTo("RESOLVED_DELIVERED");
    assertThat(body.getString("previousStatus")).isEqualTo("UNKNOWN");
    assertThat(body.getJsonObject("resolution").getString("operator")).isEqualTo("carol");
    assertThat(LedgerRows.string(url(), "SELECT status || ':' || version FROM messages WHERE id = '" + id + "'"))
        .isEqualTo("RESOLVED_DELIVERED:2");
    assertThat(LedgerRows.string(url(), "SELECT status FROM recipients WHERE message_id = '" + id + "'"))
        .isEqualTo("RESOLVED_DELIVERED");
    assertThat(LedgerRows.string(url(), "SELECT operator FROM resolutions WHERE message_id = '" + id + "'")).isEqualTo("carol");
    assertThat(LedgerRows.string(url(), "SELECT payload->>'previousStatus' FROM outbox WHERE event_id = '" + id + ":2' "
        + "AND type = 'message.resolved'")).isEqualTo("UNKNOWN");

    // The message detail and the operation status show who resolved it, how, why and when (docs/design.md §8.2).
    JsonObject resolution = new JsonObject(gateway.get("/api/v1/messages/" + id).body()).getJsonObject("resolution");
    assertThat(resolution.fieldNames()).containsExactlyInAnyOrder("outcome", "operator", "note", "at", "proposal");
    assertThat(resolution.getValue("proposal")).as("an operator's own resolution accepted no reconcile proposal").isNull();
    assertThat(resolution.getString("outcome")).isEqualTo("DELIVERED");
    assertThat(resolution.getString("operator")).isEqualTo("carol");
    assertThat(resolution.getString("note")).isEqualTo("in the recipient's inbox");
    assertThat(java.time.OffsetDateTime.parse(resolution.getString("at"))).isAfter(java.time.OffsetDateTime.now().minusMinutes(5));
    JsonObject op = new JsonObject(gateway.get("/api/v1/operations/" + id).body());
    assertThat(op.getJsonObject("message").getJsonObject("resolution")).isEqualTo(resolution);
  }

  @Test
  void aSettledMessageIsAConflictThatNamesItsCurrentStatus() throws Exception {
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url(), id, "SENT", "ACCEPTED", Instant.now(), null);
    HttpResponse<String> r = resolve(id, NOTE, "X-Operator", "alice");
    assertThat(r.statusCode()).isEqualTo(409);
    JsonObject problem = new JsonObject(r.body());
    assertThat(problem.getString("title")).isEqualTo("Conflict");
    assertThat(problem.getString("messageStatus")).isEqualTo("SENT");
    assertThat(problem.getInteger("messageVersion")).isEqualTo(1);
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM resolutions")).isZero();

    UUID pending = UUID.randomUUID();
    LedgerRows.insert(url(), pending, "PENDING", "PENDING", Instant.now(), null);
    HttpResponse<String> stale = resolve(pending, "{\"outcome\": \"DELIVERED\", \"note\": \"x\", \"version\": 5}",
        "X-Operator", "alice");
    assertThat(stale.statusCode()).as("the operator looked at another version").isEqualTo(409);
    assertThat(LedgerRows.status(url(), pending)).isEqualTo("PENDING");
  }

  @Test
  void badRequestsAreProblemsAndChangeNothing() throws Exception {
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url(), id, "PENDING", "PENDING", Instant.now(), null);
    String[][] cases = {
        {"{\"outcome\": \"MAYBE\", \"note\": \"x\"}", "outcome"},
        {"{\"note\": \"x\"}", "outcome"},
        {"{\"outcome\": \"DELIVERED\"}", "note"},
        {"{\"outcome\": \"DELIVERED\", \"note\": \"   \"}", "note"},
        {"{\"outcome\": \"DELIVERED\", \"note\": 7}", "note"},
        {"[1, 2]", "JSON object"},
        {"not json", "JSON object"},
        {"", "JSON object"},
        {"{\"outcome\": \"DELIVERED\", \"note\": \"x\", \"version\": \"one\"}", "version"},
    };
    for (String[] c : cases) {
      HttpResponse<String> r = resolve(id, c[0], "X-Operator", "alice");
      assertThat(r.statusCode()).as(c[0]).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(new JsonObject(r.body()).getString("detail")).as(c[0]).contains(c[1]);
    }
    assertThat(resolve(id, NOTE).statusCode()).as("no operator").isEqualTo(400);
    assertThat(resolve(id, "{\"outcome\": \"DELIVERED\", \"note\": \"x\", \"operator\": \"bob\"}", "X-Operator", "alice")
        .statusCode()).as("two different operators").isEqualTo(400);
    assertThat(resolve("not-a-uuid", NOTE, "X-Operator", "alice").statusCode()).isEqualTo(400);
    assertThat(resolve(UUID.randomUUID(), NOTE, "X-Operator", "alice").statusCode()).isEqualTo(404);

    HttpResponse<String> anonymous = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + gateway.httpPort() + "/api/v1/messages/" + id + "/resolution"))
        .POST(HttpRequest.BodyPublishers.ofString(NOTE)).header("X-Operator", "alice").build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(anonymous.statusCode()).isEqualTo(401);

    assertThat(LedgerRows.status(url(), id)).isEqualTo("PENDING");
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM resolutions")).isZero();
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM outbox")).isZero();
  }

  @Test
  void theRetryPartDropsAKnownOutcomeWhoseMessageWasResolvedMeanwhile() throws Exception {
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url(), id, "PENDING", "PENDING", Instant.now(), "<late@example.com>");
    assertThat(resolve(id, "{\"outcome\": \"NOT_DELIVERED\", \"note\": \"bounced\"}", "X-Operator", "alice").statusCode())
        .isEqualTo(200);

    try (LogCapture retry = LogCapture.of("dev.ledgerpost.relay.retry.RetryVerticle")) {
      KnownOutcome late = new KnownOutcome(new Settle(id, 1, MessageStatus.SENT, 1, 250, "2.0.0", "Ok", null),
          "<late@example.com>", true);
      gateway.gateway().part(RetryPart.class).keeper().handOver(late, false); // as the relay contract does when its settle fails
      // The count goes up just before the warning is logged, on the retry part's thread: wait for both.
      Poll.until(Duration.ofSeconds(10), "dropped and logged", () -> gateway.gateway().part(RetryPart.class).stats().dropped() == 1
          && !retry.warningsContaining("known outcome SENT of " + id, "dropped").isEmpty());
      assertThat(retry.warningsContaining("known outcome SENT of " + id, "dropped", "RESOLVED_NOT_DELIVERED")).hasSize(1);
    }
    assertThat(LedgerRows.string(url(), "SELECT status || ':' || version FROM messages WHERE id = '" + id + "'"))
        .isEqualTo("RESOLVED_NOT_DELIVERED:2");
    assertThat(gateway.gateway().part(RetryPart.class).stats().held()).isZero();
  }
}
