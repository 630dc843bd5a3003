package dev.ledgerpost.operate.erasure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.CommandLineRun;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WebhookReceiver;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Erasure end to end (docs/design.md §8.6): mail relayed over real SMTP and the send API, a resolution, a reconcile
 * proposal and webhook deliveries put an address in every kind of row; after {@code POST /api/v1/erasures} a scan of
 * every text, JSON and text-array column of every table and view of the schema finds it nowhere, while every other
 * address, every row count and every status is as it was.
 */
class ErasureTest {
  static final String API_KEY = "erasure-test-send-key";
  static final String ERASED = "a@example.com";
  /** Addresses that must survive the erasure, none of which contains the erased one. */
  static final List<String> OTHERS = List.of("bob@example.org", "other@example.org", "c@example.net", "x@example.org",
      "y@example.net", "carol@example.com", "b@example.net");
  static final Duration WAIT = Duration.ofSeconds(30);

  WebhookReceiver receiver;
  Path dataRoot;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(API_KEY, "carol:1000")).toString())
      .with("webhooks.pollInterval", "50ms")
      .with("notify.pollInterval", "100ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public List<String> ehloKeywords() {
          return List.of("PIPELINING", "8BITMIME", "ENHANCEDSTATUSCODES", "DSN");
        }

        /** Replies that name the addresses, as real smarthosts' do: they are kept in the ledger too. */
        @Override
        public String rcpt(String to) {
          return "250 2.1.5 " + to + " Recipient ok";
        }

        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n + " for " + String.join(",", message.recipients()));
        }
      })
      .configure((g, config) -> {
        receiver = GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(200)));
        config.put("webhooks.endpoints", List.of(Map.of("name", "app", "url", receiver.url("/hooks"),
            "secret", "whsec_" + Base64.getEncoder().encodeToString(new byte[32]))));
        dataRoot = GatewayHarness.tempDir("erasure-");
        // No ledger.erasureKey: the key is generated next to the data directory on the first erasure.
        config.put("ledger.dataDir", dataRoot.resolve("pg").toString());
      });

  @AfterEach
  void stopReceiver() throws Exception {
    if (receiver != null) {
      receiver.close();
    }
  }

  String url() {
    return gateway.databaseUrl();
  }

  @Test
  void anErasureReplacesTheAddressInEveryRowAndChangesNothingElse() throws Exception {
    relayMailInvolvingTheAddress();

    Map<String, Long> holdingBefore = cellsHolding(ERASED);
    assertThat(holdingBefore.keySet()).as("the address is in every kind of row before").contains("messages.mail_from",
        "messages.downstream_reply", "recipients.address", "recipients.rcpt_reply", "recipients.dsn_orcpt", "outbox.payload",
        "reconcile_proposals.evidence", "webhook_deliveries.body", "idempotency_keys.response", "resolutions.note",
        "outbox_events.payload");
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM recipients WHERE dsn_orcpt = 'rfc822;A+40example.com'"))
        .as("an ORCPT with the address in xtext, which a plain search does not see").isEqualTo(1);
    assertThat(cellsHolding("header-only@example.org")).as("bodies and headers are not in the ledger").isEmpty();
    assertThat(cellsHolding("secret-subject")).isEmpty();
    Map<String, Long> rowsHolding = rowsHoldingPerTable(ERASED, "A+40example.com");
    Map<String, Map<String, Long>> othersBefore = new TreeMap<>();
    for (String other : OTHERS) {
      othersBefore.put(other, cellsHolding(other));
      assertThat(othersBefore.get(other)).as(other + " is in the ledger before").isNotEmpty();
    }
    Map<String, Long> countsBefore = rowCounts();
    Map<String, String> statusesBefore = statuses();

    HttpResponse<String> r;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      r = gateway.post("/api/v1/erasures", new JsonObject().put("address", "A@Example.COM")
          .put("reason", "ticket 42: a@example.com asked for it").encode(), "X-Operator", "dpo");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      String hash = new JsonObject(r.body()).getString("addressHash");
      List<LogCapture.Line> lines = audit.linesContaining("audit_event=erasure", hash, "requested_by=dpo");
      assertThat(lines).hasSize(1);
      assertThat(lines.get(0).message().toLowerCase(Locale.ROOT)).doesNotContain(ERASED);
    }
    JsonObject erased = new JsonObject(r.body());

    // The hash is the HMAC of the lower-cased address under the key generated into the data directory.
    Path keyFile = dataRoot.resolve("erasure-key");
    String key = Files.readString(keyFile).trim();
    assertThat(key).matches("[0-9a-f]{64}");
    String hash = "erased:" + hmac(key, ERASED);
    assertThat(erased.getString("addressHash")).isEqualTo(hash);
    assertThat(erased.getString("requestedBy")).isEqualTo("dpo");
    assertThat(erased.getString("reason")).isEqualTo("ticket 42: " + hash + " asked for it");

    // Nowhere, in any column of any table or view; every row that held it now holds the hash.
    assertThat(cellsHolding(ERASED)).as("the address after the erasure").isEmpty();
    Map<String, Long> holdingHash = cellsHolding(hash);
    holdingBefore.forEach((column, n) -> assertThat(holdingHash.get(column)).as(column)
        .isEqualTo(column.equals("recipients.dsn_orcpt") ? n + 1 : n));
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM recipients WHERE dsn_orcpt ILIKE '%a+40example.com%'")).isZero();
    JsonObject rows = erased.getJsonObject("rows");
    rowsHolding.forEach((table, n) -> assertThat(rows.getLong(table)).as(table).isEqualTo(n));
    assertThat(rows.fieldNames()).as("every table with text was looked at").containsAll(rowsHolding.keySet())
        .contains("nodes", "webhook_attempts", "notify_receipts").doesNotContain("erasures", "flyway_schema_history");
    assertThat(erased.getLong("total")).isEqualTo(rowsHolding.values().stream().mapToLong(Long::longValue).sum()).isPositive();
    assertThat(LedgerRows.string(url(), "SELECT count(*) FROM messages WHERE mail_from = '" + hash + "'"))
        .as("the sender written A@Example.com and the inserted a@example.com").isEqualTo("2");

    for (String other : OTHERS) {
      assertThat(cellsHolding(other)).as(other + " untouched").isEqualTo(othersBefore.get(other));
    }
    Map<String, Long> countsAfter = rowCounts();
    assertThat(countsAfter.remove("erasures")).isEqualTo(countsBefore.remove("erasures") + 1);
    assertThat(countsAfter).isEqualTo(countsBefore);
    assertThat(statuses()).isEqualTo(statusesBefore);

    // The erasures row: what the answer said, and it can be neither changed nor removed.
    long id = erased.getLong("id");
    try (Connection c = TestDatabase.connect(url()); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT address_hash, key_id, requested_by, reason, rows_changed::text, requested_at "
          + "FROM erasures WHERE id = " + id)) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo(hash);
        assertThat(rs.getString(2)).isEqualTo(erased.getString("keyId"));
        assertThat(rs.getString(3)).isEqualTo("dpo");
        assertThat(rs.getString(4)).isEqualTo("ticket 42: " + hash + " asked for it");
        assertThat(new JsonObject(rs.getString(5))).isEqualTo(rows);
        assertThat(rs.getTimestamp(6).toInstant()).isAfter(Instant.now().minusSeconds(300));
      }
      for (String change : List.of("UPDATE erasures SET reason = 'x' WHERE id = " + id, "DELETE FROM erasures WHERE id = " + id,
          "TRUNCATE erasures")) {
        assertThatThrownBy(() -> st.execute(change)).as(change).isInstanceOf(SQLException.class)
            .hasMessageContaining("erasures is append-only");
      }
    }
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM erasures")).isEqualTo(1);

    // Once more: nothing left to change, the same hash, a second record.
    JsonObject again = new JsonObject(gateway.post("/api/v1/erasures", "{\"address\": \"a@example.com\", \"operator\": \"dpo\"}")
        .body());
    assertThat(again.getString("addressHash")).isEqualTo(hash);
    assertThat(again.getLong("total")).isZero();
    assertThat(again.getLong("id")).isGreaterThan(id);
  }

  @Test
  void aMalformedAddressOrNoOperatorIsABadRequestAndChangesNothing() throws Exception {
    LedgerRows.insert(url(), UUID.randomUUID(), "SENT", "ACCEPTED", Instant.now(), null); // mail_from a@example.com
    String[][] cases = {
        {"{\"address\": \"not-an-address\", \"operator\": \"dpo\"}", "not a mailbox"},
        {"{\"address\": \"a@@example.com\", \"operator\": \"dpo\"}", "not a mailbox"},
        {"{\"address\": \"@example.com\", \"operator\": \"dpo\"}", "not a mailbox"},
        {"{\"address\": \"<a@example.com>\", \"operator\": \"dpo\"}", "not a mailbox"},
        {"{\"address\": \"a b@example.com\", \"operator\": \"dpo\"}", "not a mailbox"},
        {"{\"address\": \"a@example.com\"}", "operator"},
        {"{\"operator\": \"dpo\"}", "address"},
        {"{\"address\": \"a@example.com\", \"operator\": \"dpo\", \"extra\": 1}", "extra"},
        {"{\"address\": 7, \"operator\": \"dpo\"}", "address"},
    };
    for (String[] c : cases) {
      HttpResponse<String> r = gateway.post("/api/v1/erasures", c[0]);
      SendClient.assertProblem(r, 400, c[0]);
      assertThat(new JsonObject(r.body()).getString("detail")).as(c[0]).contains(c[1]);
    }
    SendClient.assertProblem(gateway.sendClient().post("/api/v1/erasures", null,
        "{\"address\": \"a@example.com\", \"operator\": \"dpo\"}"), 401);
    SendClient.assertProblem(gateway.sendClient().post("/api/v1/erasures", API_KEY,
        "{\"address\": \"a@example.com\", \"operator\": \"dpo\"}"), 401, "a send API key is not the admin token");
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM messages WHERE mail_from = 'a@example.com'")).isEqualTo(1);
    assertThat(LedgerRows.count(url(), "SELECT count(*) FROM erasures")).isZero();
    assertThat(Files.exists(dataRoot.resolve("erasure-key"))).as("no key is made for a refused request").isFalse();
  }

  @Test
  void theCommandLinePrintsTheRowsChangedPerTable() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("x@example.org", List.of("c@example.net", "y@example.net"), "Subject: s\r\n\r\nbody"))
          .startsWith("250");
    }
    String api = "http://127.0.0.1:" + gateway.httpPort();
    CommandLineRun run = CommandLineRun.run("ledger", "erase", "--address", "C@example.net", "--reason", "ticket 7",
        "--operator", "dpo", "--api", api, "--token", "test-admin-token");
    assertThat(run.exit()).as(run.err()).isZero();
    String hash = LedgerRows.string(url(), "SELECT address_hash FROM erasures");
    JsonObject rows = new JsonObject(LedgerRows.string(url(), "SELECT rows_changed::text FROM erasures"));
    long total = rows.stream().mapToLong(e -> ((Number) e.getValue()).longValue()).sum();
    assertThat(rows.getLong("recipients")).as("its own row, and the other recipient's final reply naming it").isEqualTo(2);
    assertThat(run.out()).contains("erasure 1: " + total + " row(s) now hold " + hash, "requested by dpo");
    for (String table : rows.fieldNames()) {
      assertThat(run.out()).containsPattern("(?m)^  " + table + " +" + rows.getLong(table) + "$");
    }
    assertThat(cellsHolding("c@example.net")).isEmpty();
    assertThat(cellsHolding("y@example.net")).isNotEmpty();

    CommandLineRun bad = CommandLineRun.run("ledger", "erase", "--address", "nobody", "--operator", "dpo", "--api", api,
        "--token", "test-admin-token");
    assertThat(bad.exit()).isEqualTo(1);
    assertThat(bad.err()).contains("400", "not a mailbox");
    CommandLineRun usage = CommandLineRun.run("ledger", "erase", "--api", api, "--token", "test-admin-token");
    assertThat(usage.exit()).isEqualTo(2);
    assertThat(usage.err()).contains("--address");
  }

  /**
   * The address as sender (in two spellings), recipient, ORCPT, send API recipient with a stored idempotent answer,
   * a resolution's note, a reconcile proposal's evidence, and the webhook bodies of all of it; headers naming it and
   * others; and mail that does not involve it.
   */
  void relayMailInvolvingTheAddress() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("A@Example.com", List.of("bob@example.org"), "From: Ann <a@example.com>\r\nTo: bob@example.org\r\n"
          + "Cc: header-only@example.org\r\nSubject: secret-subject-1\r\n\r\nHi, a@example.com here")).startsWith("250");
      assertThat(c.command("MAIL FROM:<other@example.org>")).startsWith("250");
      assertThat(c.command("RCPT TO:<a@example.com> NOTIFY=FAILURE ORCPT=rfc822;a@example.com")).startsWith("250");
      assertThat(c.command("RCPT TO:<c@example.net> ORCPT=rfc822;A+40example.com")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("From: other@example.org\r\nTo: a@example.com\r\nSubject: secret-subject-2\r\n\r\nbody\r\n.\r\n");
      assertThat(c.reply()).startsWith("250");
      assertThat(c.sendMail("x@example.org", List.of("y@example.net"), "Reply-To: a@example.com\r\nSubject: secret-subject-3"
          + "\r\n\r\nnot involving it")).startsWith("250");
    }
    HttpResponse<String> sent = gateway.sendClient().send(API_KEY, "order-1", new JsonObject().put("from", "carol@example.com")
        .put("to", new JsonArray().add("A@example.com")).put("subject", "secret-subject-4").put("text", "hello"));
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);

    // An UNKNOWN message from a@example.com (LedgerRows' sender), a proposal about it, and its resolution.
    UUID unknown = UUID.randomUUID();
    LedgerRows.insert(url(), unknown, "UNKNOWN", "UNKNOWN", Instant.now(), "<u1@example.org>");
    try (Connection c = TestDatabase.connect(url()); PreparedStatement st = c.prepareStatement("""
        INSERT INTO reconcile_proposals (message_id, message_version, outcome, confidence, source, evidence_ref, evidence,
                                         state, decided_by)
        VALUES (?, 1, 'DELIVERED', 'weak', 'postfix-log', 'Q1', ?::jsonb, 'REJECTED', 'carol')""")) {
      st.setObject(1, unknown);
      st.setString(2, new JsonObject().put("summary", "from=<a@example.com> to=<b@example.net> status=sent")
          .put("lines", new JsonArray().add("Q1: from=<A@example.com>, size=10")).encode());
      st.executeUpdate();
    }
    HttpResponse<String> resolved = gateway.post("/api/v1/messages/" + unknown + "/resolution",
        "{\"outcome\": \"DELIVERED\", \"note\": \"Ann (a@example.com) confirmed by phone\"}", "X-Operator", "carol");
    assertThat(resolved.statusCode()).as(resolved.body()).isEqualTo(200);

    // Quiet before the snapshot: every event published and delivered to the webhook endpoint.
    Poll.until(WAIT, "every event published and delivered to the webhook", () ->
        LedgerRows.count(url(), "SELECT count(*) FROM outbox_events WHERE pub_seq IS NULL") == 0
            && LedgerRows.count(url(), "SELECT count(*) FROM webhook_deliveries WHERE state = 'DELIVERED'")
                == LedgerRows.count(url(), "SELECT count(*) FROM outbox_events")
            && LedgerRows.count(url(), "SELECT count(*) FROM messages WHERE status = 'PENDING'") == 0);
  }

  /** "table.column" -> how many of its values hold {@code needle}, ignoring case ({@link LedgerRows#cellsHolding}). */
  Map<String, Long> cellsHolding(String needle) throws Exception {
    return LedgerRows.cellsHolding(url(), needle);
  }

  /** Per base table: its rows holding any of {@code needles} in any column (what the erasure must change). */
  Map<String, Long> rowsHoldingPerTable(String... needles) throws Exception {
    Map<String, List<String>> byTable = new TreeMap<>();
    try (Connection c = TestDatabase.connect(url())) {
      List<String> tables = baseTables(c);
      for (String[] col : LedgerRows.textColumns(c)) {
        if (tables.contains(col[0])) {
          for (String needle : needles) {
            byTable.computeIfAbsent(col[0], t -> new ArrayList<>()).add("strpos(lower(\"" + col[1] + "\"::text), lower(?)) > 0");
          }
        }
      }
      Map<String, Long> rows = new TreeMap<>();
      for (Map.Entry<String, List<String>> t : byTable.entrySet()) {
        try (PreparedStatement st = c.prepareStatement("SELECT count(*) FROM \"" + t.getKey() + "\" WHERE "
            + String.join(" OR ", t.getValue()))) {
          for (int i = 0; i < t.getValue().size(); i++) {
            st.setString(i + 1, needles[i % needles.length]);
          }
          try (ResultSet rs = st.executeQuery()) {
            rs.next();
            rows.put(t.getKey(), rs.getLong(1));
          }
        }
      }
      rows.remove("erasures");
      return rows;
    }
  }

  List<String> baseTables(Connection c) throws SQLException {
    List<String> tables = new ArrayList<>();
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("""
        SELECT table_name FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'flyway_schema_history'
           AND table_name NOT IN (SELECT k.relname::text FROM pg_class k WHERE k.relispartition)""")) {
      while (rs.next()) {
        tables.add(rs.getString(1));
      }
    }
    return tables;
  }

  Map<String, Long> rowCounts() throws Exception {
    Map<String, Long> counts = new TreeMap<>();
    try (Connection c = TestDatabase.connect(url())) {
      for (String t : baseTables(c)) {
        counts.put(t, LedgerRows.count(url(), "SELECT count(*) FROM \"" + t + "\""));
      }
    }
    return counts;
  }

  /** Every message's status and version, every recipient's status, every delivery's and proposal's state. */
  Map<String, String> statuses() throws Exception {
    Map<String, String> s = new TreeMap<>();
    try (Connection c = TestDatabase.connect(url()); Statement st = c.createStatement()) {
      for (String q : List.of("SELECT 'm:' || id, status || ':' || version FROM messages",
          "SELECT 'r:' || message_id || ':' || idx, status FROM recipients",
          "SELECT 'w:' || id, state || ':' || attempts FROM webhook_deliveries",
          "SELECT 'p:' || id, state FROM reconcile_proposals",
          "SELECT 'i:' || owner || ':' || key, state FROM idempotency_keys")) {
        try (ResultSet rs = st.executeQuery(q)) {
          while (rs.next()) {
            s.put(rs.getString(1), rs.getString(2));
          }
        }
      }
    }
    assertThat(s).hasSizeGreaterThan(10);
    return s;
  }

  static String hmac(String key, String text) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
    return HexFormat.of().formatHex(mac.doFinal(text.getBytes(StandardCharsets.UTF_8)));
  }
}
