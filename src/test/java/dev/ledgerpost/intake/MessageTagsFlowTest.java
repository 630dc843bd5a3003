package dev.ledgerpost.intake;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tags and metadata end to end (issue 31, docs/data-model.md §5.17): from SMTP's control headers (relayed byte for
 * byte, or stripped with smtp.stripControlHeaders, sentSha256 of what the smarthost got either way) and the send API's
 * members, onto the row, into the list's filter, into every event, and through a webhook endpoint's tag filter.
 */
class MessageTagsFlowTest {
  static final String KEY = "tags-app-key";
  static final String OTHER_KEY = "tags-other-key";
  static final String ADMIN = "test-admin-token";
  static final Duration WAIT = Duration.ofSeconds(60);
  /** The client's message: control headers among the others, one folded, and a body line that only looks like one. */
  static final String MESSAGE = "X-Ledgerpost-Tag: billing\r\n"
      + "Subject: invoice\r\n"
      + "X-Ledgerpost-Metadata: order=A-17\r\n"
      + "X-Ledgerpost-Tag: eu\r\n"
      + "x-ledgerpost-metadata: customer=42\r\n"
      + "\tand more\r\n"
      + "Message-ID: <%s@example.com>\r\n"
      + "\r\n"
      + "X-Ledgerpost-Tag: in-the-body\r\n"
      + "Hello.\r\n";

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();
  final HttpClient http = HttpClient.newHttpClient();

  Map<String, Object> config(boolean strip) {
    Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
    o.put("smtp.stripControlHeaders", strip);
    o.put("smtp.relayNetworks", "127.0.0.0/8");
    o.put("api.keysFile", SendClient.keysFile(Map.of(KEY, "app:1000", OTHER_KEY, "other:1000")).toString());
    o.put("webhooks.pollInterval", "50ms");
    o.put("webhooks.retrySchedule", "0s, 1h");
    o.put("notify.pollInterval", "100ms");
    o.put("webhooks.allowHttp", true);
    o.put("webhooks.allowPrivateNetworks", true);
    return o;
  }

  static String message(String id) {
    return MESSAGE.formatted(id);
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  String smtp(String body) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), body);
    }
  }

  static String ledgerId(String reply) {
    assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
    Matcher m = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(reply);
    assertThat(m.find()).isTrue();
    return m.group(1);
  }

  String column(String id, String sql) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), sql.replace("$id", "'" + id + "'"));
  }

  JsonObject detail(String id) throws Exception {
    HttpResponse<String> r = gateway.get("/api/v1/messages/" + id);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body());
  }

  ScriptedSmtpServer.Received lastAtSmarthost() {
    List<ScriptedSmtpServer.Received> all = gateway.downstream().messages();
    return all.get(all.size() - 1);
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

  void assertTagged(JsonObject tags) {
    assertThat(tags.getJsonArray("tags")).containsExactly("billing", "eu");
    assertThat(tags.getJsonObject("metadata").getMap()).containsExactlyInAnyOrderEntriesOf(
        Map.of("order", "A-17", "customer", "42\tand more"));
  }

  @Test
  void overSmtpTheControlHeadersAreRecordedAndRelayedByteForByteByDefault() throws Exception {
    gateway.begin(config(false));
    String client = message("kept");
    String id = ledgerId(smtp(client));

    ScriptedSmtpServer.Received got = lastAtSmarthost();
    assertThat(new String(got.afterTrace(), StandardCharsets.UTF_8)).isEqualTo(client);
    assertThat(column(id, "SELECT sent_sha256 FROM messages WHERE id = $id")).isEqualTo(sha256(got.data()));
    assertThat(column(id, "SELECT body_sha256 FROM messages WHERE id = $id")).isEqualTo(sha256(client.getBytes(StandardCharsets.UTF_8)));
    assertThat(column(id, "SELECT array_to_string(tags, '|') FROM messages WHERE id = $id")).isEqualTo("billing|eu");

    JsonObject d = detail(id);
    assertTagged(d);
    assertThat(d.getString("sentSha256")).isEqualTo(sha256(got.data()));

    // Every event of the message carries them: the open's and the settle's, as the hub and webhooks read them.
    Poll.until(WAIT, "both events published", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND pub_seq IS NOT NULL") == 2);
    for (String type : List.of("message.pending", "message.settled")) {
      JsonObject payload = new JsonObject(column(id, "SELECT payload::text FROM outbox_events WHERE message_id = $id AND type = '"
          + type + "'"));
      assertTagged(payload);
    }
  }

  @Test
  void withStripTheSmarthostGetsTheMessageWithoutThemAndSentSha256IsOfThat() throws Exception {
    gateway.begin(config(true));
    String client = message("stripped");
    String id = ledgerId(smtp(client));

    String expected = "Subject: invoice\r\n"
        + "Message-ID: <stripped@example.com>\r\n"
        + "\r\n"
        + "X-Ledgerpost-Tag: in-the-body\r\n"
        + "Hello.\r\n";
    ScriptedSmtpServer.Received got = lastAtSmarthost();
    assertThat(new String(got.afterTrace(), StandardCharsets.UTF_8)).isEqualTo(expected);
    String sent = column(id, "SELECT sent_sha256 FROM messages WHERE id = $id");
    assertThat(sent).isEqualTo(sha256(got.data()));
    // What the client handed over is still what the row's own hash and size describe.
    assertThat(column(id, "SELECT body_sha256 FROM messages WHERE id = $id")).isEqualTo(sha256(client.getBytes(StandardCharsets.UTF_8)))
        .isNotEqualTo(sent);
    assertThat(column(id, "SELECT size_bytes FROM messages WHERE id = $id")).isEqualTo(String.valueOf(client.length()));
    assertTagged(detail(id));

    // BDAT too (the smarthost offers no CHUNKING, so it goes down as DATA): stripped from the header section only.
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      c.command("EHLO client.test");
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
      byte[] body = message("bdat").getBytes(StandardCharsets.UTF_8);
      c.send("BDAT " + body.length + " LAST\r\n");
      c.sendBytes(body);
      String bdatId = ledgerId(c.reply());
      ScriptedSmtpServer.Received bdat = lastAtSmarthost();
      assertThat(new String(bdat.afterTrace(), StandardCharsets.UTF_8)).isEqualTo(expected.replace("stripped@", "bdat@"));
      assertThat(column(bdatId, "SELECT sent_sha256 FROM messages WHERE id = $id")).isEqualTo(sha256(bdat.data()));
      assertTagged(detail(bdatId));
    }
  }

  @Test
  void badTagsAreRefusedWithTheirReasonAndNothingIsRecordedOrSent() throws Exception {
    gateway.begin(config(false));
    int dataBefore = gateway.downstream().dataCommands();
    String reply = smtp("X-Ledgerpost-Tag: no spaces allowed\r\nSubject: x\r\n\r\nbody\r\n");
    assertThat(reply).startsWith("550 5.6.0 Message refused: the tag \"no spaces allowed\" may hold only");
    StringBuilder many = new StringBuilder();
    for (int i = 0; i < 11; i++) {
      many.append("X-Ledgerpost-Tag: t").append(i).append("\r\n");
    }
    assertThat(smtp(many + "\r\nbody\r\n")).startsWith("550 5.6.0 Message refused: at most 10 X-Ledgerpost-Tag headers");
    assertThat(smtp("X-Ledgerpost-Metadata: novalue\r\n\r\nbody\r\n")).startsWith("550 5.6.0").contains("key=value");
    assertThat(gateway.downstream().dataCommands()).isEqualTo(dataBefore);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();

    // The send API answers 422 naming the member, and records nothing either.
    HttpResponse<String> r = gateway.sendClient().send(KEY, null, composed("bad").put("tags", new JsonArray().add("a b")));
    SendClient.assertProblem(r, 422);
    assertThat(r.body()).contains("tags").contains("may hold only");
    r = gateway.sendClient().send(KEY, null, composed("bad").put("metadata", new JsonObject().put("k", "x".repeat(300))));
    SendClient.assertProblem(r, 422);
    assertThat(r.body()).contains("metadata").contains("longer than 256");
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();
  }

  static JsonObject composed(String subject) {
    return new JsonObject().put("from", "app@example.com").put("to", new JsonArray().add("someone@example.net"))
        .put("subject", subject).put("text", "Hello.\n");
  }

  @Test
  void overHttpTheyAreRecordedFilterableAndPartOfTheIdempotencyKeysRequest() throws Exception {
    gateway.begin(config(false));
    JsonObject tagged = composed("tagged").put("tags", new JsonArray().add("billing").add("eu"))
        .put("metadata", new JsonObject().put("order", "A-17").put("customer", "42\tand more"));
    HttpResponse<String> r = gateway.sendClient().send(KEY, "tags-key-1", tagged);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    String id = new JsonObject(r.body()).getString("operationId");
    assertTagged(detail(id));
    // Not written into the message: they are the gateway's, not the recipient's.
    assertThat(lastAtSmarthost().text()).doesNotContain("billing").doesNotContain("A-17");

    // The same key with other tags is another request: 422, nothing sent again.
    int before = gateway.downstream().messages().size();
    JsonObject retagged = tagged.copy().put("tags", new JsonArray().add("billing"));
    SendClient.assertProblem(gateway.sendClient().send(KEY, "tags-key-1", retagged), 422);
    HttpResponse<String> replay = gateway.sendClient().send(KEY, "tags-key-1", tagged);
    assertThat(replay.statusCode()).isEqualTo(200);
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(gateway.downstream().messages()).hasSize(before);

    // The list's filter: only the messages that carry the tag, an untagged and an otherwise tagged one left out.
    HttpResponse<String> plain = gateway.sendClient().send(KEY, null, composed("plain"));
    assertThat(plain.statusCode()).isEqualTo(200);
    String smtpId = ledgerId(smtp(message("smtp-eu")));
    HttpResponse<String> other = gateway.sendClient().send(KEY, null, composed("other").put("tags", new JsonArray().add("euro")));
    assertThat(other.statusCode()).isEqualTo(200);
    JsonArray billing = new JsonObject(gateway.get("/api/v1/messages?tag=billing").body()).getJsonArray("items");
    assertThat(billing.stream().map(o -> ((JsonObject) o).getString("id")).toList()).containsExactly(smtpId, id);
    assertThat(billing.getJsonObject(1).getJsonArray("tags")).containsExactly("billing", "eu");
    JsonArray eu = new JsonObject(gateway.get("/api/v1/messages?tag=eu&limit=1").body()).getJsonArray("items");
    assertThat(eu).hasSize(1);
    assertThat(eu.getJsonObject(0).getString("id")).isEqualTo(smtpId);
    assertThat(new JsonObject(gateway.get("/api/v1/messages?tag=nobody").body()).getJsonArray("items")).isEmpty();
    // A tag too long for any message is the contract's 400.
    assertThat(gateway.get("/api/v1/messages?tag=" + "x".repeat(65)).statusCode()).isEqualTo(400);
    // The CLI filters and shows them too.
    String api = "http://127.0.0.1:" + gateway.httpPort();
    dev.ledgerpost.testing.CommandLineRun listed = dev.ledgerpost.testing.CommandLineRun.run("messages", "list", "--tag", "billing",
        "--ids", "--api", api, "--token", ADMIN);
    assertThat(listed.exit()).as(listed.err()).isZero();
    assertThat(listed.out().lines().toList()).containsExactly(smtpId, id);
    dev.ledgerpost.testing.CommandLineRun shown = dev.ledgerpost.testing.CommandLineRun.run("messages", "show", id, "--api", api,
        "--token", ADMIN);
    assertThat(shown.out()).contains("tags:            billing, eu").contains("metadata:        order=A-17");
    // Untagged rows say so with empty members, not missing ones.
    JsonObject plainRow = detail(new JsonObject(plain.body()).getString("operationId"));
    assertThat(plainRow.getJsonArray("tags")).isEmpty();
    assertThat(plainRow.getJsonObject("metadata")).isEmpty();
  }

  @Test
  void anEndpointWithATagFilterIsDeliveredOnlyTheEventsOfMessagesCarryingOneOfItsTags() throws Exception {
    WebhookReceiver receiver = gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(), r -> Answer.of(200))));
    Map<String, Object> o = config(false);
    // A configured endpoint filters alike (every user's messages, the pending events too).
    o.put("webhooks.endpoints", List.of(Map.of("name", "eu-ops", "url", receiver.url("/eu-ops"),
        "secret", dev.ledgerpost.publish.webhook.WebhookDeliveryTest.secret(3), "tags", List.of("eu"))));
    gateway.begin(o);
    JsonObject made = new JsonObject(call("POST", "/api/v1/webhooks/endpoints", KEY, new JsonObject()
        .put("url", receiver.url("/billing")).put("events", new JsonArray().add("message.settled"))
        .put("tags", new JsonArray().add("billing").add("refunds")).encode()).body());
    String endpoint = made.getString("id");
    assertThat(endpoint).as(made.encode()).startsWith("ep_");
    assertThat(made.getJsonArray("tags")).containsExactly("billing", "refunds");
    // Bad tags are the endpoint API's 422 with the reason.
    HttpResponse<String> bad = call("POST", "/api/v1/webhooks/endpoints", KEY, new JsonObject()
        .put("url", receiver.url("/x")).put("tags", new JsonArray().add("no good")).encode());
    SendClient.assertProblem(bad, 422);
    assertThat(bad.body()).contains("tags:");

    HttpResponse<String> untagged = gateway.sendClient().send(KEY, null, composed("untagged"));
    HttpResponse<String> elsewhere = gateway.sendClient().send(KEY, null, composed("eu only").put("tags", new JsonArray().add("eu")));
    HttpResponse<String> refund = gateway.sendClient().send(KEY, null, composed("refund")
        .put("tags", new JsonArray().add("refunds")).put("metadata", new JsonObject().put("order", "R-9")));
    String refundId = new JsonObject(refund.body()).getString("operationId");

    Poll.until(WAIT, "the refund's settle delivered", () -> receiver.requests().stream()
        .anyMatch(q -> q.body().contains(refundId)));
    // Recorded in pub_seq order: once the endpoint has considered the refund's event, it has considered the others.
    Poll.until(WAIT, "the endpoint recorded past the refund", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM webhook_endpoints w WHERE w.name = '" + endpoint + "' AND w.recorded_through >= "
            + "(SELECT max(pub_seq) FROM outbox_events WHERE message_id = '" + refundId + "')") == 1);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_deliveries WHERE endpoint = '" + endpoint + "'"))
        .isEqualTo(1);
    String euId = new JsonObject(elsewhere.body()).getString("operationId");
    Poll.until(WAIT, "the configured endpoint recorded past the refund", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM webhook_endpoints w WHERE w.name = 'eu-ops' AND w.recorded_through >= "
            + "(SELECT max(pub_seq) FROM outbox_events WHERE message_id = '" + refundId + "')") == 1);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_deliveries WHERE endpoint = 'eu-ops'"
        + " AND message_id = '" + euId + "'")).as("its pending and settled events").isEqualTo(2);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM webhook_deliveries WHERE endpoint = 'eu-ops'"
        + " AND message_id <> '" + euId + "'")).isZero();
    Poll.until(WAIT, "the eu message's events delivered", () -> receiver.requests().stream()
        .filter(q -> q.path().equals("/eu-ops")).count() == 2);
    JsonObject body = new JsonObject(receiver.requests().stream().filter(q -> q.path().equals("/billing")).findFirst()
        .orElseThrow().body());
    assertThat(body.getString("type")).isEqualTo("message.settled");
    assertThat(body.getJsonObject("data").getJsonArray("tags")).containsExactly("refunds");
    assertThat(body.getJsonObject("data").getJsonObject("metadata").getString("order")).isEqualTo("R-9");
    assertThat(List.of(untagged.statusCode(), elsewhere.statusCode(), refund.statusCode())).containsOnly(200);

    // PATCH [] lifts the filter: from then on every message of its owner.
    JsonObject patched = new JsonObject(call("PATCH", "/api/v1/webhooks/endpoints/" + endpoint, KEY, "{\"tags\": []}").body());
    assertThat(patched.getJsonArray("tags")).isEmpty();
    HttpResponse<String> later = gateway.sendClient().send(KEY, null, composed("later untagged"));
    String laterId = new JsonObject(later.body()).getString("operationId");
    Poll.until(WAIT, "the untagged message's settle delivered after the filter was lifted",
        () -> receiver.requests().stream().anyMatch(q -> q.body().contains(laterId)));
  }

  /**
   * The list's tag filter reaches its index on every call, not only while its statement is planned afresh: the pool
   * caches prepared statements, and after five executions PostgreSQL may keep a generic plan, which knows neither the
   * tag nor how rare it is and cannot use the index behind the filter's "tag IS NULL OR" (docs/data-model.md §5.17).
   * The database is set to generic plans from the start here, the worst case: a tagged list must not follow it.
   */
  @Test
  void theTagFilterUsesItsIndexCallAfterCall() throws Exception {
    Map<String, Object> o = config(false);
    try (java.sql.Connection c = dev.ledgerpost.testing.TestDatabase.connect((String) o.get("ledger.url"));
        java.sql.Statement st = c.createStatement()) {
      st.execute("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = force_generic_plan', current_database()); END $$");
    }
    gateway.begin(o);
    // (Set for sessions that start from now on: the gateway's; this test's own connection is an older one.)
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d"
        + " ON d.oid = s.setdatabase WHERE d.datname = current_database()"
        + " AND 'plan_cache_mode=force_generic_plan' = ANY(s.setconfig)")).isEqualTo(1);
    java.time.Instant at = java.time.Instant.now().minusSeconds(60);
    try (java.sql.Connection c = dev.ledgerpost.testing.TestDatabase.connect(gateway.databaseUrl())) {
      c.setAutoCommit(false);
      try (java.sql.PreparedStatement m = c.prepareStatement("""
          INSERT INTO messages (id, intake, mail_from, size_bytes, body_sha256, route, status, version, received_at, tags)
          VALUES (?, 'SMTP', 'bulk@example.com', 10, 'sha', 'smarthost:test', 'SENT', 2, ?, ?)""")) {
        for (int i = 0; i < 20_000; i++) {
          m.setObject(1, dev.ledgerpost.platform.db.LedgerIds.next());
          m.setTimestamp(2, java.sql.Timestamp.from(at));
          m.setArray(3, i % 5000 == 0 ? c.createArrayOf("text", new String[] {"rare"})
              : i % 2 == 0 ? c.createArrayOf("text", new String[] {"common"}) : null);
          m.addBatch();
        }
        m.executeBatch();
      }
      c.commit();
      c.setAutoCommit(true);
      try (java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE messages");
      }
    }
    // The list as the console reads it, unfiltered, many times first: the same statement text, cheap on any plan.
    for (int i = 0; i < 60; i++) {
      assertThat(new JsonObject(gateway.get("/api/v1/messages?limit=50").body()).getJsonArray("items")).hasSize(50);
    }
    String scans = "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname LIKE '%tags_idx'";
    long before = LedgerRows.count(gateway.databaseUrl(), scans);
    int calls = 60;
    for (int i = 0; i < calls; i++) {
      JsonArray items = new JsonObject(gateway.get("/api/v1/messages?tag=rare").body()).getJsonArray("items");
      assertThat(items).hasSize(4);
    }
    Poll.until(WAIT, "an index scan of the tags index per call", () -> LedgerRows.count(gateway.databaseUrl(), scans) - before >= calls);
    // A common tag is served too (whichever plan the statistics pick), newest first.
    JsonArray common = new JsonObject(gateway.get("/api/v1/messages?tag=common&limit=3").body()).getJsonArray("items");
    assertThat(common).hasSize(3);
    assertThat(common.getJsonObject(0).getString("id")).isGreaterThan(common.getJsonObject(1).getString("id"));
  }
}
