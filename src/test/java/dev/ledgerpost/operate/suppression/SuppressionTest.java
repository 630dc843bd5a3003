package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.CommandLineRun;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The suppression list end to end (docs/design.md §8.8): entries added and removed through the admin API refuse a
 * recipient at RCPT (the others of the same message are relayed) and in the send API (422), per scope; their events on
 * the hub; expiry by the gateway's clock and the expiry job; erasure; a second gateway on the same ledger.
 */
class SuppressionTest {
  static final String CAROL_KEY = "suppression-test-carol";
  static final String DAVE_KEY = "suppression-test-dave";
  static final Duration WAIT = Duration.ofSeconds(20);
  static final MutableClock CLOCK = new MutableClock(Instant.now());
  static WebhookReceiver webhooks;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(CAROL_KEY, "carol:1000", DAVE_KEY, "dave:1000")).toString())
      .with("node.id", "first")
      .with("node.heartbeatInterval", "200ms")
      .with("suppression.refreshInterval", "200ms")
      .with("suppression.categoryTtl", "complaint=365d")
      .with("notify.pollInterval", "100ms")
      .with("notify.pruneInterval", "1s")
      .with("webhooks.pollInterval", "100ms")
      .configure((g, o) -> {
        webhooks = g.closeAfter(GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(200))));
        o.put("webhooks.endpoints", List.of(Map.of("name", "ops", "url", webhooks.url("/hook"),
            "secret", WebhookDeliveryTest.secret(5), "events", List.of("suppression.added", "suppression.removed"))));
      })
      .clock(CLOCK);

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aSuppressedRecipientIsRefusedAtRcptAndTheOtherIsRelayed() throws Exception {
    try (WsTestClient hub = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
      assertThat(hub.next(WAIT).getString("type")).isEqualTo("hello");
      JsonObject added = add("Gone@Example.ORG", "global", "mailbox closed, ticket 42", 201);
      assertThat(added.getString("address")).isEqualTo("Gone@example.org"); // domain lower-cased, local part as given
      assertThat(added.getString("source")).isEqualTo("operator");
      assertThat(added.getString("addedBy")).isEqualTo("ops");
      JsonObject event = suppressionEvent(hub);
      assertThat(event.getString("event")).isEqualTo("suppression.added");
      assertThat(event.getJsonObject("data").getString("reason")).isEqualTo("mailbox closed, ticket 42");
      assertThat(event.getString("messageId")).isEqualTo(added.getString("id"));
      Poll.until(WAIT, "the webhook endpoint gets the event", () -> webhooks.requests().stream()
          .anyMatch(r -> r.id().equals(event.getString("id")) && r.body().contains("\"suppression.added\"")));

      int before = gateway.downstream().messages().size();
      try (SmtpTestClient c = client()) {
        expect(c.command("MAIL FROM:<app@example.com>"), "250");
        String refused = c.command("RCPT TO:<Gone@example.org>");
        assertThat(refused).startsWith("550 5.1.1 <Gone@example.org> suppressed since "
            + OffsetDateTime.now(ZoneOffset.UTC).toLocalDate() + ": mailbox closed, ticket 42");
        expect(c.command("RCPT TO:<kept@example.org>"), "250");
        expect(c.command("DATA"), "354");
        c.send("Subject: s\r\n\r\nbody\r\n.\r\n");
        expect(c.reply(), "250");
      }
      ScriptedSmtpServer.Received got = gateway.downstream().messages().get(before);
      assertThat(got.recipients()).containsExactly("kept@example.org");
      assertThat(metric("ledgerpost_suppressed_total{channel=\"smtp\"}")).isGreaterThanOrEqualTo(1.0);

      JsonObject removed = remove(added.getString("id"));
      assertThat(removed.getString("id")).isEqualTo(added.getString("id"));
      JsonObject gone = suppressionEvent(hub);
      assertThat(gone.getString("event")).isEqualTo("suppression.removed");
      assertThat(gone.getJsonObject("data").getString("removedBy")).isEqualTo("ops");
      // This node's own change applies before its answer: no wait.
      try (SmtpTestClient c = client()) {
        assertThat(c.sendMail("app@example.com", List.of("Gone@example.org"), "Subject: s\r\n\r\nbody")).startsWith("250");
      }
    }
  }

  @Test
  void aUserScopedEntryRefusesOnlyThatUsersMail() throws Exception {
    add("ann@example.net", "user:carol", "asked carol to stop", 201);
    HttpResponse<String> refused = gateway.sendClient().send(CAROL_KEY, null, send("ann@example.net", "bob@example.net"));
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
    JsonArray suppressed = new JsonObject(refused.body()).getJsonArray("suppressed");
    assertThat(suppressed).hasSize(1);
    assertThat(suppressed.getJsonObject(0).getString("address")).isEqualTo("ann@example.net");
    assertThat(suppressed.getJsonObject(0).getString("reason")).isEqualTo("asked carol to stop");
    assertThat(suppressed.getJsonObject(0).getString("scope")).isEqualTo("user:carol");
    assertThat(metric("ledgerpost_suppressed_total{channel=\"http\"}")).isGreaterThanOrEqualTo(1.0);

    HttpResponse<String> dave = gateway.sendClient().send(DAVE_KEY, null, send("ann@example.net"));
    assertThat(dave.statusCode()).as(dave.body()).isEqualTo(200);
    try (SmtpTestClient c = client()) { // unauthenticated relay: only global entries apply
      assertThat(c.sendMail("app@example.com", List.of("ann@example.net"), "Subject: s\r\n\r\nbody")).startsWith("250");
    }

    JsonObject listed = new JsonObject(gateway.get("/api/v1/suppressions?scope=user:carol").body());
    assertThat(listed.getJsonArray("entries")).hasSize(1);
    HttpResponse<String> r = delete("/api/v1/suppressions?address=ann%40example.net&scope=user%3Acarol");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    HttpResponse<String> after = gateway.sendClient().send(CAROL_KEY, null, send("ann@example.net"));
    assertThat(after.statusCode()).as(after.body()).isEqualTo(200);
  }

  @Test
  void allowPartialSendsToTheRestAndNamesTheSuppressedOnes() throws Exception {
    JsonObject entry = add("partial@example.net", "global", "hard bounce", 201);
    int before = gateway.downstream().messages().size();
    JsonObject request = send("partial@example.net", "whole@example.net").put("allowPartial", true);
    HttpResponse<String> sent = gateway.sendClient().send(DAVE_KEY, "partial-key-1", request);
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    JsonObject answer = new JsonObject(sent.body());
    assertThat(answer.getString("status")).isEqualTo("SENT");
    assertThat(answer.getJsonArray("suppressed").getJsonObject(0).getString("address")).isEqualTo("partial@example.net");
    assertThat(gateway.downstream().messages().get(before).recipients()).containsExactly("whole@example.net");
    // The key's replay is the answer first given, suppressed recipients included.
    HttpResponse<String> replay = gateway.sendClient().send(DAVE_KEY, "partial-key-1", request);
    assertThat(replay.statusCode()).isEqualTo(200);
    assertThat(new JsonObject(replay.body()).getJsonArray("suppressed")).hasSize(1);
    assertThat(gateway.downstream().messages()).hasSize(before + 1);

    HttpResponse<String> none = gateway.sendClient().send(DAVE_KEY, null, send("partial@example.net").put("allowPartial", true));
    assertThat(none.statusCode()).as("nobody left to send to: " + none.body()).isEqualTo(422);
    remove(entry.getString("id"));
  }

  @Test
  void anExpiredEntryStopsApplyingAndIsDeleted() throws Exception {
    String expires = OffsetDateTime.ofInstant(CLOCK.instant().plus(Duration.ofHours(1)), ZoneOffset.UTC).toString();
    JsonObject body = new JsonObject().put("address", "brief@example.com").put("reason", "for an hour").put("expiresAt", expires);
    HttpResponse<String> r = gateway.post("/api/v1/suppressions", body.encode(), "X-Operator", "ops");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<brief@example.com>"), "550");
      expect(c.command("DATA"), "554 5.5.1"); // its only recipient was refused: none is valid
    }
    CLOCK.advance(Duration.ofHours(2));
    try (SmtpTestClient c = client()) {
      assertThat(c.sendMail("app@example.com", List.of("brief@example.com"), "Subject: s\r\n\r\nbody")).startsWith("250");
    }
    Poll.until(WAIT, "the expiry job deletes the entry", () -> LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM suppressions WHERE address = 'brief@example.com'") == 0);
  }

  @Test
  void erasureRemovesTheAddressesEntries() throws Exception {
    JsonObject kept = add("kept.after.erasure@example.com", "global", "bounced", 201);
    add("erase.me@example.com", "global", "bounced", 201);
    add("erase.me@example.com", "user:dave", "bounced for dave", 201);
    HttpResponse<String> r = gateway.post("/api/v1/erasures", new JsonObject().put("address", "erase.me@example.com").encode(),
        "X-Operator", "dpo");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(new JsonObject(r.body()).getJsonObject("rows").getLong("suppressions")).isEqualTo(2L);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM suppressions WHERE address ILIKE '%erase.me%'"))
        .isZero();
    Poll.until(WAIT, "this node's copy drops the erased entries", () -> {
      try (SmtpTestClient c = client()) {
        expect(c.command("MAIL FROM:<app@example.com>"), "250");
        return c.command("RCPT TO:<erase.me@example.com>").startsWith("250");
      }
    });

    // A ledger export after it carries the list as the table holds it: the other entries, nothing of the erased address.
    java.nio.file.Path dir = GatewayHarness.tempDir("archive-");
    dev.ledgerpost.operate.archive.Manifest m = GatewayHarness.await(dev.ledgerpost.operate.archive.LedgerArchive.export(
        gateway.vertx(), gateway.gateway().part(dev.ledgerpost.ledger.LedgerPart.class).target(),
        new dev.ledgerpost.operate.archive.ArchiveKey.Location(dir.resolve("archive-key"), true), dir.resolve("archive"),
        dev.ledgerpost.platform.db.LedgerIds.lowest(Instant.EPOCH), dev.ledgerpost.platform.db.LedgerIds.lowest(CLOCK.instant()),
        "after-erasure", "n"));
    assertThat(m.erasures()).isPositive();
    String list;
    try (var in = new java.util.zip.GZIPInputStream(java.nio.file.Files.newInputStream(dir.resolve("archive")
        .resolve(m.suppressions().file())))) {
      list = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    assertThat(list).contains("\"id\":\"" + kept.getString("id") + "\"", "kept.after.erasure@example.com")
        .doesNotContainIgnoringCase("erase.me");
    assertThat(list.lines().count()).isEqualTo(m.suppressions().rows());
    remove(kept.getString("id"));
  }

  @Test
  void aSecondGatewaySeesAnEntryAddedThroughTheFirstWithinTheBound() throws Exception {
    Vertx other = Vertx.vertx(); // a bus of its own
    try {
      Map<String, Object> o = GatewayHarness.defaults(gateway.downstream().port());
      o.put("ledger.url", gateway.databaseUrl());
      o.put("node.id", "second");
      o.put("node.heartbeatInterval", "200ms");
      o.put("suppression.refreshInterval", "200ms");
      try (GatewayHarness second = GatewayHarness.start(other, o)) {
        add("far@example.com", "global", "added on the first", 201);
        long added = System.nanoTime();
        // The documented bound is one refreshInterval plus a read; the deadline leaves a slow CI room.
        Poll.until(Duration.ofSeconds(5), "the second gateway refuses the recipient", () -> {
          try (SmtpTestClient c = new SmtpTestClient(second.smtpPort())) {
            c.reply();
            expect(c.command("EHLO client.test"), "250");
            expect(c.command("MAIL FROM:<app@example.com>"), "250");
            return c.command("RCPT TO:<far@example.com>").startsWith("550 5.1.1");
          }
        });
        assertThat(Duration.ofNanos(System.nanoTime() - added)).isLessThan(Duration.ofSeconds(5));
      }
    } finally {
      GatewayHarness.await(other.close());
    }
  }

  @Test
  void anOperatorAddsListsAndRemovesAnEntryFromTheShell() throws Exception {
    String api = "http://127.0.0.1:" + gateway.httpPort();
    CommandLineRun add = CommandLineRun.run("suppressions", "add", "shell@example.com", "--reason", "complaint 7",
        "--operator", "eve", "--api", api, "--token", "test-admin-token");
    assertThat(add.exit()).as(add.err()).isZero();
    assertThat(add.out()).contains("suppressed shell@example.com (global) until", "complaint 7");
    CommandLineRun list = CommandLineRun.run("suppressions", "list", "--address", "shell@example.com", "--api", api,
        "--token", "test-admin-token");
    assertThat(list.exit()).as(list.err()).isZero();
    assertThat(list.out()).contains("shell@example.com", "complaint 7", "1 entry");
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<shell@example.com>"), "550");
    }
    CommandLineRun remove = CommandLineRun.run("suppressions", "remove", "shell@example.com", "--operator", "eve", "--api", api,
        "--token", "test-admin-token");
    assertThat(remove.exit()).as(remove.err()).isZero();
    assertThat(remove.out()).contains("removed shell@example.com (global)");
    CommandLineRun again = CommandLineRun.run("suppressions", "remove", "shell@example.com", "--api", api, "--token",
        "test-admin-token");
    assertThat(again.exit()).isEqualTo(1);
    assertThat(again.err()).contains("404");

    java.nio.file.Path csv = GatewayHarness.tempDir("suppressions-").resolve("list.csv");
    java.nio.file.Files.writeString(csv, "address,scope,reason\nfile1@example.com,,from a file\nfile2@example.com,global,too\n");
    CommandLineRun imported = CommandLineRun.run("suppressions", "import", csv.toString(), "--operator", "eve", "--api", api,
        "--token", "test-admin-token");
    assertThat(imported.exit()).as(imported.err()).isZero();
    assertThat(imported.out()).contains("imported: 2 added, 0 renewed");
    for (String a : List.of("file1@example.com", "file2@example.com")) {
      assertThat(CommandLineRun.run("suppressions", "remove", a, "--api", api, "--token", "test-admin-token").exit()).isZero();
    }
  }

  @Test
  void anEntryExpiresAfterItsCategorysTtlElseSuppressionTtl() throws Exception {
    // PostgreSQL keeps microseconds: a second's margin below.
    OffsetDateTime now = OffsetDateTime.ofInstant(CLOCK.instant(), ZoneOffset.UTC).minusSeconds(1);
    JsonObject complaint = new JsonObject(gateway.post("/api/v1/suppressions", new JsonObject().put("address", "c@example.com")
        .put("reason", "spam complaint").put("category", "complaint").encode(), "X-Operator", "ops").body());
    assertThat(OffsetDateTime.parse(complaint.getString("expiresAt"))).isBetween(now.plusDays(365), now.plusDays(365).plusMinutes(5));
    JsonObject plain = add("p@example.com", "global", "no category", 201);
    assertThat(OffsetDateTime.parse(plain.getString("expiresAt"))).isBetween(now.plusDays(90), now.plusDays(90).plusMinutes(5));
    remove(complaint.getString("id"));
    remove(plain.getString("id"));
  }

  @Test
  void aSendKeyManagesItsOwnUsersEntriesOnly() throws Exception {
    SendClient api = gateway.sendClient();
    JsonObject global = add("everyone@example.com", "global", "for all", 201);
    HttpResponse<String> added = api.post("/api/v1/suppressions", CAROL_KEY,
        new JsonObject().put("address", "own@example.com").put("reason", "carol's customer asked").encode());
    assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
    JsonObject own = new JsonObject(added.body());
    assertThat(own.getString("scope")).isEqualTo("user:carol");
    assertThat(own.getString("addedBy")).isEqualTo("user:carol");

    HttpResponse<String> notHers = api.post("/api/v1/suppressions", CAROL_KEY,
        new JsonObject().put("address", "x@example.com").put("scope", "global").put("reason", "r").encode());
    assertThat(notHers.statusCode()).as(notHers.body()).isEqualTo(403);
    HttpResponse<String> listed = api.get("/api/v1/suppressions", CAROL_KEY);
    assertThat(listed.statusCode()).as(listed.body()).isEqualTo(200);
    assertThat(new JsonObject(listed.body()).getJsonArray("entries").stream().map(e -> ((JsonObject) e).getString("scope")))
        .containsOnly("user:carol");
    assertThat(api.get("/api/v1/suppressions?scope=global", CAROL_KEY).statusCode()).isEqualTo(403);

    assertThat(delete("/api/v1/suppressions/" + own.getString("id"), DAVE_KEY).statusCode()).isEqualTo(404);
    assertThat(delete("/api/v1/suppressions/" + global.getString("id"), CAROL_KEY).statusCode()).isEqualTo(404);
    assertThat(delete("/api/v1/suppressions/" + own.getString("id"), CAROL_KEY).statusCode()).isEqualTo(200);
    assertThat(api.get("/api/v1/suppressions", "not-a-key").statusCode()).isEqualTo(401);
    remove(global.getString("id"));
  }

  @Test
  void anImportAddsEveryLineOrNone() throws Exception {
    HttpResponse<String> r = importCsv("address,scope,reason\nimp1@example.com,,bounced, twice\n\n"
        + "imp2@example.com,user:carol,\"asked, politely\"\n");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(new JsonObject(r.body()).getInteger("added")).isEqualTo(2);
    JsonArray imp1 = new JsonObject(gateway.get("/api/v1/suppressions?address=imp1@example.com").body()).getJsonArray("entries");
    assertThat(imp1.getJsonObject(0).getString("reason")).isEqualTo("bounced, twice");
    assertThat(imp1.getJsonObject(0).getString("scope")).isEqualTo("global");
    JsonArray imp2 = new JsonObject(gateway.get("/api/v1/suppressions?address=imp2@example.com").body()).getJsonArray("entries");
    assertThat(imp2.getJsonObject(0).getString("reason")).isEqualTo("asked, politely");
    try (SmtpTestClient c = client()) {
      expect(c.command("MAIL FROM:<app@example.com>"), "250");
      expect(c.command("RCPT TO:<imp1@example.com>"), "550 5.1.1");
    }

    HttpResponse<String> bad = importCsv("address,scope,reason\n# a comment\nimp3@example.com,,fine\nnot-an-address,,x\n"
        + "imp4@example.com,nobody,y\n");
    assertThat(bad.statusCode()).as(bad.body()).isEqualTo(400);
    assertThat(new JsonObject(bad.body()).getString("detail")).as("the file's line numbers, every bad one").isEqualTo(
        "line 4: address not-an-address is not a mailbox (local-part@domain); line 5: scope must be `global` or "
            + "`user:<name>`; nothing was imported");
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM suppressions WHERE address = 'imp3@example.com'"))
        .isZero();
    for (String a : List.of("imp1@example.com", "imp2@example.com")) {
      for (Object e : new JsonObject(gateway.get("/api/v1/suppressions?address=" + a).body()).getJsonArray("entries")) {
        remove(((JsonObject) e).getString("id"));
      }
    }
  }

  private HttpResponse<String> importCsv(String csv) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + "/api/v1/suppressions/import"))
        .timeout(Duration.ofSeconds(10)).header("Authorization", "Bearer " + gateway.gateway().adminToken())
        .header("X-Operator", "ops").header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(csv)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void badEntriesAreRefused() throws Exception {
    HttpResponse<String> noScope = gateway.post("/api/v1/suppressions",
        new JsonObject().put("address", "x@example.com").put("scope", "tenant").put("reason", "r").encode(), "X-Operator", "ops");
    assertThat(noScope.statusCode()).as(noScope.body()).isEqualTo(400);
    HttpResponse<String> noMailbox = gateway.post("/api/v1/suppressions",
        new JsonObject().put("address", "not-an-address").put("reason", "r").encode(), "X-Operator", "ops");
    assertThat(noMailbox.statusCode()).as(noMailbox.body()).isEqualTo(400);
    HttpResponse<String> missing = delete("/api/v1/suppressions/00000000-0000-0000-0000-000000000000");
    assertThat(missing.statusCode()).as(missing.body()).isEqualTo(404);
  }

  /** The hub's next suppression event (the mail sent meanwhile has its own events). */
  private static JsonObject suppressionEvent(WsTestClient hub) throws Exception {
    while (true) {
      JsonObject e = hub.nextEvent(WAIT);
      if (e.getString("event", "").startsWith("suppression.")) {
        return e;
      }
    }
  }

  private static JsonObject add(String address, String scope, String reason, int status) throws Exception {
    JsonObject body = new JsonObject().put("address", address).put("scope", scope).put("reason", reason);
    HttpResponse<String> r = gateway.post("/api/v1/suppressions", body.encode(), "X-Operator", "ops");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    return new JsonObject(r.body());
  }

  private JsonObject remove(String id) throws Exception {
    HttpResponse<String> r = delete("/api/v1/suppressions/" + id);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body());
  }

  private HttpResponse<String> delete(String path) throws Exception {
    return delete(path, gateway.gateway().adminToken());
  }

  private HttpResponse<String> delete(String path, String token) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
        .timeout(Duration.ofSeconds(10)).header("Authorization", "Bearer " + token)
        .header("X-Operator", "ops").DELETE().build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonObject send(String... to) {
    JsonArray recipients = new JsonArray();
    for (String t : to) {
      recipients.add(t);
    }
    return new JsonObject().put("from", "app@example.com").put("to", recipients).put("subject", "s").put("text", "body\n");
  }

  private static SmtpTestClient client() throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    c.reply();
    expect(c.command("EHLO client.test"), "250");
    return c;
  }

  private static double metric(String series) throws Exception {
    for (String line : gateway.get("/metrics", null).body().split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    throw new AssertionError("no series " + series);
  }

  private static void expect(String reply, String code) {
    assertThat(reply).startsWith(code);
  }
}
