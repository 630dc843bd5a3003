package dev.ledgerpost.operate.erasure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, items 7 and 10: the places an address survived an erasure, each put in the ledger the way the gateway
 * does it (the send API, a WebSocket subscriber, a webhook receiver), then erased; a scan of every text, JSON and
 * text-array column of every table and view finds no part of any of them.
 * <ul>
 *   <li>a quoted local part in a stored send answer, a JSON string inside JSON (item 7);</li>
 *   <li>a WebSocket subscriber named after an address, {@code admin/<address>}, in the receipts (item 10);</li>
 *   <li>a webhook receiver's error body, kept up to 200 characters, which can end inside an address (item 10).</li>
 * </ul>
 */
class ErasureRemnantsTest {
  static final String API_KEY = "remnants-send-key";
  static final String QUOTED = "\"john smith\"@example.net";
  static final String SUBSCRIBER = "ann.subscriber@example.net";
  static final String CUT = "cut.me@example.org";
  /** The receiver's error body: its first 200 characters end inside {@link #CUT}, after "cut.me@exa". */
  static final String REFUSAL = "e".repeat(189) + " " + CUT + " is not a recipient here";
  static final Duration WAIT = Duration.ofSeconds(30);

  WebhookReceiver receiver;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(API_KEY, "carol:1000")).toString())
      .with("webhooks.pollInterval", "50ms")
      .with("notify.pollInterval", "100ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        /** A final reply that names the recipients, as real smarthosts' do: the send answer carries it. */
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as R" + n + " for " + String.join(",", message.recipients()));
        }
      })
      .configure((g, config) -> {
        receiver = GatewayHarness.await(WebhookReceiver.start(g.vertx(), r -> WebhookReceiver.Answer.of(500, REFUSAL)));
        config.put("webhooks.endpoints", List.of(Map.of("name", "app", "url", receiver.url("/hooks"),
            "secret", "whsec_" + Base64.getEncoder().encodeToString(new byte[32]))));
        config.put("ledger.dataDir", GatewayHarness.tempDir("erasure-remnants-").resolve("pg").toString());
      });

  @AfterEach
  void stopReceiver() throws Exception {
    if (receiver != null) {
      receiver.close();
    }
  }

  @Test
  void noPartOfAnErasedAddressSurvivesInStoredAnswersSubscriberNamesOrWebhookErrors() throws Exception {
    String url = gateway.databaseUrl();
    // A raw message: its envelope takes any mailbox, a quoted local part too.
    JsonObject request = new JsonObject()
        .put("envelope", new JsonObject().put("from", "carol@example.com").put("to", new JsonArray().add(QUOTED)))
        .put("raw", Base64.getEncoder().encodeToString("From: carol@example.com\r\nSubject: s\r\n\r\nhello\r\n"
            .getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
    HttpResponse<String> sent = gateway.sendClient().send(API_KEY, "remnant-1", request);
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    assertThat(LedgerRows.string(url, "SELECT response::text FROM idempotency_keys"))
        .as("the stored answer holds the address escaped twice").contains("\\\\\\\"john smith\\\\\\\"@example.net");

    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0&client=" + SUBSCRIBER,
        gateway.gateway().adminToken())) {
      assertThat(ws.next(WAIT).getString("subscriber")).isEqualTo("admin/" + SUBSCRIBER);
      ws.send(new JsonObject().put("ack", ws.nextEvent(WAIT).getLong("seq")).put("state", "READ"));
      Poll.until(WAIT, "the receipt stored", () ->
          LedgerRows.count(url, "SELECT count(*) FROM notify_receipts WHERE subscriber = 'admin/" + SUBSCRIBER + "'") == 1);
    }
    Poll.until(WAIT, "a failed webhook attempt recorded", () ->
        LedgerRows.count(url, "SELECT count(*) FROM webhook_attempts WHERE error LIKE 'HTTP 500%'") > 0);
    receiver.script(r -> WebhookReceiver.Answer.of(200));

    assertThat(LedgerRows.cellsHolding(url, "john smith")).as("before").containsKey("idempotency_keys.response");
    assertThat(LedgerRows.cellsHolding(url, SUBSCRIBER)).as("before").containsKey("notify_receipts.subscriber");
    Map<String, String> hashes = new TreeMap<>();
    for (String address : List.of(QUOTED, SUBSCRIBER, CUT)) {
      HttpResponse<String> r = gateway.post("/api/v1/erasures", new JsonObject().put("address", address).encode(),
          "X-Operator", "dpo");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      hashes.put(address, new JsonObject(r.body()).getString("addressHash"));
    }

    for (String part : List.of("john smith", "john", SUBSCRIBER, "ann.subscriber", CUT, "cut.me")) {
      assertThat(LedgerRows.cellsHolding(url, part)).as("what holds %s after the erasure", part).isEmpty();
    }
    assertThat(LedgerRows.string(url, "SELECT subscriber FROM notify_receipts")).isEqualTo("admin/" + hashes.get(SUBSCRIBER));
    assertThat(LedgerRows.string(url, "SELECT min(error) FROM webhook_attempts")).as("the error keeps its whole words")
        .startsWith("HTTP 500 Internal Server Error: eeee").endsWith("e");

    // The stored answer is still JSON at both levels and is replayed, without the address.
    HttpResponse<String> replayed = gateway.sendClient().send(API_KEY, "remnant-1", request);
    assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(200);
    assertThat(replayed.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(new JsonObject(replayed.body()).encode()).contains(hashes.get(QUOTED)).doesNotContain("john");
  }
}
