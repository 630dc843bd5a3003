package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.standardwebhooks.Webhook;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Webhooks end to end (docs/design.md §6.6): mail relayed over real SMTP, the gateway's outbox events delivered to
 * real HTTP receivers on loopback, signatures checked with the Standard Webhooks reference library, the states
 * and attempts read back from the API and PostgreSQL.
 */
public class WebhookDeliveryTest {
  static final String SECRET = secret(1);
  static final String NEW_SECRET = secret(2);
  static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();
  WebhookReceiver receiver;

  /** A receiver on the harness's Vert.x, closed after the gateway. */
  WebhookReceiver receive(WebhookReceiver.Script script) throws Exception {
    return gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(), script)));
  }

  /** whsec_ + base64 of 32 bytes, different for each n. */
  public static String secret(int n) {
    byte[] key = new byte[32];
    Arrays.fill(key, (byte) n);
    key[0] = (byte) 0x5a;
    return "whsec_" + Base64.getEncoder().encodeToString(key);
  }

  static Map<String, Object> endpoint(String name, String url, Object secret, List<String> events) {
    Map<String, Object> e = new java.util.LinkedHashMap<>();
    e.put("name", name);
    e.put("url", url);
    e.put("secret", secret);
    if (events != null) {
      e.put("events", events);
    }
    return e;
  }

  Map<String, Object> config(List<Map<String, Object>> endpoints, String schedule) {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("webhooks.endpoints", endpoints);
    o.put("webhooks.retrySchedule", schedule);
    o.put("webhooks.pollInterval", "50ms");
    o.put("notify.pollInterval", "100ms");
    return o;
  }

  /** Numbers every message sent, so none is another's resubmission (docs/contract.md §1.13). */
  private static final java.util.concurrent.atomic.AtomicInteger SENT = new java.util.concurrent.atomic.AtomicInteger();

  /** Relays {@code n} new messages over one SMTP connection; answers their ledger ids. */
  static List<String> send(int smtpPort, int n) throws Exception {
    List<String> ids = new ArrayList<>();
    try (SmtpTestClient c = new SmtpTestClient(smtpPort)) {
      c.reply();
      for (int i = 0; i < n; i++) {
        int m = SENT.incrementAndGet();
        String reply = c.sendMail("app@example.com", List.of("user" + i + "@example.net"),
            "Message-ID: <m" + m + "@example.com>\r\nSubject: m" + i + "\r\n\r\nbody " + i);
        assertThat(reply).startsWith("250 2.0.0 Ok: queued as");
        ids.add(ledgerId(reply));
      }
    }
    return ids;
  }

  static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    assertThat(m.find()).as("ledger id in %s", reply).isTrue();
    return m.group(1);
  }

  long count(String where) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_deliveries WHERE " + where);
  }

  JsonObject json(HttpResponse<String> r, int status) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    return new JsonObject(r.body());
  }

  @Test
  void twoHundredMessagesBecomeTwoHundredSignedWebhooksEachIdOnce() throws Exception {
    receiver = receive(r -> Answer.of(200));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/hooks/ledgerpost"),
        List.of(SECRET, NEW_SECRET), List.of("message.settled"))), "0s, 5s"));

    List<String> ids = send(gateway.smtpPort(), 200);

    Poll.until(WAIT, "200 deliveries DELIVERED", () -> count("state = 'DELIVERED'") == 200);
    List<WebhookReceiver.Request> requests = receiver.requests();
    assertThat(requests).hasSize(200);
    assertThat(receiver.timesById().values()).containsOnly(1);
    Set<String> expected = new HashSet<>();
    ids.forEach(id -> expected.add(id + ":2"));
    assertThat(receiver.timesById().keySet()).isEqualTo(expected);
    for (WebhookReceiver.Request r : requests) {
      // Two secrets (a key rotation): a receiver holding either one verifies the request.
      WebhookReceiver.verify(SECRET, r);
      WebhookReceiver.verify(NEW_SECRET, r);
      assertThat(r.signature().split(" ")).hasSize(2).allMatch(s -> s.startsWith("v1,"));
      JsonObject body = new JsonObject(r.body());
      assertThat(body.getString("type")).isEqualTo("message.settled");
      assertThat(OffsetDateTime.parse(body.getString("timestamp"))).isNotNull();
      assertThat(body.getJsonObject("data").getString("status")).isEqualTo("SENT");
      assertThat(r.id()).isEqualTo(body.getJsonObject("data").getString("id") + ":2");
      assertThat(r.headers().get("content-type")).containsExactly("application/json");
    }
    assertThat(count("attempts = 1")).isEqualTo(200);

    // The endpoints as the API shows them: never a secret.
    HttpResponse<String> list = gateway.get("/api/v1/webhooks");
    assertThat(list.body()).doesNotContain(SECRET.substring(6)).doesNotContain(NEW_SECRET.substring(6)).doesNotContain("whsec_");
    JsonObject app = json(list, 200).getJsonArray("endpoints").getJsonObject(0);
    assertThat(app.getString("name")).isEqualTo("app");
    assertThat(app.getInteger("secrets")).isEqualTo(2);
    assertThat(app.getString("state")).isEqualTo("ENABLED");
    assertThat(app.getJsonObject("deliveries").getLong("pending")).isZero();
    // The operation status names each endpoint's state for the message.
    JsonArray hooks = json(gateway.get("/api/v1/operations/" + ids.get(7)), 200).getJsonArray("webhooks");
    assertThat(hooks).hasSize(1);
    assertThat(hooks.getJsonObject(0).getString("endpoint")).isEqualTo("app");
    assertThat(hooks.getJsonObject(0).getString("state")).isEqualTo("DELIVERED");
    assertThat(hooks.getJsonObject(0).getString("eventId")).isEqualTo(ids.get(7) + ":2");
    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_webhook_deliveries_total{endpoint=\"app\",result=\"delivered\"} 200.0");
    Poll.until(WAIT, "the pending gauge at 0", () -> gateway.get("/metrics", null).body().contains("ledgerpost_webhook_pending 0.0"));
  }

  @Test
  void aReceiverAnswering500TwiceGetsItOnTheThirdAttemptOnTheSchedule() throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    receiver = receive(r -> Answer.of(r.nthOfId() <= 2 ? 500 : 200));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/h"), SECRET,
        List.of("message.settled"))), "0s, 5s, 5m, 30m"), clock);
    String id = send(gateway.smtpPort(), 1).get(0);
    String eventId = id + ":2";

    Poll.until(WAIT, "the first attempt", () -> receiver.requests().size() == 1);
    JsonObject first = awaitDelivery(eventId, d -> d.getInteger("attempts") == 1 && !d.getBoolean("inFlight"));
    assertThat(first.getString("state")).isEqualTo("ATTEMPTED");
    assertThat(first.getInteger("lastStatus")).isEqualTo(500);
    Instant t1 = Instant.parse(first.getString("lastAttemptAt").replace("+00:00", "Z"));
    Instant due2 = OffsetDateTime.parse(first.getString("nextAttemptAt")).toInstant();
    assertThat(due2).isBetween(t1.plusSeconds(5), t1.plusMillis(5500)); // 5 s, with up to 10% jitter

    notBefore(clock, Duration.ofSeconds(4), 1);
    clock.advance(Duration.ofMillis(1600)); // past 5.5 s
    Poll.until(WAIT, "the second attempt", () -> receiver.requests().size() == 2);
    JsonObject second = awaitDelivery(eventId, d -> d.getInteger("attempts") == 2 && !d.getBoolean("inFlight"));
    Instant t2 = OffsetDateTime.parse(second.getString("lastAttemptAt")).toInstant();
    assertThat(Duration.between(t1, t2)).isGreaterThanOrEqualTo(Duration.ofSeconds(5));
    Instant due3 = OffsetDateTime.parse(second.getString("nextAttemptAt")).toInstant();
    assertThat(due3).isBetween(t2.plus(Duration.ofMinutes(5)), t2.plus(Duration.ofSeconds(330)));

    notBefore(clock, Duration.ofMinutes(4), 2);
    clock.advance(Duration.ofSeconds(91)); // past 5 m 30 s
    Poll.until(WAIT, "the third attempt", () -> receiver.requests().size() == 3);
    JsonObject third = awaitDelivery(eventId, d -> "DELIVERED".equals(d.getString("state")));
    assertThat(third.getInteger("attempts")).isEqualTo(3);
    assertThat(third.getValue("nextAttemptAt")).isNull();

    JsonArray attempts = json(gateway.get("/api/v1/webhooks/app/deliveries/" + third.getLong("id")), 200).getJsonArray("attemptList");
    assertThat(attempts).hasSize(3);
    assertThat(attempts.stream().map(a -> ((JsonObject) a).getInteger("status")).toList()).containsExactly(500, 500, 200);
    assertThat(((JsonObject) attempts.getValue(0)).getString("error")).startsWith("HTTP 500");
    assertThat(attempts.stream().map(a -> ((JsonObject) a).getDouble("latencyMs"))).allMatch(l -> l != null && l >= 0);
    // Every attempt carried the same webhook-id, with a timestamp from the gateway's clock and a valid signature.
    Webhook webhook = new Webhook(SECRET);
    for (WebhookReceiver.Request r : receiver.requests()) {
      assertThat(r.id()).isEqualTo(eventId);
      assertThat(r.signature()).isEqualTo(webhook.sign(r.id(), Long.parseLong(r.timestamp()), r.body()));
    }
    assertThat(Long.parseLong(receiver.requests().get(2).timestamp()) - Long.parseLong(receiver.requests().get(0).timestamp()))
        .isGreaterThanOrEqualTo(305);
    assertThat(receiver.requests().stream().map(WebhookReceiver.Request::body).distinct()).hasSize(1);
  }

  /** Moves the clock short of the next due time and waits for two claim passes: no attempt may come. */
  void notBefore(MutableClock clock, Duration shortOfIt, int attemptsSoFar) throws Exception {
    clock.advance(shortOfIt);
    long passes = gateway.gateway().part(WebhookPart.class).verticle().passes("app");
    Poll.until(WAIT, "two claim passes after the clock moved", () -> gateway.gateway().part(WebhookPart.class).verticle().passes("app") >= passes + 2);
    assertThat(receiver.requests()).hasSize(attemptsSoFar);
  }

  JsonObject awaitDelivery(String eventId, java.util.function.Predicate<JsonObject> condition) throws Exception {
    JsonObject[] found = new JsonObject[1];
    Poll.until(WAIT, "delivery of " + eventId, () -> {
      for (Object o : json(gateway.get("/api/v1/webhooks/app/deliveries"), 200).getJsonArray("items")) {
        JsonObject d = (JsonObject) o;
        if (d.getString("eventId").equals(eventId) && condition.test(d)) {
          found[0] = d;
          return true;
        }
      }
      return false;
    });
    return found[0];
  }

  @Test
  void aHangingReceiverTimesOutAndIsRetriedWhileSmtpKeepsRelayingAndOtherEndpointsKeepDelivering() throws Exception {
    receiver = receive(r -> r.path().equals("/slow") ? Answer.hang() : Answer.of(200));
    Map<String, Object> o = config(List.of(
        endpoint("slow", receiver.url("/slow"), SECRET, List.of("message.settled")),
        endpoint("fast", receiver.url("/fast"), SECRET, List.of("message.settled"))), "0s, 200ms, 200ms");
    o.put("webhooks.timeout", "500ms");
    o.put("webhooks.concurrency", 2);
    gateway.begin(o);

    List<String> ids = new ArrayList<>(send(gateway.smtpPort(), 5));
    Poll.until(WAIT, "slow requests hanging", () -> count("endpoint = 'slow' AND lease_until > now()") == 2);
    ids.addAll(send(gateway.smtpPort(), 5)); // relayed while both of the slow endpoint's slots hang
    assertThat(gateway.downstream().messages()).hasSize(10);

    Poll.until(WAIT, "fast: 10 DELIVERED", () -> count("endpoint = 'fast' AND state = 'DELIVERED'") == 10);
    Poll.until(WAIT, "slow: 10 FAILED after 3 timed-out attempts each",
        () -> count("endpoint = 'slow' AND state = 'FAILED' AND attempts = 3") == 10);
    assertThat(LedgerRows.count(gateway.databaseUrl(), """
        SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
         WHERE d.endpoint = 'slow' AND a.status IS NULL AND a.error LIKE 'no answer within 500 ms%'""")).isEqualTo(30);
    assertThat(ids).hasSize(10);
    // Never more than webhooks.concurrency attempts at once, as the gateway timed them (start, latency).
    assertThat(LedgerRows.count(gateway.databaseUrl(), """
        SELECT max((SELECT count(*) FROM webhook_attempts b JOIN webhook_deliveries e ON e.id = b.delivery_id
                     WHERE e.endpoint = 'slow' AND b.at <= a.at AND b.at + b.latency_ms * interval '1 millisecond' > a.at))
          FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint = 'slow'""")).isEqualTo(2);
    // FAILED shows in the repair listing and the endpoint's counts.
    JsonArray failed = json(gateway.get("/api/v1/webhooks/slow/deliveries?state=FAILED&limit=500"), 200).getJsonArray("items");
    assertThat(failed).hasSize(10);
    assertThat(((JsonObject) failed.getValue(0)).getString("lastError")).startsWith("no answer within 500 ms");
    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_webhook_deliveries_total{endpoint=\"slow\",result=\"failed\"} 10.0");
    assertThat(metrics).contains("ledgerpost_webhook_deliveries_total{endpoint=\"slow\",result=\"retrying\"} 20.0");
  }

  @Test
  void goneDisablesTheEndpointUntilItIsEnabledAndRetryAfterIsHonoured() throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    receiver = receive(r -> Answer.of(410));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/h"), SECRET,
        List.of("message.settled"))), "0s, 1s, 1s"), clock);
    String first = send(gateway.smtpPort(), 1).get(0) + ":2";
    Poll.until(WAIT, "the 410", () -> receiver.requests().size() == 1);
    Poll.until(WAIT, "the endpoint DISABLED", () -> endpointState().equals("DISABLED"));
    JsonObject app = json(gateway.get("/api/v1/webhooks"), 200).getJsonArray("endpoints").getJsonObject(0);
    assertThat(app.getString("disabledReason")).startsWith("410 Gone");
    String second = send(gateway.smtpPort(), 1).get(0) + ":2";
    Poll.until(WAIT, "the second delivery recorded", () -> count("event_id = '" + second + "'") == 1);
    clock.advance(Duration.ofMinutes(1));
    long passes = gateway.gateway().part(WebhookPart.class).verticle().passes("app");
    Poll.until(WAIT, "claim passes", () -> gateway.gateway().part(WebhookPart.class).verticle().passes("app") >= passes + 2);
    assertThat(receiver.requests()).hasSize(1); // nothing goes to a disabled endpoint
    assertThat(count("state IN ('PENDING', 'ATTEMPTED')")).isEqualTo(2); // and nothing is lost meanwhile

    // Back: 429 with Retry-After: 120 for the first try of each after the enable, then 200.
    receiver.script(r -> (r.id().equals(first) ? r.nthOfId() == 2 : r.nthOfId() == 1)
        ? Answer.of(429, Map.of("Retry-After", "120")) : Answer.of(200));
    JsonObject enabled = json(gateway.post("/api/v1/webhooks/app/enable", ""), 200);
    assertThat(enabled.getString("state")).isEqualTo("ENABLED");
    Poll.until(WAIT, "both tried after the enable", () -> count("last_status = 429 AND lease_until IS NULL") == 2);
    assertThat(receiver.requests()).hasSize(3);
    Instant now = clock.instant();
    long dueEpoch = LedgerRows.count(gateway.databaseUrl(),
        "SELECT min(extract(epoch FROM next_attempt_at))::bigint FROM webhook_deliveries WHERE state = 'ATTEMPTED'");
    assertThat(dueEpoch).isGreaterThanOrEqualTo(now.getEpochSecond() + 119); // not the schedule's 1 s: the receiver's 120 s
    notBeforeAny(clock, Duration.ofSeconds(60));
    clock.advance(Duration.ofSeconds(61));
    Poll.until(WAIT, "both DELIVERED", () -> count("state = 'DELIVERED'") == 2);
  }

  void notBeforeAny(MutableClock clock, Duration d) throws Exception {
    int before = receiver.requests().size();
    notBefore(clock, d, before);
  }

  String endpointState() throws Exception {
    return json(gateway.get("/api/v1/webhooks"), 200).getJsonArray("endpoints").getJsonObject(0).getString("state");
  }

  @Test
  void deliveriesThatEndedAreDeletedWithTheirAttemptsAfterTheRetentionAndOpenOnesStay() throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    receiver = receive(r -> Answer.of(r.path().equals("/down") ? 500 : 200));
    Map<String, Object> o = config(List.of(endpoint("app", receiver.url("/ok"), SECRET, null),
        endpoint("down", receiver.url("/down"), SECRET, null)), "0s, 400d"); // down's second attempt: not within this test
    o.put("notify.pruneInterval", "200ms"); // a retention pass every second (its floor)
    gateway.begin(o, clock);
    send(gateway.smtpPort(), 2);
    Poll.until(WAIT, "app's 4 deliveries delivered, down's 4 attempted once", () -> count("endpoint = 'app' AND state = "
        + "'DELIVERED'") == 4 && count("endpoint = 'down' AND state = 'ATTEMPTED' AND attempts = 1 AND leased_by IS NULL") == 4);
    long failed;
    try (var c = dev.ledgerpost.testing.TestDatabase.connect(gateway.databaseUrl()); var st = c.createStatement();
        var rs = st.executeQuery("UPDATE webhook_deliveries SET state = 'FAILED', next_attempt_at = NULL WHERE id = (SELECT "
            + "min(id) FROM webhook_deliveries WHERE endpoint = 'down') RETURNING id")) {
      assertThat(rs.next()).isTrue();
      failed = rs.getLong(1); // as if its last attempt had failed: ended, like the delivered ones
    }
    assertThat(attempts()).isEqualTo(8);

    clock.advance(Duration.ofDays(31)); // webhooks.retention is 30 days
    Poll.until(WAIT, "the ended deliveries deleted", () -> count("state IN ('DELIVERED', 'FAILED')") == 0);
    assertThat(count("endpoint = 'down' AND state = 'ATTEMPTED'")).as("open deliveries stay, whatever their age").isEqualTo(3);
    assertThat(count("id = " + failed)).isZero();
    assertThat(attempts()).as("the deleted deliveries' attempts went with them").isEqualTo(3);
    assertThat(gateway.get("/api/v1/webhooks/down/deliveries?limit=500").body()).doesNotContain("\"id\":" + failed + ",");
  }

  long attempts() throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_attempts");
  }

  @Test
  void replayRedeliversExactlyTheRangeAskedForAndRefusesOneOlderThanTheRetention() throws Exception {
    receiver = receive(r -> Answer.of(200));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/h"), SECRET, null)), "0s"));
    List<String> ids = send(gateway.smtpPort(), 5);
    Poll.until(WAIT, "10 events delivered (pending and settled of 5)", () -> count("state = 'DELIVERED'") == 10);
    assertThat(receiver.requests()).hasSize(10);

    JsonArray items = json(gateway.get("/api/v1/webhooks/app/deliveries?limit=500"), 200).getJsonArray("items");
    List<JsonObject> bySeq = new ArrayList<>();
    items.forEach(i -> bySeq.add((JsonObject) i));
    bySeq.sort(java.util.Comparator.comparingLong(d -> d.getLong("seq")));
    long since = bySeq.get(2).getLong("seq");
    long until = bySeq.get(6).getLong("seq");
    Set<String> asked = new HashSet<>();
    for (JsonObject d : bySeq) {
      if (d.getLong("seq") > since && d.getLong("seq") <= until) {
        asked.add(d.getString("eventId"));
      }
    }
    assertThat(asked).hasSize(4);

    JsonObject replayed = json(gateway.post("/api/v1/webhooks/app/replay?since=" + since + "&until=" + until, ""), 202);
    assertThat(replayed.getInteger("rearmed")).isEqualTo(4);
    assertThat(replayed.getInteger("recorded")).isZero();
    Poll.until(WAIT, "the replayed range delivered again", () -> receiver.requests().size() == 14
        && count("state = 'DELIVERED'") == 10);
    Set<String> again = new HashSet<>();
    receiver.requests().subList(10, 14).forEach(r -> again.add(r.id()));
    assertThat(again).isEqualTo(asked); // exactly the range, each with its own webhook-id
    assertThat(receiver.requests().subList(10, 14)).allMatch(r -> r.nthOfId() == 2);
    assertThat(ids).hasSize(5);

    // A start older than the outbox's retention is refused, naming the oldest pub_seq still there.
    try (var c = dev.ledgerpost.testing.TestDatabase.connect(gateway.databaseUrl()); var st = c.createStatement()) {
      st.execute("UPDATE outbox_publisher SET pruned_through = " + since);
    }
    HttpResponse<String> gone = gateway.post("/api/v1/webhooks/app/replay?since=" + (since - 1), "");
    JsonObject problem = json(gone, 409);
    assertThat(gone.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(problem.getLong("oldestAvailableSeq")).isEqualTo(since + 1);
    assertThat(problem.getString("detail")).contains("oldest available is " + (since + 1));
    assertThat(json(gateway.post("/api/v1/webhooks/nope/replay?since=1", ""), 404).getString("detail")).contains("nope");
    assertThat(gateway.post("/api/v1/webhooks/app/replay", "").statusCode()).isEqualTo(400); // since is required
  }

  @Test
  void aFailedDeliveryIsListedAndRepairedByARetryUnderTheSameWebhookId() throws Exception {
    receiver = receive(r -> Answer.of(500));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/h"), SECRET,
        List.of("message.settled"))), "0s, 100ms"));
    String eventId = send(gateway.smtpPort(), 1).get(0) + ":2";
    Poll.until(WAIT, "FAILED after two attempts", () -> count("state = 'FAILED' AND attempts = 2") == 1);
    JsonArray failed = json(gateway.get("/api/v1/webhooks/app/deliveries?state=FAILED"), 200).getJsonArray("items");
    assertThat(failed).hasSize(1);
    JsonObject d = failed.getJsonObject(0);
    assertThat(d.getString("eventId")).isEqualTo(eventId);
    assertThat(json(gateway.get("/api/v1/webhooks/app/deliveries?state=DELIVERED"), 200).getJsonArray("items")).isEmpty();

    receiver.script(r -> Answer.of(204));
    JsonObject retried = json(gateway.post("/api/v1/webhooks/app/deliveries/" + d.getLong("id") + "/retry", ""), 202);
    assertThat(retried.getString("state")).isEqualTo("PENDING");
    Poll.until(WAIT, "DELIVERED after the retry", () -> count("state = 'DELIVERED' AND attempts = 3") == 1);
    assertThat(receiver.requests()).hasSize(3).allMatch(r -> r.id().equals(eventId));
    assertThat(json(gateway.post("/api/v1/webhooks/app/deliveries/999999/retry", ""), 404).getString("detail")).contains("999999");
    assertThat(gateway.get("/api/v1/webhooks/app/deliveries?state=LOST").statusCode()).isEqualTo(400);
  }

  @Test
  void aRedirectIsNotFollowed() throws Exception {
    receiver = receive(r -> r.path().equals("/h")
        ? Answer.of(307, Map.of("Location", receiver.url("/elsewhere"))) : Answer.of(200));
    gateway.begin(config(List.of(endpoint("app", receiver.url("/h"), SECRET,
        List.of("message.settled"))), "0s, 100ms"));
    send(gateway.smtpPort(), 1);
    Poll.until(WAIT, "FAILED on the redirect", () -> count("state = 'FAILED' AND last_status = 307") == 1);
    assertThat(receiver.requests()).hasSize(2).allMatch(r -> r.path().equals("/h"));
  }

  @Test
  void aSecretFileIsReadAgainOnSighupAndEverySecretInItSigns() throws Exception {
    receiver = receive(r -> Answer.of(200));
    java.nio.file.Path file = GatewayHarness.tempDir("secrets-").resolve("app.secret");
    java.nio.file.Files.writeString(file, SECRET + "\n");
    Map<String, Object> e = endpoint("app", receiver.url("/h"), null, List.of("message.settled"));
    e.remove("secret");
    e.put("secretFile", file.toString());
    gateway.begin(config(List.of(e), "0s"));
    send(gateway.smtpPort(), 1);
    Poll.until(WAIT, "the first webhook", () -> receiver.requests().size() == 1);
    assertThat(receiver.requests().get(0).signature().split(" ")).hasSize(1);

    java.nio.file.Files.writeString(file, "# rotation: both until the receiver moved\n" + SECRET + "\n" + NEW_SECRET + "\n");
    assertThat(gateway.gateway().reloadCredentials()).isZero();
    send(gateway.smtpPort(), 1);
    Poll.until(WAIT, "the second webhook", () -> receiver.requests().size() == 2);
    WebhookReceiver.Request second = receiver.requests().get(1);
    assertThat(second.signature().split(" ")).hasSize(2);
    WebhookReceiver.verify(SECRET, second);
    WebhookReceiver.verify(NEW_SECRET, second);
    assertThat(json(gateway.get("/api/v1/webhooks"), 200).getJsonArray("endpoints").getJsonObject(0).getInteger("secrets"))
        .isEqualTo(2);
  }

  @Test
  void aGatewayRestartedMidRetryCarriesOnFromPostgresql() throws Exception {
    receiver = receive(r -> Answer.of(r.nthOfId() == 1 ? 503 : 200));
    Map<String, Object> o = config(List.of(endpoint("app", receiver.url("/h"), SECRET, List.of("message.settled"))),
        "0s, 2s");
    o.put("node.id", "restarted");
    gateway.begin(o);
    String eventId = send(gateway.smtpPort(), 1).get(0) + ":2";
    Poll.until(WAIT, "the first attempt recorded", () -> count("state = 'ATTEMPTED' AND attempts = 1 AND lease_until IS NULL") == 1);
    gateway.close();
    o.put("retry.journalDir", GatewayHarness.tempDir("journal-").toString());
    gateway.begin(o);
    Poll.until(WAIT, "DELIVERED by the restarted gateway", () -> count("state = 'DELIVERED' AND attempts = 2") == 1);
    assertThat(receiver.requests()).hasSize(2).allMatch(r -> r.id().equals(eventId));
  }
}
