package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 28 over real SMTP sockets on both sides (docs/contract.md §1.13): a client's retry of a message the ledger holds
 * is answered from the earlier row and never reaches the smarthost twice; what is not the same message is relayed. The
 * smarthost's answer to each final dot is set per test ({@link #dot}), so an earlier row can be SENT, FAILED_TEMP or
 * UNKNOWN (the socket closed after the dot), or still in delivery (the answer held back).
 */
class ResubmissionTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Pattern QUEUED = Pattern.compile("queued as ([0-9a-f-]{36})");

  /** The smarthost's reply to the n-th final dot (null: the socket is closed without one). */
  private final AtomicReference<Function<Integer, Future<String>>> dot =
      new AtomicReference<>(n -> Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n));

  /** Each test starts its gateway ({@link #start}): some with settings of their own. */
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual()
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return dot.get().apply(n);
        }
      });

  /** Two relay networks, each of one loopback address: a client from either relays without AUTH under its own rule. */
  private void start(Object... settings) throws Exception {
    java.util.Map<String, Object> config = GatewayHarness.defaults(gateway.downstream().port());
    config.put("smtp.relayNetworks", List.of("127.0.0.1/32", "127.0.0.2/32"));
    for (int i = 0; i < settings.length; i += 2) {
      config.put((String) settings[i], settings[i + 1]);
    }
    gateway.begin(config);
  }

  static String message(String messageId, String body) {
    return "From: a@example.com\r\nTo: b@example.net\r\n" + (messageId == null ? "" : "Message-ID: " + messageId + "\r\n")
        + "Subject: retry\r\n\r\n" + body + "\r\n";
  }

  private String send(String from, List<String> to, String message) throws Exception {
    return send("127.0.0.1", from, to, message);
  }

  private String send(String localAddress, String from, List<String> to, String message) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), localAddress)) {
      c.reply();
      return c.sendMail(from, to, message);
    }
  }

  /** Sends {@code m} once while the smarthost closes its socket after the first final dot: its row is UNKNOWN. */
  private UUID sentAndUnknown(String m) throws Exception {
    dot.set(n -> Future.succeededFuture(n == 1 ? null : "250 2.0.0 Ok: queued as DS" + n));
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("451 4.4.2");
    return UUID.fromString(LedgerRows.string(url(), "SELECT id FROM messages WHERE status = 'UNKNOWN'"));
  }

  private static UUID queued(String reply) {
    Matcher m = QUEUED.matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return UUID.fromString(m.group(1));
  }

  private String url() {
    return gateway.databaseUrl();
  }

  private long count(String sql) throws Exception {
    return LedgerRows.count(url(), sql);
  }

  @Test
  void aRetryOfARelayedMessageIsAnsweredFromTheLedgerAndRecorded() throws Exception {
    start();
    String m = message("<r1@example.com>", "one");
    UUID first = queued(send("a@example.com", List.of("b@example.net"), m));

    String again = send("a@example.com", List.of("b@example.net"), m);
    assertThat(again).startsWith("250 2.0.0 Ok: already relayed as " + first);
    assertThat(gateway.downstream().messages()).as("one copy at the smarthost").hasSize(1);
    assertThat(gateway.downstream().commands()).as("the retry's transaction was reset downstream").contains("RSET");
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(1);
    assertThat(LedgerRows.string(url(), "SELECT outcome || '|' || client_ip || '|' || helo FROM resubmissions WHERE message_id = '"
        + first + "'")).isEqualTo("already_relayed|127.0.0.1|client.test");
    assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.resubmitted' AND message_id = '" + first + "'"
        + " AND payload->>'outcome' = 'already_relayed'")).isEqualTo(1);

    // A third try, with the recipients in another order: the same envelope, the same answer.
    String third = send("a@example.com", List.of("b@example.net"), m);
    assertThat(third).startsWith("250 2.0.0 Ok: already relayed as " + first);
    assertThat(count("SELECT count(*) FROM resubmissions")).isEqualTo(2);
    String metrics = gateway.get("/metrics").body();
    assertThat(metrics).contains("ledgerpost_resubmissions_total{outcome=\"already_relayed\"} 2.0");
  }

  @Test
  void theSameEnvelopeInAnotherOrderIsTheSameMessage() throws Exception {
    start();
    String m = message("<order@example.com>", "order");
    UUID first = queued(send("a@example.com", List.of("b@example.net", "c@example.net"), m));
    assertThat(send("a@example.com", List.of("c@example.net", "b@example.net"), m))
        .startsWith("250 2.0.0 Ok: already relayed as " + first);
    assertThat(gateway.downstream().messages()).hasSize(1);
  }

  @Test
  void whatIsNotTheSameMessageIsRelayed() throws Exception {
    start();
    String m = message("<same@example.com>", "body");
    queued(send("a@example.com", List.of("b@example.net"), m));
    // The same Message-ID with another body, another sender, another recipient set, another relay network.
    queued(send("a@example.com", List.of("b@example.net"), message("<same@example.com>", "another body")));
    queued(send("z@example.com", List.of("b@example.net"), m));
    queued(send("a@example.com", List.of("b@example.net", "c@example.net"), m));
    queued(send("127.0.0.2", "a@example.com", List.of("b@example.net"), m));
    // No Message-ID, twice; two Message-IDs, twice.
    String none = message(null, "no id");
    queued(send("a@example.com", List.of("b@example.net"), none));
    queued(send("a@example.com", List.of("b@example.net"), none));
    String two = "Message-ID: <two.1@example.com>\r\n" + message("<two.2@example.com>", "two ids");
    queued(send("a@example.com", List.of("b@example.net"), two));
    queued(send("a@example.com", List.of("b@example.net"), two));

    assertThat(gateway.downstream().messages()).hasSize(9);
    assertThat(count("SELECT count(*) FROM resubmissions")).isZero();
    assertThat(count("SELECT count(*) FROM resubmission_claims")).as("no claim without exactly one Message-ID").isEqualTo(5);
  }

  @Test
  void aRetryAfterTheWindowIsNewMail() throws Exception {
    start("smtp.resubmission.window", "1s");
    String m = message("<window@example.com>", "w");
    queued(send("a@example.com", List.of("b@example.net"), m));
    Poll.until(WAIT, "the claim expired", () -> count("SELECT count(*) FROM resubmission_claims WHERE expires_at < now()") == 1);
    queued(send("a@example.com", List.of("b@example.net"), m));
    assertThat(gateway.downstream().messages()).hasSize(2);
    assertThat(count("SELECT count(*) FROM messages WHERE resubmission_of IS NOT NULL")).isZero();
  }

  @Test
  void detectionOffRelaysEveryRetry() throws Exception {
    start("smtp.resubmission.mode", "off");
    String m = message("<off@example.com>", "off");
    queued(send("a@example.com", List.of("b@example.net"), m));
    queued(send("a@example.com", List.of("b@example.net"), m));
    assertThat(gateway.downstream().messages()).hasSize(2);
    assertThat(count("SELECT count(*) FROM resubmission_claims")).isZero();
  }

  @Test
  void aRetryOfAFailedMessageIsRelayedAsNewMailNamingTheEarlierRow() throws Exception {
    start();
    dot.set(n -> Future.succeededFuture(n == 1 ? "451 4.3.0 try again later" : "250 2.0.0 Ok: queued as DS" + n));
    String m = message("<failed@example.com>", "f");
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("451 4.3.0");
    UUID failed = UUID.fromString(LedgerRows.string(url(), "SELECT id FROM messages WHERE status = 'FAILED_TEMP'"));

    UUID second = queued(send("a@example.com", List.of("b@example.net"), m));
    assertThat(LedgerRows.string(url(), "SELECT resubmission_of FROM messages WHERE id = '" + second + "'"))
        .isEqualTo(failed.toString());
    // And the row that holds the claim now is the one that was sent: the next retry hears it was relayed.
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("250 2.0.0 Ok: already relayed as " + second);
    assertThat(gateway.downstream().messages()).hasSize(2); // the first DATA got 451, so one copy was delivered
    assertThat(gateway.get("/metrics").body()).contains("ledgerpost_resubmissions_total{outcome=\"relayed\"} 1.0");
  }

  @Test
  void aRetryOfAnUnknownOutcomeIsHeldUntilTheRowIsResolved() throws Exception {
    start();
    String m = message("<unknown@example.com>", "u");
    UUID unknown = sentAndUnknown(m);

    assertThat(send("a@example.com", List.of("b@example.net"), m))
        .startsWith("451 4.4.2 Outcome of previous submission " + unknown + " not yet known");
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(count("SELECT count(*) FROM resubmissions WHERE outcome = 'held'")).isEqualTo(1);

    // Whoever looks sees that a client waits on this row: the attention view, and the operation status says why.
    JsonObject item = new JsonObject(gateway.get("/api/v1/attention?status=UNKNOWN").body()).getJsonArray("items").getJsonObject(0);
    assertThat(item.getString("id")).isEqualTo(unknown.toString());
    assertThat(item.getInteger("clientsWaiting")).isEqualTo(1);
    JsonObject operation = new JsonObject(gateway.get("/api/v1/operations/" + unknown).body());
    assertThat(operation.getJsonObject("message").getString("waiting"))
        .startsWith("1 client retry of this message").contains("heard 451 4.4.2", "Resolve the row");

    HttpResponse<String> resolved = gateway.post("/api/v1/messages/" + unknown + "/resolution",
        "{\"outcome\": \"DELIVERED\", \"note\": \"the smarthost's log shows it sent\"}", "X-Operator", "carol");
    assertThat(resolved.statusCode()).as(resolved.body()).isEqualTo(200);
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("250 2.0.0 Ok: already relayed as " + unknown);
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(new JsonObject(gateway.get("/api/v1/operations/" + unknown).body()).getJsonObject("message").getString("waiting"))
        .as("resolved: nothing to wait for").isNull();
  }

  @Test
  void aRetryOfAnUnknownOutcomeResolvedNotDeliveredIsRelayedOnce() throws Exception {
    start();
    String m = message("<notdelivered@example.com>", "nd");
    UUID unknown = sentAndUnknown(m);
    HttpResponse<String> resolved = gateway.post("/api/v1/messages/" + unknown + "/resolution",
        "{\"outcome\": \"NOT_DELIVERED\", \"note\": \"not in the smarthost's log\"}", "X-Operator", "carol");
    assertThat(resolved.statusCode()).as(resolved.body()).isEqualTo(200);

    UUID relayed = queued(send("a@example.com", List.of("b@example.net"), m));
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("250 2.0.0 Ok: already relayed as " + relayed);
    assertThat(gateway.downstream().messages()).hasSize(2);
  }

  @Test
  void withUnknownRelayARetryOfAnUnknownOutcomeIsRelayed() throws Exception {
    start("smtp.resubmission.unknown", "relay");
    String m = message("<relay@example.com>", "r");
    UUID unknown = sentAndUnknown(m);
    UUID relayed = queued(send("a@example.com", List.of("b@example.net"), m));
    assertThat(gateway.downstream().messages()).hasSize(2);
    assertThat(LedgerRows.string(url(), "SELECT resubmission_of FROM messages WHERE id = '" + relayed + "'"))
        .isEqualTo(unknown.toString());
  }

  @Test
  void aRetryWhileTheFirstIsInDeliveryHearsItIsInProgress() throws Exception {
    start();
    Promise<String> held = Promise.promise();
    dot.set(n -> n == 1 ? held.future() : Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n));
    String m = message("<inflight@example.com>", "i");
    SmtpTestClient first = new SmtpTestClient(gateway.smtpPort(), "127.0.0.1");
    try (first) {
      first.reply();
      first.command("EHLO first.test");
      first.command("MAIL FROM:<a@example.com>");
      first.command("RCPT TO:<b@example.net>");
      first.command("DATA");
      first.send(m + ".\r\n");
      Poll.until(WAIT, "the first copy reached the smarthost", () -> gateway.downstream().messages().size() == 1);
      UUID inFlight = UUID.fromString(LedgerRows.string(url(), "SELECT id FROM messages"));

      assertThat(send("a@example.com", List.of("b@example.net"), m))
          .startsWith("451 4.3.0 Previous submission " + inFlight + " still in progress");
      held.complete("250 2.0.0 Ok: queued as DS1");
      assertThat(first.reply()).startsWith("250 2.0.0 Ok: queued as " + inFlight);
    }
    assertThat(send("a@example.com", List.of("b@example.net"), m)).startsWith("250 2.0.0 Ok: already relayed");
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(LedgerRows.string(url(), "SELECT string_agg(outcome, ',' ORDER BY seq) FROM resubmissions"))
        .isEqualTo("in_progress,already_relayed");
  }

  @Test
  void theEarlierRowsDetailListsItsResubmissions() throws Exception {
    start();
    String m = message("<detail@example.com>", "d");
    UUID first = queued(send("a@example.com", List.of("b@example.net"), m));
    send("a@example.com", List.of("b@example.net"), m);
    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + first).body());
    assertThat(detail.getJsonArray("resubmissions")).hasSize(1);
    JsonObject r = detail.getJsonArray("resubmissions").getJsonObject(0);
    assertThat(r.getString("outcome")).isEqualTo("already_relayed");
    assertThat(r.getString("clientIp")).isEqualTo("127.0.0.1");
    assertThat(r.getString("at")).isNotBlank();
  }

  @Test
  void erasingTheSendersAddressForgetsTheFingerprint() throws Exception {
    start();
    String m = message("<erased@example.com>", "e");
    queued(send("erase.me@example.com", List.of("b@example.net"), m));
    assertThat(count("SELECT count(*) FROM resubmission_claims")).isEqualTo(1);
    HttpResponse<String> erased = gateway.post("/api/v1/erasures", new JsonObject().put("address", "erase.me@example.com")
        .put("reason", "asked for it").encode(), "X-Operator", "dpo");
    assertThat(erased.statusCode()).as(erased.body()).isEqualTo(200);
    assertThat(new JsonObject(erased.body()).getJsonObject("rows").getLong("resubmission_claims")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM resubmission_claims")).isZero();
    // The retry is new mail now: nothing that could tie it to the erased row is left.
    queued(send("erase.me@example.com", List.of("b@example.net"), m));
    assertThat(gateway.downstream().messages()).hasSize(2);
  }

  /**
   * Retention drops the claims' days (V117, docs/data-model.md §5.32): a day that ended more than the window ago goes
   * whole, with its claims; the claim of today's message stays until its own day is past the window (expired, it
   * no longer holds: {@link #aRetryAfterTheWindowIsNewMail}).
   */
  @Test
  void retentionDropsTheDaysPastTheWindowOnly() throws Exception {
    start("smtp.resubmission.window", "1h", "notify.pruneInterval", "1s");
    UUID id = queued(send("a@example.com", List.of("b@example.net"), message("<old@example.com>", "o")));
    String old = "now() - interval '3 days'";
    LedgerRows.count(url(), "SELECT resubmission_claims_make(" + old + ", 7)");
    LedgerRows.count(url(), "WITH i AS (INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at)"
        + " SELECT resubmission_claim_hour(" + old + "), fingerprint, message_id, " + old + ", " + old + " + interval '1 hour'"
        + " FROM resubmission_claims WHERE message_id = '" + id + "' RETURNING 1) SELECT count(*) FROM i");
    Poll.until(WAIT, "the day past the window dropped by retention", () -> count("SELECT count(*) FROM resubmission_claims") == 1);
    assertThat(count("SELECT count(*) FROM resubmission_claims WHERE message_id = '" + id + "' AND claimed_at > now() - interval '1 hour'"))
        .as("today's claim stays").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages")).as("the row stays: only its fingerprint goes").isEqualTo(1);
  }

  @Test
  void aRetryIsAnEventOnTheHubAndOnTheWebhooks() throws Exception {
    WebhookReceiver receiver = gateway.closeAfter(GatewayHarness.await(WebhookReceiver.start(gateway.vertx(),
        r -> WebhookReceiver.Answer.of(200))));
    start("webhooks.endpoints", List.of(java.util.Map.of("name", "app", "url", receiver.url("/hooks"),
        "secret", WebhookDeliveryTest.secret(7), "events", List.of("message.resubmitted"))));
    String m = message("<event@example.com>", "ev");
    UUID first = queued(send("a@example.com", List.of("b@example.net"), m));
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0", gateway.gateway().adminToken())) {
      send("a@example.com", List.of("b@example.net"), m);
      Poll.until(WAIT, "the event published", () -> count("SELECT count(*) FROM outbox_events WHERE type = 'message.resubmitted'"
          + " AND pub_seq IS NOT NULL") == 1);
      JsonObject event = null;
      for (int i = 0; i < 10 && event == null; i++) {
        JsonObject e = ws.nextEvent(WAIT);
        event = e != null && "message.resubmitted".equals(e.getString("event")) ? e : null;
      }
      assertThat(event).as("message.resubmitted on the hub").isNotNull();
      assertThat(event.getJsonObject("data").getString("id")).isEqualTo(first.toString());
      assertThat(event.getJsonObject("data").getString("outcome")).isEqualTo("already_relayed");
    }
    Poll.until(WAIT, "the webhook delivered", () -> !receiver.requests().isEmpty());
    JsonObject hook = new JsonObject(receiver.requests().get(0).body());
    assertThat(hook.getString("type")).isEqualTo("message.resubmitted");
    assertThat(receiver.requests()).as("the endpoint asked for this event only").hasSize(1);
  }
}
