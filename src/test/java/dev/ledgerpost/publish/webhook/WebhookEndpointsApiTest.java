package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Webhook endpoints through the API (docs/design.md §6.6, issue 32): two users' send keys and the admin token against
 * a real gateway and PostgreSQL, real HTTP receivers, signatures checked with the Standard Webhooks library.
 */
class WebhookEndpointsApiTest {
  static final String ALICE = "alice-webhook-key";
  static final String BOB = "bob-webhook-key";
  static final String ADMIN = "test-admin-token";
  static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();
  final HttpClient http = HttpClient.newHttpClient();

  Map<String, Object> config(boolean open) {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("api.keysFile", SendClient.keysFile(Map.of(ALICE, "alice:1000", BOB, "bob:1000")).toString());
    o.put("webhooks.pollInterval", "50ms");
    o.put("webhooks.retrySchedule", "0s, 1h");
    o.put("notify.pollInterval", "100ms");
    o.put("webhooks.allowHttp", open);
    o.put("webhooks.allowPrivateNetworks", open);
    return o;
  }

  WebhookReceiver receive(WebhookReceiver.Script script) throws Exception {
    return gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(), script)));
  }

  HttpResponse<String> call(int port, String method, String path, String token, String json) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
        .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
    if (json != null) {
      b.header("Content-Type", "application/json");
    }
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> call(String method, String path, String token, String json) throws Exception {
    return call(gateway.httpPort(), method, path, token, json);
  }

  static JsonObject json(HttpResponse<String> r, int status) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    return new JsonObject(r.body());
  }

  /** Makes an endpoint with {@code token}; answers the 201's body (with its secret). */
  JsonObject create(String token, JsonObject body) throws Exception {
    return json(call("POST", "/api/v1/webhooks/endpoints", token, body.encode()), 201);
  }

  static JsonObject settledOnly(String url) {
    return new JsonObject().put("url", url).put("events", new JsonArray().add("message.settled"));
  }

  /** One message through the send API with {@code key}; answers its ledger id. */
  String send(String key) throws Exception {
    HttpResponse<String> r = gateway.sendClient().send(key, null, new JsonObject()
        .put("from", "app@example.com").put("to", new JsonArray().add("someone@example.net"))
        .put("subject", "hello").put("text", "Hello.\n"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getString("operationId");
  }

  @Test
  void eachUserManagesItsOwnEndpointsTheAdminSeesThemAllAndConfiguredOnesAreReadOnly() throws Exception {
    WebhookReceiver receiver = receive(r -> Answer.of(200));
    Map<String, Object> o = config(true);
    o.put("webhooks.maxEndpointsPerUser", 2);
    o.put("webhooks.endpoints", List.of(Map.of("name", "ops", "url", receiver.url("/ops"), "secret", WebhookDeliveryTest.secret(1))));
    gateway.begin(o);

    JsonObject made = create(ALICE, settledOnly(receiver.url("/alice")));
    String id = made.getString("id");
    assertThat(id).matches("ep_[0-9a-f]{24}");
    assertThat(made.getString("source")).isEqualTo("api");
    assertThat(made.getString("user")).isEqualTo("alice");
    assertThat(made.getString("secret")).startsWith("whsec_");
    assertThat(java.util.Base64.getDecoder().decode(made.getString("secret").substring(6))).hasSize(32);
    assertThat(made.getInteger("secrets")).isEqualTo(1);

    // The secret is shown once: no read holds it.
    HttpResponse<String> own = call("GET", "/api/v1/webhooks/endpoints/" + id, ALICE, null);
    assertThat(json(own, 200).containsKey("secret")).isFalse();
    assertThat(own.body()).doesNotContain("whsec_");
    HttpResponse<String> list = call("GET", "/api/v1/webhooks/endpoints", ALICE, null);
    JsonArray items = json(list, 200).getJsonArray("items");
    assertThat(items).hasSize(1);
    assertThat(items.getJsonObject(0).getString("id")).isEqualTo(id);
    assertThat(list.body()).doesNotContain("whsec_");
    assertThat(call("GET", "/api/v1/webhooks", ADMIN, null).body()).doesNotContain("whsec_");

    // Bob does not see, change, rotate, delete or read the deliveries of Alice's endpoint: it does not exist for him.
    assertThat(json(call("GET", "/api/v1/webhooks/endpoints", BOB, null), 200).getJsonArray("items")).isEmpty();
    for (String[] c : new String[][] {{"GET", "/api/v1/webhooks/endpoints/" + id, null},
        {"PATCH", "/api/v1/webhooks/endpoints/" + id, "{\"events\": [\"message.pending\"]}"},
        {"DELETE", "/api/v1/webhooks/endpoints/" + id, null},
        {"POST", "/api/v1/webhooks/endpoints/" + id + "/rotate-secret", null},
        {"GET", "/api/v1/webhooks/" + id + "/deliveries", null},
        {"POST", "/api/v1/webhooks/" + id + "/enable", null},
        {"POST", "/api/v1/webhooks/" + id + "/replay?since=0", null},
        {"GET", "/api/v1/webhooks/ops/deliveries", null}}) {
      SendClient.assertProblem(call(c[0], c[1], BOB, c[2]), 404, c[0] + " " + c[1]);
    }
    // Nor does anyone without a token, and a send key names no other user.
    SendClient.assertProblem(call("GET", "/api/v1/webhooks/endpoints", null, null), 401);
    SendClient.assertProblem(call("POST", "/api/v1/webhooks/endpoints", BOB,
        new JsonObject().put("url", receiver.url("/x")).put("user", "alice").encode()), 403);
    // The admin list of every endpoint with its state stays the admin's.
    assertThat(call("GET", "/api/v1/webhooks", ALICE, null).statusCode()).isEqualTo(401);

    // The admin sees every endpoint, the configured one marked so, and may not change that one through the API.
    JsonArray all = json(call("GET", "/api/v1/webhooks/endpoints", ADMIN, null), 200).getJsonArray("items");
    assertThat(all.stream().map(e -> ((JsonObject) e).getString("id") + "/" + ((JsonObject) e).getString("source")))
        .containsExactly("ops/config", id + "/api");
    SendClient.assertProblem(call("PATCH", "/api/v1/webhooks/endpoints/ops", ADMIN, "{\"url\": \"https://example.com/\"}"), 409);
    SendClient.assertProblem(call("DELETE", "/api/v1/webhooks/endpoints/ops", ADMIN, null), 409);
    SendClient.assertProblem(call("POST", "/api/v1/webhooks/endpoints/ops/rotate-secret", ADMIN, null), 409);
    SendClient.assertProblem(call("PATCH", "/api/v1/webhooks/endpoints/ops", ALICE, "{\"url\": \"https://example.com/\"}"), 404);
    assertThat(json(call("GET", "/api/v1/webhooks/endpoints/" + id, ADMIN, null), 200).getString("user")).isEqualTo("alice");
    // The admin makes an endpoint for a user it names.
    SendClient.assertProblem(call("POST", "/api/v1/webhooks/endpoints", ADMIN, settledOnly(receiver.url("/b")).encode()), 422);
    JsonObject forBob = create(ADMIN, settledOnly(receiver.url("/bob")).put("user", "bob"));
    assertThat(json(call("GET", "/api/v1/webhooks/endpoints/" + forBob.getString("id"), BOB, null), 200).getString("user"))
        .isEqualTo("bob");

    // Changes; at most webhooks.maxEndpointsPerUser each.
    JsonObject changed = json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE,
        "{\"events\": [\"message.settled\", \"message.stale\"]}"), 200);
    assertThat(changed.getJsonArray("events")).containsExactly("message.settled", "message.stale");
    SendClient.assertProblem(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, "{\"events\": [\"message.lost\"]}"), 400);
    create(ALICE, settledOnly(receiver.url("/alice2")));
    HttpResponse<String> third = call("POST", "/api/v1/webhooks/endpoints", ALICE, settledOnly(receiver.url("/alice3")).encode());
    SendClient.assertProblem(third, 422);
    assertThat(new JsonObject(third.body()).getString("detail")).contains("webhooks.maxEndpointsPerUser");

    assertThat(call("DELETE", "/api/v1/webhooks/endpoints/" + id, ALICE, null).statusCode()).isEqualTo(204);
    SendClient.assertProblem(call("GET", "/api/v1/webhooks/endpoints/" + id, ALICE, null), 404);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_endpoints WHERE name = '" + id + "'")).isZero();
  }

  @Test
  void urlsThatPointInsideOrAreNotHttpsAreRefusedSayingWhy() throws Exception {
    gateway.begin(config(false));
    Map<String, String> refused = Map.of(
        "http://example.com/hook", "must be https://",
        "https://127.0.0.1/hook", "a loopback address",
        "https://10.1.2.3/hook", "a private (RFC 1918) address",
        "https://192.168.1.1/hook", "a private (RFC 1918) address",
        "https://169.254.169.254/latest/meta-data", "a link-local address",
        "https://[::1]/hook", "a loopback address",
        "https://[fd00::1]/hook", "fc00::/7",
        "https://0.0.0.0/hook", "an unspecified address",
        "https://224.0.0.1/hook", "a multicast address",
        "https://localhost/hook", "resolved to 127.0.0.1, a loopback address");
    for (Map.Entry<String, String> e : refused.entrySet()) {
      HttpResponse<String> r = call("POST", "/api/v1/webhooks/endpoints", ALICE, new JsonObject().put("url", e.getKey()).encode());
      SendClient.assertProblem(r, 422, e.getKey());
      assertThat(new JsonObject(r.body()).getString("detail")).as(e.getKey()).contains(e.getValue());
    }
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_api_endpoints")).isZero();
    // A public address passes.
    assertThat(Destinations.kind(java.net.InetAddress.getByName("93.184.216.34"))).isNull();
  }

  @Test
  void aNameThatResolvesInsideAfterTheEndpointWasMadeIsRefusedOnConnection() throws Exception {
    WebhookReceiver receiver = receive(r -> Answer.of(200));
    Map<String, Object> o = config(false);
    o.put("webhooks.allowHttp", true); // the receiver is plain HTTP; private networks stay refused
    gateway.begin(o);
    // As if "localhost" had resolved outside when the endpoint was made: its row, written as the API writes it.
    String id = "ep_0123456789abcdef01234567";
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute("INSERT INTO webhook_endpoints (name, recorded_through) SELECT '" + id + "', last_pub_seq FROM outbox_publisher");
      st.execute("INSERT INTO webhook_api_endpoints (id, owner, url, events, secret, version) VALUES ('" + id + "', 'alice', '"
          + "http://localhost:" + receiver.port() + "/inside', ARRAY['message.settled'], '" + WebhookDeliveryTest.secret(3)
          + "', nextval('webhook_api_endpoints_version'))");
    }
    Poll.until(WAIT, "the endpoint picked up", () -> call("GET", "/api/v1/webhooks", ADMIN, null).body().contains(id));
    send(ALICE);
    JsonObject d = awaitDelivery(id, ALICE, x -> x.getInteger("attempts") == 1 && !x.getBoolean("inFlight"));
    assertThat(d.getString("state")).isEqualTo("ATTEMPTED");
    assertThat(d.getString("lastError")).contains("'localhost' is resolved to 127.0.0.1, a loopback address: refused");
    assertThat(receiver.requests()).isEmpty();
  }

  @Test
  void deliversOnlyItsOwnersEventsSignedRotatesWithBothKeysDuringTheGraceAndFollowsNoRedirect() throws Exception {
    // A minute behind the real time: after the 301 s jump past the rotation's grace the gateway signs with a timestamp
    // ~240 s ahead, inside the reference library's 300 s tolerance. Started at now, a run quicker than a second put it
    // past the tolerance ("Message timestamp too new").
    MutableClock clock = new MutableClock(Instant.now().minusSeconds(60));
    WebhookReceiver receiver = receive(r -> r.path().equals("/moved")
        ? Answer.of(302, Map.of("Location", "http://169.254.169.254/latest/meta-data")) : Answer.of(200));
    Map<String, Object> o = config(true);
    o.put("webhooks.rotationGrace", "5m");
    gateway.begin(o, clock);
    JsonObject made = create(ALICE, settledOnly(receiver.url("/alice")));
    String id = made.getString("id");
    String first = made.getString("secret");

    String mine = send(ALICE);
    send(BOB);
    Poll.until(WAIT, "Alice's event", () -> receiver.requests().size() == 1);
    WebhookReceiver.Request r1 = receiver.requests().get(0);
    assertThat(r1.id()).isEqualTo(mine + ":2");
    WebhookReceiver.verify(first, r1);
    JsonObject d1 = awaitDelivery(id, ALICE, d -> "DELIVERED".equals(d.getString("state")));
    assertThat(d1.getString("eventId")).isEqualTo(mine + ":2");
    assertThat(json(call("GET", "/api/v1/webhooks/" + id + "/deliveries/" + d1.getLong("id"), ALICE, null), 200)
        .getJsonArray("attemptList")).hasSize(1);
    assertThat(json(call("POST", "/api/v1/webhooks/" + id + "/deliveries/" + d1.getLong("id") + "/retry", ALICE, null), 202)
        .getString("eventId")).isEqualTo(mine + ":2");
    Poll.until(WAIT, "the retried event", () -> receiver.requests().size() == 2);
    // The owner replays its endpoint's range, and may re-enable it; recorded events of Bob's are not in it.
    JsonObject replayed = json(call("POST", "/api/v1/webhooks/" + id + "/replay?since=0", ALICE, null), 202);
    assertThat(replayed.getInteger("recorded") + replayed.getInteger("rearmed")).isEqualTo(1);
    Poll.until(WAIT, "the replayed event", () -> receiver.requests().size() == 3);
    assertThat(receiver.requests().get(2).id()).isEqualTo(mine + ":2");
    assertThat(json(call("POST", "/api/v1/webhooks/" + id + "/enable", ALICE, null), 200).getString("state")).isEqualTo("ENABLED");

    // Rotation: the new secret once; both sign for the grace; then only the new one.
    JsonObject rotated = json(call("POST", "/api/v1/webhooks/endpoints/" + id + "/rotate-secret", ALICE, null), 200);
    String second = rotated.getString("secret");
    assertThat(second).startsWith("whsec_").isNotEqualTo(first);
    assertThat(rotated.getInteger("secrets")).isEqualTo(2);
    assertThat(rotated.getString("previousSecretUntil")).isNotNull();
    HttpResponse<String> read = call("GET", "/api/v1/webhooks/endpoints/" + id, ALICE, null);
    assertThat(read.body()).doesNotContain("whsec_");
    assertThat(json(read, 200).getInteger("secrets")).isEqualTo(2);
    send(ALICE);
    Poll.until(WAIT, "an event after the rotation", () -> receiver.requests().size() == 4);
    WebhookReceiver.Request r3 = receiver.requests().get(3);
    assertThat(r3.signature().split(" ")).hasSize(2);
    WebhookReceiver.verify(first, r3);
    WebhookReceiver.verify(second, r3);

    clock.advance(Duration.ofSeconds(301));
    Poll.until(WAIT, "one secret after the grace",
        () -> json(call("GET", "/api/v1/webhooks/endpoints/" + id, ALICE, null), 200).getInteger("secrets") == 1);
    send(ALICE);
    Poll.until(WAIT, "an event after the grace", () -> receiver.requests().size() == 5);
    WebhookReceiver.Request r4 = receiver.requests().get(4);
    assertThat(r4.signature().split(" ")).hasSize(1);
    WebhookReceiver.verify(second, r4);
    assertThatThrownBy(() -> WebhookReceiver.verify(first, r4)).isNotNull();

    // A name: the gateway resolves it, connects to the address it checked, and sends the name as Host.
    json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE,
        new JsonObject().put("url", "http://localhost:" + receiver.port() + "/named").encode()), 200);
    String named = send(ALICE);
    Poll.until(WAIT, "the event at the named URL", () -> receiver.requests().stream().anyMatch(r -> r.id().equals(named + ":2")));
    WebhookReceiver.Request r5 = receiver.requests().stream().filter(r -> r.id().equals(named + ":2")).findFirst().orElseThrow();
    assertThat(r5.path()).isEqualTo("/named");
    assertThat(r5.headers().get("host")).containsExactly("localhost:" + receiver.port());

    // A 3xx is a failed attempt: the Location is never followed.
    json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, new JsonObject().put("url", receiver.url("/moved")).encode()), 200);
    String moved = send(ALICE);
    JsonObject d5 = awaitDelivery(id, ALICE, d -> d.getString("eventId").equals(moved + ":2") && d.getInteger("attempts") == 1
        && !d.getBoolean("inFlight"));
    assertThat(d5.getString("state")).isEqualTo("ATTEMPTED");
    assertThat(d5.getInteger("lastStatus")).isEqualTo(302);
    assertThat(d5.getString("lastError")).as("says why, and where it pointed")
        .isEqualTo("HTTP 302 redirect to host 169.254.169.254 not followed: a webhook is sent to its endpoint's URL only");
    assertThat(receiver.requests().stream().map(WebhookReceiver.Request::path)).contains("/moved");
  }

  @Test
  void anEndpointMadeChangedOrDeletedThroughOneNodeIsPickedUpByAnotherWithoutARestart() throws Exception {
    WebhookReceiver receiver = receive(r -> Answer.of(200));
    Map<String, Object> a = config(true);
    a.put("node.id", "a");
    gateway.begin(a);
    Map<String, Object> b = config(true);
    b.put("ledger.url", gateway.databaseUrl());
    b.put("api.keysFile", a.get("api.keysFile"));
    b.put("node.id", "b");
    Vertx vertxB = Vertx.vertx(); // a bus of its own: two gateways in one Vert.x would share their addresses
    GatewayHarness other = GatewayHarness.start(vertxB, b);
    try {
      String id = json(call(other.httpPort(), "POST", "/api/v1/webhooks/endpoints", ALICE,
          settledOnly(receiver.url("/one")).encode()), 201).getString("id");
      // Node a's list reads its own workers, which only its poll changes.
      Poll.until(WAIT, "node a delivering to the new endpoint", () -> adminList().contains(receiver.url("/one")));
      json(call(other.httpPort(), "PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE,
          new JsonObject().put("url", receiver.url("/two")).encode()), 200);
      Poll.until(WAIT, "node a to the changed URL", () -> adminList().contains(receiver.url("/two")));
      String gone = json(call(other.httpPort(), "POST", "/api/v1/webhooks/endpoints", ALICE,
          settledOnly(receiver.url("/three")).encode()), 201).getString("id");
      Poll.until(WAIT, "node a with the third", () -> adminList().contains(gone));
      assertThat(call(other.httpPort(), "DELETE", "/api/v1/webhooks/endpoints/" + gone, ALICE, null).statusCode()).isEqualTo(204);
      Poll.until(WAIT, "node a without the deleted one", () -> !adminList().contains(gone));
    } finally {
      other.close();
      GatewayHarness.await(vertxB.close());
    }
    // Node b is gone: what arrives now, node a sent.
    String sent = send(ALICE);
    Poll.until(WAIT, "the event at the changed URL", () -> receiver.requests().stream().anyMatch(r -> r.path().equals("/two")));
    assertThat(receiver.requests()).allMatch(r -> r.path().equals("/two") && r.id().equals(sent + ":2"));
    Poll.until(WAIT, "the attempt recorded", () -> LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_attempts") == 1);
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT node_id FROM webhook_attempts")).isEqualTo("a");
  }

  String adminList() throws Exception {
    return json(call("GET", "/api/v1/webhooks", ADMIN, null), 200).encode();
  }

  JsonObject awaitDelivery(String endpoint, String key, java.util.function.Predicate<JsonObject> condition) throws Exception {
    JsonObject[] found = new JsonObject[1];
    Poll.until(WAIT, "a delivery of " + endpoint, () -> {
      for (Object o : json(call("GET", "/api/v1/webhooks/" + endpoint + "/deliveries", key, null), 200).getJsonArray("items")) {
        if (condition.test((JsonObject) o)) {
          found[0] = (JsonObject) o;
          return true;
        }
      }
      return false;
    });
    return found[0];
  }
}
