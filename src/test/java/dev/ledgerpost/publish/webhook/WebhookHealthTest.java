package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Endpoint health (docs/design.md §6.6, issue 32): a receiver that fails every request exhausts its deliveries (one
 * {@code message.attempt.exhausted} event each, to the owner's other endpoint and the hub, never to itself), is disabled
 * once it has failed for {@code webhooks.disableAfter} on a moved clock ({@code endpoint.disabled}), and enabling it
 * again replays nothing unless asked; a rate limit holds a burst back and delivers all of it.
 */
class WebhookHealthTest {
  static final String ALICE = "alice-health-key";
  static final String BOB = "bob-health-key";
  static final String ALICE_EVENTS = "alice-events-token";
  static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();
  final HttpClient http = HttpClient.newHttpClient();

  Map<String, Object> config() {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("api.keysFile", SendClient.keysFile(Map.of(ALICE, "alice:1000", BOB, "bob:1000")).toString());
    o.put("notify.tokensFile", Credentials.eventTokens(Map.of("alice", ALICE_EVENTS)).toString());
    o.put("webhooks.pollInterval", "50ms");
    o.put("webhooks.retrySchedule", "0s, 100ms");
    o.put("notify.pollInterval", "100ms");
    o.put("webhooks.allowHttp", true);
    o.put("webhooks.allowPrivateNetworks", true);
    return o;
  }

  WebhookReceiver receive(WebhookReceiver.Script script) throws Exception {
    return gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(), script)));
  }

  HttpResponse<String> call(String method, String path, String token, String json) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
        .timeout(Duration.ofSeconds(30))
        .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
    if (json != null) {
      b.header("Content-Type", "application/json");
    }
    b.header("Authorization", "Bearer " + token);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonObject json(HttpResponse<String> r, int status) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    return new JsonObject(r.body());
  }

  JsonObject create(String token, String url, JsonObject extra) throws Exception {
    JsonObject body = new JsonObject().put("url", url).mergeIn(extra);
    return json(call("POST", "/api/v1/webhooks/endpoints", token, body.encode()), 201);
  }

  JsonObject endpoint(String id) throws Exception {
    return json(call("GET", "/api/v1/webhooks/endpoints/" + id, ALICE, null), 200);
  }

  /** One message through the send API with {@code key}; answers its ledger id. */
  String send(String key) throws Exception {
    HttpResponse<String> r = gateway.sendClient().send(key, null, new JsonObject()
        .put("from", "app@example.com").put("to", new JsonArray().add("someone@example.net"))
        .put("subject", "hello").put("text", "Hello.\n"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getString("operationId");
  }

  long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  /** The bodies the receiver got on {@code path}, as JSON. */
  static List<JsonObject> bodies(WebhookReceiver receiver, String path) {
    List<JsonObject> out = new ArrayList<>();
    for (WebhookReceiver.Request r : receiver.requests()) {
      if (r.path().equals(path)) {
        out.add(new JsonObject(r.body()));
      }
    }
    return out;
  }

  static long ofType(List<JsonObject> bodies, String type) {
    return bodies.stream().filter(b -> type.equals(b.getString("type"))).count();
  }

  /** The next hub event of {@code type}, skipping others. */
  static JsonObject awaitEvent(WsTestClient ws, String type) throws Exception {
    Instant deadline = Instant.now().plus(WAIT);
    while (Instant.now().isBefore(deadline)) {
      JsonObject f = ws.nextEvent(WAIT);
      if ("event".equals(f.getString("type")) && type.equals(f.getString("event"))) {
        return f;
      }
    }
    throw new AssertionError("no " + type + " event on the hub within " + WAIT);
  }

  /** Waits for two claim passes of {@code endpoint} that began after now: whatever was due has been claimed. */
  void twoClaimPasses(String endpoint) throws Exception {
    WebhookVerticle v = gateway.gateway().part(WebhookPart.class).verticle();
    long passes = v.passes(endpoint);
    Poll.until(WAIT, "two claim passes of " + endpoint, () -> v.passes(endpoint) >= passes + 2);
  }

  @Test
  void aFailingEndpointIsExhaustedOnceThenDisabledAfterDisableAfterAndEnablingItReplaysNothingUnlessAsked() throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    WebhookReceiver receiver = receive(r -> Answer.of(r.path().equals("/bad") ? 500 : 200));
    gateway.begin(config(), clock);
    String bad = create(ALICE, receiver.url("/bad"),
        new JsonObject().put("events", new JsonArray().add("message.settled"))).getString("id");
    String ops = create(ALICE, receiver.url("/ops"), new JsonObject()
        .put("events", new JsonArray().add("message.attempt.exhausted").add("endpoint.disabled"))).getString("id");
    create(BOB, receiver.url("/bob"), new JsonObject()); // every event type, of Bob's messages only

    String second;
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, ALICE_EVENTS)) {
      String first = send(ALICE);
      Poll.until(WAIT, "the first attempt recorded", () -> count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = '"
          + bad + "' AND attempts = 1 AND state = 'ATTEMPTED' AND lease_until IS NULL") == 1);
      clock.advance(Duration.ofSeconds(1)); // the schedule's second delay (100 ms) is on the gateway's clock
      Poll.until(WAIT, "the delivery FAILED after its two attempts", () -> count("SELECT count(*) FROM webhook_deliveries "
          + "WHERE endpoint = '" + bad + "' AND state = 'FAILED' AND attempts = 2") == 1);

      // Its event: to the owner's other endpoint, and to the owner on the hub.
      Poll.until(WAIT, "the exhausted event at the owner's other endpoint",
          () -> ofType(bodies(receiver, "/ops"), "message.attempt.exhausted") == 1);
      JsonObject exhausted = bodies(receiver, "/ops").get(0);
      JsonObject data = exhausted.getJsonObject("data");
      assertThat(data.getString("endpoint")).isEqualTo(bad);
      assertThat(data.getString("eventId")).isEqualTo(first + ":2");
      assertThat(data.getString("eventType")).isEqualTo("message.settled");
      assertThat(data.getString("messageId")).isEqualTo(first);
      assertThat(data.getInteger("attempts")).isEqualTo(2);
      assertThat(data.getInteger("lastStatus")).isEqualTo(500);
      assertThat(data.getString("owner")).isEqualTo("alice");
      JsonObject onHub = awaitEvent(ws, "message.attempt.exhausted");
      assertThat(onHub.getJsonObject("data").getString("endpoint")).isEqualTo(bad);
      assertThat(onHub.getString("messageId")).isEqualTo(first);

      // Once: more claim passes write no second event, and the failing endpoint never got its own.
      twoClaimPasses(bad);
      assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.attempt.exhausted'")).isEqualTo(1);
      assertThat(bodies(receiver, "/bad")).hasSize(2).allMatch(b -> b.getString("type").equals("message.settled"));
      assertThat(receiver.requests()).noneMatch(r -> r.path().equals("/bob"));

      // Its health: two failures in a row, since the first, and their errors, newest first.
      JsonObject health = endpoint(bad).getJsonObject("health");
      assertThat(health.getInteger("consecutiveFailures")).isEqualTo(2);
      assertThat(health.getString("failingSince")).isNotNull();
      JsonArray errors = health.getJsonArray("lastErrors");
      assertThat(errors).hasSize(2);
      assertThat(errors.getJsonObject(0).getInteger("status")).isEqualTo(500);
      assertThat(errors.getJsonObject(0).getString("error")).startsWith("HTTP 500");
      assertThat(errors.getJsonObject(0).getString("eventId")).isEqualTo(first + ":2");
      assertThat(endpoint(bad).getString("state")).isEqualTo("ENABLED");
      assertThat(endpoint(ops).getJsonObject("health").getInteger("consecutiveFailures")).isZero();

      // Five days later every attempt has still failed: the next failure disables it, with its event.
      clock.advance(Duration.ofDays(5).plusMinutes(1));
      second = send(ALICE);
      Poll.until(WAIT, "the endpoint disabled", () -> endpoint(bad).getString("state").equals("DISABLED"));
      JsonObject disabled = endpoint(bad);
      assertThat(disabled.getJsonObject("health").getString("disabledKind")).isEqualTo("failing");
      assertThat(disabled.getString("disabledReason")).contains("every attempt failed since");
      Poll.until(WAIT, "the disabled event at the owner's other endpoint",
          () -> ofType(bodies(receiver, "/ops"), "endpoint.disabled") == 1);
      JsonObject event = bodies(receiver, "/ops").stream().filter(b -> b.getString("type").equals("endpoint.disabled"))
          .findFirst().orElseThrow().getJsonObject("data");
      assertThat(event.getString("endpoint")).isEqualTo(bad);
      assertThat(event.getString("kind")).isEqualTo("failing");
      assertThat(event.getInteger("consecutiveFailures")).isEqualTo(3);
      assertThat(awaitEvent(ws, "endpoint.disabled").getJsonObject("data").getString("endpoint")).isEqualTo(bad);
      // Its open delivery ended FAILED (not exhausted: no second exhausted event), and nothing more goes to it.
      Poll.until(WAIT, "the second message's delivery ended", () -> count("SELECT count(*) FROM webhook_deliveries WHERE "
          + "event_id = '" + second + ":2' AND state = 'FAILED' AND last_error LIKE 'not sent: the endpoint was disabled%'") == 1);
      assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.attempt.exhausted'")).isEqualTo(1);
      assertThat(count("SELECT count(*) FROM outbox WHERE type = 'endpoint.disabled'")).isEqualTo(1);
    }
    int before = bodies(receiver, "/bad").size();
    String third = send(ALICE); // while it is disabled: not recorded for it
    Poll.until(WAIT, "the third message settled and published", () -> count("SELECT count(*) FROM outbox_events WHERE "
        + "event_id = '" + third + ":2' AND pub_seq IS NOT NULL") == 1);
    clock.advance(Duration.ofMinutes(1));
    twoClaimPasses(bad);
    assertThat(bodies(receiver, "/bad")).hasSize(before);
    assertThat(count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = '" + bad + "'")).isEqualTo(2);

    // Enabled again by its owner: nothing is replayed; the answer says what it missed.
    receiver.script(r -> Answer.of(200));
    JsonObject enabled = json(call("PATCH", "/api/v1/webhooks/endpoints/" + bad, ALICE, "{\"enabled\": true}"), 200);
    assertThat(enabled.getString("state")).isEqualTo("ENABLED");
    assertThat(enabled.getJsonObject("health").getInteger("consecutiveFailures")).isZero();
    assertThat(enabled.getJsonObject("health").getValue("failingSince")).isNull();
    JsonObject skipped = enabled.getJsonObject("skipped");
    long thirdSeq = count("SELECT pub_seq FROM outbox_events WHERE event_id = '" + third + ":2'");
    assertThat(thirdSeq).isGreaterThan(skipped.getLong("since")).isLessThanOrEqualTo(skipped.getLong("until"));
    clock.advance(Duration.ofMinutes(1));
    twoClaimPasses(bad);
    twoClaimPasses(bad);
    assertThat(bodies(receiver, "/bad")).as("enabling replays nothing").hasSize(before);
    assertThat(count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = '" + bad + "' AND state = 'FAILED'")).isEqualTo(2);

    // New events go to it again; the missed range goes when asked.
    String fourth = send(ALICE);
    Poll.until(WAIT, "the fourth message delivered", () -> receiver.requests().stream()
        .anyMatch(r -> r.path().equals("/bad") && r.id().equals(fourth + ":2")));
    JsonObject replayed = json(call("POST", "/api/v1/webhooks/" + bad + "/replay?since=" + skipped.getLong("since")
        + "&until=" + skipped.getLong("until"), ALICE, null), 202);
    assertThat(replayed.getInteger("recorded")).isEqualTo(1);
    Poll.until(WAIT, "the third message delivered on the replay", () -> receiver.requests().stream()
        .anyMatch(r -> r.path().equals("/bad") && r.id().equals(third + ":2")));
    assertThat(receiver.requests().stream().filter(r -> r.path().equals("/bad") && r.id().equals(second + ":2")))
        .as("the delivery the disabling ended is not sent again unless asked").hasSize(1);
    assertThat(receiver.requests()).noneMatch(r -> r.path().equals("/bob"));
  }

  @Test
  void theRateLimitHoldsABurstBackAndDeliversAllOfIt() throws Exception {
    WebhookReceiver receiver = receive(r -> Answer.of(200));
    gateway.begin(config());
    JsonObject made = create(ALICE, receiver.url("/limited"), new JsonObject()
        .put("events", new JsonArray().add("message.settled")).put("rateLimit", 5));
    String id = made.getString("id");
    assertThat(made.getInteger("rateLimit")).isEqualTo(5);
    assertThat(made.getJsonObject("health").getInteger("rateLimit")).isEqualTo(5);

    int burst = 20;
    for (int i = 0; i < burst; i++) {
      send(ALICE);
    }
    Poll.until(WAIT, "the whole burst DELIVERED", () -> count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = '"
        + id + "' AND state = 'DELIVERED'") == burst);
    // Held back, never failed: one attempt each.
    assertThat(count("SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE "
        + "d.endpoint = '" + id + "'")).isEqualTo(burst);
    List<Instant> at = receiver.requests().stream().map(WebhookReceiver.Request::at).sorted().toList();
    assertThat(at).hasSize(burst);
    // A bucket of one second's worth (5), refilled at 5 a second: the last attempt starts 3 s after the first at the
    // soonest (as the gateway timed them: the receiver's own times add the network's jitter), and no second holds
    // more than 5 + 5.
    assertThat(count("SELECT (extract(epoch FROM max(a.at) - min(a.at)) * 1000)::bigint FROM webhook_attempts a "
        + "JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint = '" + id + "'")).isGreaterThanOrEqualTo(2950);
    for (int i = 0; i + 10 < burst; i++) {
      assertThat(Duration.between(at.get(i), at.get(i + 10))).as("11 requests within a second from #%d", i)
          .isGreaterThanOrEqualTo(Duration.ofMillis(900));
    }
    assertThat(endpoint(id).getJsonObject("health").getInteger("consecutiveFailures")).isZero();

    // Its own limit is changed, given back to webhooks.rateLimit (0 here: none), and bad values are refused.
    JsonObject changed = json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, "{\"rateLimit\": 50}"), 200);
    assertThat(changed.getInteger("rateLimit")).isEqualTo(50);
    JsonObject reset = json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, "{\"rateLimit\": null}"), 200);
    assertThat(reset.getValue("rateLimit")).isNull();
    assertThat(reset.getJsonObject("health").getInteger("rateLimit")).isZero();
    for (String bad : List.of("{\"rateLimit\": -1}", "{\"rateLimit\": \"fast\"}", "{\"enabled\": \"yes\"}")) {
      HttpResponse<String> refused = call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, bad);
      assertThat(refused.statusCode()).as(bad + ": " + refused.body()).isEqualTo(400);
      assertThat(refused.headers().firstValue("Content-Type")).contains("application/problem+json");
    }
    assertThat(json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, BOB, "{\"enabled\": false}"), 404)
        .getString("detail")).contains(id);

    // Its owner disables it (no event: the owner asked); nothing is recorded meanwhile, and enabling it replays nothing.
    JsonObject paused = json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, "{\"enabled\": false}"), 200);
    assertThat(paused.getString("state")).isEqualTo("DISABLED");
    assertThat(paused.getJsonObject("health").getString("disabledKind")).isEqualTo("manual");
    assertThat(paused.getString("disabledReason")).startsWith("disabled by alice");
    String meanwhile = send(ALICE);
    Poll.until(WAIT, "its settle published", () -> count("SELECT count(*) FROM outbox_events WHERE event_id = '"
        + meanwhile + ":2' AND pub_seq IS NOT NULL") == 1);
    JsonObject resumed = json(call("PATCH", "/api/v1/webhooks/endpoints/" + id, ALICE, "{\"enabled\": true}"), 200);
    assertThat(resumed.getString("state")).isEqualTo("ENABLED");
    long seq = count("SELECT pub_seq FROM outbox_events WHERE event_id = '" + meanwhile + ":2'");
    assertThat(seq).isGreaterThan(resumed.getJsonObject("skipped").getLong("since"))
        .isLessThanOrEqualTo(resumed.getJsonObject("skipped").getLong("until"));
    twoClaimPasses(id);
    assertThat(count("SELECT count(*) FROM webhook_deliveries WHERE endpoint = '" + id + "'")).isEqualTo(burst);
    assertThat(count("SELECT count(*) FROM outbox WHERE type = 'endpoint.disabled'")).isZero();
  }
}
