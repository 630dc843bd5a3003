package dev.ledgerpost.api;

import dev.ledgerpost.operate.stale.StalePart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.operate.stale.StaleGauges;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The endpoints the operator console needs (docs/design.md §8.3): what needs attention with the gauges /metrics
 * shows, their last hour, bulk resolution through the single resolution's path, the recipient and until filters
 * of the list. One gateway for the class: each test uses rows of its own sender.
 */
class AttentionApiTest {
  static String url;
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("stale.scanInterval", "100ms")
      // The stale watch's period as these tests count it; it must outlast a delivery (downstream timeouts).
      .with("stale.threshold", "10m").with("downstream.replyTimeout", "2m").with("downstream.dataTimeout", "5m")
      .afterStart(g -> url = g.databaseUrl());

  @Test
  void staleAndUnknownMessagesAreListedOldestFirstWithTheGaugesMetricsShows() throws Exception {
    String sender = "attention@example.com";
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    // The gauges are read on a period: the start values are taken once they show the ledger as the other tests
    // left it (read before that, they could still count rows a previous test has resolved since).
    long[] start = new long[3];
    Poll.until(Duration.ofSeconds(10), "the gauges show the ledger as it is", () -> {
      start[0] = LedgerRows.count(url,
          "SELECT count(*) FROM messages WHERE settled_at IS NULL AND status = 'PENDING' AND received_at < now() - interval '600 seconds'");
      start[1] = LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'UNKNOWN'");
      start[2] = LedgerRows.count(url, "SELECT count(*) FROM messages WHERE settled_at IS NULL AND status = 'PENDING'");
      return gauges.stalePendingMessages() == start[0] && gauges.unknownMessages() == start[1]
          && gauges.pendingMessages() == start[2];
    });
    long stale = start[0];
    long unknowns = start[1];
    long pending = start[2];
    UUID old = UUID.randomUUID();
    UUID older = UUID.randomUUID();
    UUID unknown = UUID.randomUUID();
    UUID young = UUID.randomUUID();
    insert(old, "PENDING", Instant.now().minus(Duration.ofMinutes(20)), sender);
    insert(older, "PENDING", Instant.now().minus(Duration.ofMinutes(40)), sender);
    insert(unknown, "UNKNOWN", Instant.now().minus(Duration.ofMinutes(1)), sender);
    insert(young, "PENDING", Instant.now(), sender); // in flight as far as anyone knows: not stale yet

    Poll.until(Duration.ofSeconds(10), "the gauges count the new rows", () -> gauges.stalePendingMessages() == stale + 2
        && gauges.unknownMessages() == unknowns + 1 && gauges.pendingMessages() == pending + 3);

    JsonObject a = json(gateway.get("/api/v1/attention?sender=" + enc(sender)));
    assertThat(a.getLong("thresholdSeconds")).isEqualTo(600);
    assertThat(a.getLong("matching")).isEqualTo(3);
    JsonArray items = a.getJsonArray("items");
    assertThat(ids(items)).containsExactly(older.toString(), old.toString(), unknown.toString());
    assertThat(items.getJsonObject(0).getString("status")).isEqualTo("PENDING");
    assertThat(items.getJsonObject(0).getLong("ageSeconds")).isBetween(40 * 60L, 42 * 60L);
    assertThat(items.getJsonObject(2).getString("status")).isEqualTo("UNKNOWN");

    // The gauges in the answer are the values /metrics reports (nothing changes between the two reads).
    JsonObject g = json(gateway.get("/api/v1/attention")).getJsonObject("gauges");
    String metrics = gateway.get("/metrics", null).body();
    assertThat(metrics).contains("ledgerpost_pending_messages " + g.getLong("pending") + ".0")
        .contains("ledgerpost_pending_stale_messages " + g.getLong("stale") + ".0")
        .contains("ledgerpost_unknown_messages " + g.getLong("unknown") + ".0");
    assertThat(g.getLong("stale")).isEqualTo(gauges.stalePendingMessages());

    // Filters: status, and a time range (since inclusive, until exclusive).
    assertThat(ids(json(gateway.get("/api/v1/attention?status=UNKNOWN&sender=" + enc(sender))).getJsonArray("items")))
        .containsExactly(unknown.toString());
    String since = enc(OffsetDateTime.now().minusMinutes(30).toString());
    String until = enc(OffsetDateTime.now().minusMinutes(10).toString());
    JsonObject ranged = json(gateway.get("/api/v1/attention?sender=" + enc(sender) + "&since=" + since + "&until=" + until));
    assertThat(ids(ranged.getJsonArray("items"))).containsExactly(old.toString());
    JsonObject limited = json(gateway.get("/api/v1/attention?limit=1&sender=" + enc(sender)));
    assertThat(limited.getLong("matching")).isEqualTo(3);
    assertThat(limited.getJsonArray("items")).hasSize(1);

    // Bad filters are refused with problem JSON: by the contract, and by the code for what a schema cannot say.
    assertThat(gateway.get("/api/v1/attention?status=SENT").statusCode()).isEqualTo(400);
    assertThat(gateway.get("/api/v1/attention?limit=0").statusCode()).isEqualTo(400);
    HttpResponse<String> badTime = gateway.get("/api/v1/attention?since=yesterday");
    assertThat(badTime.statusCode()).isEqualTo(400);
    assertThat(json(badTime).getString("detail")).contains("since must be an ISO-8601 timestamp");
    assertThat(gateway.get("/api/v1/attention?since=" + until + "&until=" + since).statusCode()).isEqualTo(400);
    assertThat(gateway.get("/api/v1/attention", "wrong-token").statusCode()).isEqualTo(401);
  }

  @Test
  void aStaleRowThatALiveNodeHoldsNeedsNoAttentionUntilThatNodeIsDead() throws Exception {
    String sender = "held-elsewhere@example.com";
    UUID id = UUID.randomUUID();
    insert(id, "PENDING", Instant.now().minus(Duration.ofMinutes(20)), sender);
    // Another gateway on this ledger, alive, whose retry part holds the row's known outcome (docs/design.md §9).
    LedgerRows.string(url, "INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at, held) VALUES "
        + "('attention-other', 'elsewhere', 1, now(), now(), ARRAY['" + id + "'::uuid]) RETURNING id");
    try {
      JsonObject a = json(gateway.get("/api/v1/attention?sender=" + enc(sender)));
      assertThat(a.getLong("matching")).as("held by a live node: not stale, as the watch sees it").isZero();
      assertThat(ids(json(gateway.get("/api/v1/messages/stale")).getJsonArray("items"))).doesNotContain(id.toString());

      // Its heartbeat older than node.deadAfter (15 s): what it held keeps nothing from the watch any more.
      LedgerRows.string(url, "UPDATE nodes SET heartbeat_at = now() - interval '1 minute' WHERE id = 'attention-other' RETURNING id");
      assertThat(ids(json(gateway.get("/api/v1/attention?sender=" + enc(sender))).getJsonArray("items")))
          .containsExactly(id.toString());
    } finally {
      LedgerRows.string(url, "DELETE FROM nodes WHERE id = 'attention-other' RETURNING id");
    }
  }

  @Test
  void theHistoryHoldsSamplesOfTheGauges() throws Exception {
    JsonObject h = json(gateway.get("/api/v1/attention/history"));
    assertThat(h.getInteger("intervalSeconds")).isEqualTo(10);
    assertThat(h.getInteger("windowSeconds")).isEqualTo(3600);
    JsonArray samples = h.getJsonArray("samples");
    assertThat(samples).as("a sample is taken at start").isNotEmpty();
    JsonObject s = samples.getJsonObject(0);
    assertThat(s.fieldNames()).containsExactlyInAnyOrder("at", "pending", "oldestPendingAgeSeconds", "stale", "unknown");
    assertThat(OffsetDateTime.parse(s.getString("at"))).isBefore(OffsetDateTime.now().plusSeconds(1));
  }

  @Test
  void aBulkResolutionResolvesEachSelectedMessageThroughTheSinglePathAndRefusesAChangedCount() throws Exception {
    String sender = "outage@example.com";
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id);
      insert(id, "UNKNOWN", Instant.now().minus(Duration.ofMinutes(5 + i)), sender);
    }
    UUID otherSender = UUID.randomUUID();
    insert(otherSender, "UNKNOWN", Instant.now().minus(Duration.ofMinutes(5)), "someone-else@example.com");
    String filter = "{\"status\": \"UNKNOWN\", \"sender\": \"" + sender + "\"}";

    // The preview is GET /api/v1/attention with the same filter.
    assertThat(json(gateway.get("/api/v1/attention?status=UNKNOWN&sender=" + enc(sender))).getLong("matching")).isEqualTo(5);

    // The count the operator confirmed differs from the count now: nothing is resolved.
    HttpResponse<String> changed = gateway.post("/api/v1/resolutions", "{\"filter\": " + filter + ", \"expectedCount\": 4, "
        + "\"outcome\": \"NOT_DELIVERED\", \"note\": \"smarthost outage\", \"operator\": \"dora\"}");
    assertThat(changed.statusCode()).isEqualTo(409);
    assertThat(json(changed).getLong("matching")).isEqualTo(5);
    assertThat(resolutions(ids)).isZero();

    // Malformed requests: the contract and the code say what is wrong.
    assertThat(gateway.post("/api/v1/resolutions", "{\"filter\": " + filter + ", \"expectedCount\": 5, \"outcome\": \"NOT_DELIVERED\", "
        + "\"note\": \"x\", \"operator\": \"dora\", \"extra\": 1}").statusCode()).isEqualTo(400);
    HttpResponse<String> noNote = gateway.post("/api/v1/resolutions", "{\"filter\": " + filter + ", \"expectedCount\": 5, "
        + "\"outcome\": \"NOT_DELIVERED\", \"note\": \"  \", \"operator\": \"dora\"}");
    assertThat(noNote.statusCode()).isEqualTo(400);
    assertThat(json(noNote).getString("detail")).contains("note is required");
    assertThat(gateway.post("/api/v1/resolutions", "{\"filter\": {\"status\": \"SENT\"}, \"expectedCount\": 5, "
        + "\"outcome\": \"NOT_DELIVERED\", \"note\": \"x\", \"operator\": \"dora\"}").statusCode()).isEqualTo(400);
    assertThat(resolutions(ids)).isZero();

    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      HttpResponse<String> r = gateway.post("/api/v1/resolutions", "{\"filter\": " + filter + ", \"expectedCount\": 5, "
          + "\"outcome\": \"NOT_DELIVERED\", \"note\": \"smarthost outage 10:00-10:20, never queued\"}", "X-Operator", "dora");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonObject body = json(r);
      assertThat(body.getInteger("matched")).isEqualTo(5);
      assertThat(body.getInteger("resolved")).isEqualTo(5);
      assertThat(body.getInteger("conflicts")).isZero();
      assertThat(body.getInteger("failed")).isZero();
      assertThat(ids(body.getJsonArray("items"))).containsExactlyInAnyOrderElementsOf(ids.stream().map(UUID::toString).toList());
      // One resolution per message, each as the single path writes it: the row, the recipients, the event, the audit line.
      assertThat(resolutions(ids)).isEqualTo(5);
      for (UUID id : ids) {
        assertThat(LedgerRows.string(url, "SELECT status || ':' || version FROM messages WHERE id = '" + id + "'"))
            .isEqualTo("RESOLVED_NOT_DELIVERED:2");
        assertThat(LedgerRows.string(url, "SELECT operator || '|' || note FROM resolutions WHERE message_id = '" + id + "'"))
            .isEqualTo("dora|smarthost outage 10:00-10:20, never queued");
        assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE event_id = '" + id + ":2' AND type = 'message.resolved'"))
            .isEqualTo(1);
        assertThat(audit.linesContaining("audit_event=manual_resolution", "message_id=" + id)).hasSize(1);
      }
    }
    assertThat(LedgerRows.status(url, otherSender)).as("another sender's message is not touched").isEqualTo("UNKNOWN");
    // Resolved messages no longer need attention: the same filter now matches none, and a repeat resolves none.
    assertThat(json(gateway.get("/api/v1/attention?status=UNKNOWN&sender=" + enc(sender))).getLong("matching")).isZero();
    assertThat(gateway.post("/api/v1/resolutions", "{\"filter\": " + filter + ", \"expectedCount\": 5, "
        + "\"outcome\": \"NOT_DELIVERED\", \"note\": \"again\", \"operator\": \"dora\"}").statusCode()).isEqualTo(409);
  }

  @Test
  void aBulkResolutionOfMoreThanOneThousandMessagesIsRefusedWhole() throws Exception {
    String sender = "flood@example.com";
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 1001; i++) {
      ids.add(UUID.randomUUID());
    }
    // Young PENDING rows (nothing stale to raise meanwhile), made UNKNOWN in one statement.
    LedgerRows.insertPending(url, ids, Instant.now().minus(Duration.ofMinutes(1)));
    LedgerRows.string(url, "UPDATE messages SET mail_from = '" + sender + "', status = 'UNKNOWN', settled_at = now() "
        + "WHERE id = ANY(ARRAY[" + String.join(",", ids.stream().map(id -> "'" + id + "'::uuid").toList()) + "]) RETURNING 1");
    HttpResponse<String> r = gateway.post("/api/v1/resolutions", "{\"filter\": {\"status\": \"UNKNOWN\", \"sender\": \"" + sender
        + "\"}, \"expectedCount\": 1000, \"outcome\": \"DELIVERED\", \"note\": \"x\", \"operator\": \"dora\"}");
    assertThat(r.statusCode()).isEqualTo(422);
    assertThat(json(r).getLong("matching")).isEqualTo(1001);
    assertThat(json(r).getString("detail")).contains("at most 1000");
    assertThat(resolutions(ids)).isZero();
  }

  @Test
  void theListFiltersByRecipientAndUntil() throws Exception {
    String first;
    String second;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      first = ledgerId(c.sendMail("filters@example.com", List.of("Carol@Example.net", "dave@example.net"), "Subject: 1\r\n\r\nx"));
    }
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      second = ledgerId(c.sendMail("filters@example.com", List.of("erin@example.net"), "Subject: 2\r\n\r\nx"));
    }
    String sender = "&sender=filters@example.com";
    assertThat(ids(json(gateway.get("/api/v1/messages?recipient=carol@example.net" + sender)).getJsonArray("items")))
        .containsExactly(first);
    assertThat(ids(json(gateway.get("/api/v1/messages?recipient=erin@example.net" + sender)).getJsonArray("items")))
        .containsExactly(second);
    assertThat(ids(json(gateway.get("/api/v1/messages" + sender.replace('&', '?'))).getJsonArray("items")))
        .containsExactly(second, first);
    String secondAt = json(gateway.get("/api/v1/messages/" + second)).getString("receivedAt");
    assertThat(ids(json(gateway.get("/api/v1/messages?until=" + enc(secondAt) + sender)).getJsonArray("items")))
        .as("until is exclusive").containsExactly(first);
    assertThat(ids(json(gateway.get("/api/v1/messages?since=" + enc(secondAt) + sender)).getJsonArray("items")))
        .containsExactly(second);
    assertThat(gateway.get("/api/v1/messages?until=soon").statusCode()).isEqualTo(400);
  }

  @Test
  void theConsoleIsServedFromTheJarWithItsSecurityHeaders() throws Exception {
    HttpResponse<String> page = gateway.get("/console/", null);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
    assertThat(page.body()).contains("<script type=\"module\" src=\"app.js\"></script>").doesNotContain("<script>");
    String csp = page.headers().firstValue("Content-Security-Policy").orElseThrow();
    assertThat(csp).contains("script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'",
        "form-action 'none'").doesNotContain("unsafe-inline").doesNotContain("unsafe-eval");
    assertThat(page.headers().firstValue("X-Frame-Options")).hasValue("DENY");
    assertThat(page.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");

    HttpResponse<String> js = gateway.get("/console/app.js", null);
    assertThat(js.statusCode()).isEqualTo(200);
    assertThat(js.headers().firstValue("Content-Type")).hasValue("text/javascript; charset=utf-8");
    String etag = js.headers().firstValue("ETag").orElseThrow();
    HttpResponse<String> again = send("/console/app.js", "If-None-Match", etag);
    assertThat(again.statusCode()).isEqualTo(304);

    HttpResponse<String> missing = gateway.get("/console/nope.js", null);
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(missing.headers().firstValue("Content-Security-Policy")).isPresent();
    assertThat(gateway.get("/console/../openapi.yaml", null).statusCode()).isEqualTo(404);
    HttpResponse<String> bare = gateway.get("/console", null);
    assertThat(bare.statusCode()).isEqualTo(301);
    assertThat(bare.headers().firstValue("Location")).hasValue("/console/");
  }

  @Test
  void everyFileOfTheConsoleDirectoryIsServed() throws Exception {
    List<String> onDisk;
    try (var files = java.nio.file.Files.list(java.nio.file.Path.of("src", "main", "resources", "console"))) {
      onDisk = files.map(p -> p.getFileName().toString()).sorted().toList();
    }
    assertThat(ConsoleFiles.FILES).containsExactlyInAnyOrderElementsOf(onDisk);
  }

  private static HttpResponse<String> send(String path, String header, String value) throws Exception {
    return java.net.http.HttpClient.newBuilder().version(java.net.http.HttpClient.Version.HTTP_1_1).build().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
            .header(header, value).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static void insert(UUID id, String status, Instant receivedAt, String sender) throws Exception {
    LedgerRows.insert(url, id, status, status, receivedAt, null);
    LedgerRows.string(url, "UPDATE messages SET mail_from = '" + sender + "' WHERE id = '" + id + "' RETURNING 1");
  }

  private static long resolutions(List<UUID> ids) throws Exception {
    return LedgerRows.count(url, "SELECT count(*) FROM resolutions WHERE message_id = ANY(ARRAY["
        + String.join(",", ids.stream().map(id -> "'" + id + "'::uuid").toList()) + "])");
  }

  private static JsonObject json(HttpResponse<String> r) {
    return new JsonObject(r.body());
  }

  private static List<String> ids(JsonArray items) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      out.add(items.getJsonObject(i).getString("id"));
    }
    return out;
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return m.group(1);
  }
}
