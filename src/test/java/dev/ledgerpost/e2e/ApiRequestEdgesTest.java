package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Requests at the edges of the contract (issue 26, item 12): a trailing slash on an authenticated route, and a NUL
 * (U+0000, which PostgreSQL cannot store in text) in a JSON string or a parameter. Each is the client's mistake:
 * a 4xx problem, never a 500 or a "ledger unavailable" 503.
 */
class ApiRequestEdgesTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("chaos.enabled", true);
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  static String message;

  /** Every authenticated route of openapi.yaml (the hub's upgrade aside), with ids that exist where one is needed. */
  record Route(String method, String path, String body) {}

  @BeforeAll
  static void seed() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      message = InvariantCheck.ledgerId(c.sendMail("edges@example.com", List.of("x@example.net"), "Subject: e\r\n\r\nbody"));
    }
  }

  static List<Route> routes() {
    String proposal = "1"; // none exists: the route's own 404
    String delivery = "1";
    return List.of(
        new Route("GET", "/api/v1/messages", null),
        new Route("GET", "/api/v1/messages/stale", null),
        new Route("GET", "/api/v1/messages/" + message, null),
        new Route("POST", "/api/v1/messages/" + message + "/resolution",
            "{\"outcome\":\"DELIVERED\",\"operator\":\"op\",\"note\":\"seen\"}"),
        new Route("GET", "/api/v1/attention", null),
        new Route("GET", "/api/v1/attention/history", null),
        new Route("POST", "/api/v1/resolutions", "{}"),
        new Route("POST", "/api/v1/erasures", "{}"),
        new Route("GET", "/api/v1/reconcile/proposals", null),
        new Route("POST", "/api/v1/reconcile/proposals/" + proposal + "/accept", "{}"),
        new Route("POST", "/api/v1/reconcile/proposals/" + proposal + "/reject", "{}"),
        new Route("POST", "/api/v1/ledger/exports", "{}"),
        new Route("GET", "/api/v1/operations/" + message, null),
        new Route("POST", "/api/v1/chaos/locks", "{}"),
        new Route("GET", "/api/v1/webhooks", null),
        new Route("POST", "/api/v1/webhooks/app/enable", "{}"),
        new Route("GET", "/api/v1/webhooks/app/deliveries", null),
        new Route("GET", "/api/v1/webhooks/app/deliveries/" + delivery, null),
        new Route("POST", "/api/v1/webhooks/app/deliveries/" + delivery + "/retry", "{}"),
        new Route("POST", "/api/v1/webhooks/app/replay", "{}"));
  }

  static HttpResponse<String> call(String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
        .timeout(Duration.ofSeconds(10))
        .header("Authorization", "Bearer " + gateway.gateway().adminToken());
    if (body == null) {
      b.GET();
    } else {
      b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aTrailingSlashOnAnAuthenticatedRouteIsThatRouteOr404NeverA500() throws Exception {
    List<String> failures = new java.util.ArrayList<>();
    for (Route r : routes()) {
      // The route's own answer first (a resolution would change the message: the slashed one goes first there).
      HttpResponse<String> slashed = call(r.method(), r.path() + "/", r.body());
      HttpResponse<String> plain = call(r.method(), r.path(), r.body());
      System.out.println(r.method() + " " + r.path() + "/ -> " + slashed.statusCode() + " (without: " + plain.statusCode() + ") "
          + slashed.body());
      assertThat(slashed.headers().firstValue("Content-Type")).as("%s %s/", r.method(), r.path()).isPresent();
      if (slashed.statusCode() != 404 && slashed.statusCode() != plain.statusCode()) {
        failures.add(r.method() + " " + r.path() + "/ answered " + slashed.statusCode() + ": " + slashed.body());
      }
    }
    assertThat(failures).isEmpty();
  }

  @Test
  void aNulInsideAJsonStringOrAParameterIsA400ProblemNotLedgerUnavailable() throws Exception {
    UUID pending = UUID.randomUUID(); // a row the resolution may resolve: its note reaches the ledger's statement
    LedgerRows.insert(gateway.databaseUrl(), pending, "PENDING", "PENDING", Instant.now().minusSeconds(3600), "<nul@example.com>");
    String nul = "a\\u0000b"; // the JSON escape: a raw NUL byte is not JSON at all
    // Free text the ledger stores: refused as U+0000, naming where it is.
    Map<Route, String> texts = Map.of(
        new Route("POST", "/api/v1/messages/" + pending + "/resolution",
            "{\"outcome\":\"DELIVERED\",\"operator\":\"op\",\"note\":\"" + nul + "\"}"), "/note",
        new Route("POST", "/api/v1/resolutions", "{\"filter\":{\"status\":\"PENDING\"},\"expectedCount\":1,"
            + "\"outcome\":\"DELIVERED\",\"operator\":\"op\",\"note\":\"" + nul + "\"}"), "/note",
        new Route("POST", "/api/v1/resolutions", "{\"filter\":{\"sender\":\"" + nul + "\"},\"expectedCount\":1,"
            + "\"outcome\":\"DELIVERED\",\"operator\":\"op\",\"note\":\"n\"}"), "/filter/sender",
        new Route("POST", "/api/v1/erasures", "{\"address\":\"x@example.net\",\"operator\":\"op\",\"reason\":\"" + nul + "\"}"),
        "/reason",
        new Route("POST", "/api/v1/reconcile/proposals/1/reject", "{\"operator\":\"op\",\"note\":\"" + nul + "\"}"), "/note");
    // Refused already for what they are (not a mailbox, a parameter that cannot be decoded): still 400s.
    List<Route> others = List.of(
        new Route("POST", "/api/v1/erasures", "{\"address\":\"" + nul + "@example.net\",\"operator\":\"op\"}"),
        new Route("GET", "/api/v1/messages?sender=a%00b", null),
        new Route("GET", "/api/v1/messages?recipient=a%00b", null),
        new Route("GET", "/api/v1/messages?messageId=a%00b", null),
        new Route("GET", "/api/v1/attention?sender=a%00b", null));
    List<String> failures = new java.util.ArrayList<>();
    Map<Route, String> all = new java.util.LinkedHashMap<>(texts);
    others.forEach(r -> all.put(r, ""));
    for (Map.Entry<Route, String> e : all.entrySet()) {
      Route r = e.getKey();
      HttpResponse<String> answer = call(r.method(), r.path(), r.body());
      System.out.println(r.method() + " " + r.path() + " " + r.body() + " -> " + answer.statusCode() + " " + answer.body());
      String detail = answer.statusCode() == 400 ? new JsonObject(answer.body()).getString("detail", "") : "";
      boolean named = e.getValue().isEmpty() ? !detail.isBlank() : detail.startsWith(e.getValue() + ": ") && detail.contains("U+0000");
      if (!named || !answer.headers().firstValue("Content-Type").orElse("").equals("application/problem+json")) {
        failures.add(r.method() + " " + r.path() + " " + r.body() + " answered " + answer.statusCode() + ": " + answer.body());
      }
    }
    assertThat(failures).isEmpty();
    assertThat(LedgerRows.status(gateway.databaseUrl(), pending)).as("nothing was resolved").isEqualTo("PENDING");
  }
}
