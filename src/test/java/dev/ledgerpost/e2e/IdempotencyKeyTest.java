package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Idempotency-Key: a retry is safe. The same key and body never send twice, whatever happened to the
 * first answer; a key whose send delivered nothing is free again.
 */
class IdempotencyKeyTest {
  static final String KEY = "idempotent-test-key";

  /** The downstream answers the final dot only once this completes (on a worker, the way a slow server would). */
  volatile CompletableFuture<Void> gate = CompletableFuture.completedFuture(null);
  volatile String dataVerdict;
  /** Runs (blocking, on the downstream's loop) when a RCPT arrives, before it is answered. */
  volatile Runnable onRcpt = () -> {};

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(KEY, "carol:1000")).toString())
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public String rcpt(String to) {
          onRcpt.run();
          return "250 2.1.5 Recipient ok";
        }

        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          CompletableFuture<Void> g = gate;
          return gateway.vertx().executeBlocking(() -> {
            g.join();
            String verdict = dataVerdict;
            dataVerdict = null;
            return verdict != null ? verdict : "250 2.0.0 Ok: queued as DS" + n;
          }, false);
        }
      });
  SendClient client;

  @BeforeEach
  void client() {
    client = gateway.sendClient();
  }

  /** A request still waiting for the downstream's final reply must not hold up the gateway's stop. */
  @AfterEach
  void openTheGate() {
    gate.complete(null);
  }

  static JsonObject message(String subject) {
    return new JsonObject()
        .put("from", "carol@example.com")
        .put("to", new JsonArray().add("dan@example.net"))
        .put("subject", subject)
        .put("text", "body of " + subject);
  }

  @Test
  void aRetryAfterALostAnswerGetsTheStoredAnswerAndNothingIsSentTwice() throws Exception {
    String key = UUID.randomUUID().toString();
    byte[] body = message("lost answer").encode().getBytes(StandardCharsets.UTF_8);
    gate = new CompletableFuture<>();
    try (Socket socket = new Socket("127.0.0.1", gateway.httpPort())) {
      OutputStream out = socket.getOutputStream();
      out.write(("POST /api/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY
          + "\r\nContent-Type: application/json\r\nIdempotency-Key: " + key + "\r\nContent-Length: " + body.length
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      poll(Duration.ofSeconds(20), () -> gateway.downstream().messages().size() == 1);
    } // the client is gone before the downstream has answered: its answer is lost
    gate.complete(null);

    HttpResponse<String> retry = retryWhileInFlight(key, message("lost answer"));
    assertThat(retry.statusCode()).as(retry.body()).isEqualTo(200);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    JsonObject answer = new JsonObject(retry.body());
    assertThat(answer.getString("status")).isEqualTo("SENT");
    HttpResponse<String> again = client.send(KEY, key, message("lost answer"));
    assertThat(again.body()).isEqualTo(retry.body());
    assertThat(again.headers().firstValue("Location")).hasValue("/api/v1/operations/" + answer.getString("operationId"));
    assertThat(text("SELECT response->>'body' FROM idempotency_keys WHERE key = '" + key + "'")).isEqualTo(retry.body());
    assertThat(text("SELECT id::text FROM messages")).isEqualTo(answer.getString("operationId"));
    assertThat(text("SELECT status FROM messages")).isEqualTo("SENT");
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
    assertThat(gateway.downstream().messages()).hasSize(1);
  }

  @Test
  void theSameKeyAndBodyReplayTheFirstAnswerByteForByte() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = sendOk(key, message("once"));
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    // The same request serialised differently (member order, spacing) is the same request.
    String reordered = "{ \"text\": \"body of once\", \"subject\": \"once\", \"to\": [\"dan@example.net\"],"
        + " \"from\": \"carol@example.com\" }";
    HttpResponse<String> second = sendOk(key, reordered);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
  }

  @Test
  void aKeyWithPercentSignsIsTakenAsWritten() throws Exception {
    // Printable ASCII, as the contract says; once URL-decoded by the validator ("%zz": 500, "%41": checked as "A").
    for (String key : List.of("50%-off+" + UUID.randomUUID(), "a%41" + UUID.randomUUID())) {
      HttpResponse<String> first = sendOk(key, message(key));
      HttpResponse<String> again = client.send(KEY, key, message(key));
      assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(again.body()).isEqualTo(first.body());
      assertThat(text("SELECT key FROM idempotency_keys WHERE key LIKE '%' || right('" + key + "', 36)")).isEqualTo(key);
    }
    assertThat(gateway.downstream().dataCommands()).isEqualTo(2);
  }

  @Test
  void theSameKeyWithAnotherBodyIs422AndSendsNothing() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = sendOk(key, message("first"));
    HttpResponse<String> other = client.send(KEY, key, message("second"));
    SendApiTest.assertProblem(other, 422);
    assertThat(new JsonObject(other.body()).getString("operationId"))
        .isEqualTo(new JsonObject(first.body()).getString("operationId"));
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(1);
  }

  @Test
  void fiftyConcurrentRequestsWithOneKeyDeliverOnce() throws Exception {
    String key = UUID.randomUUID().toString();
    gate = new CompletableFuture<>();
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      calls.add(client.sendAsync(KEY, key, message("fifty")));
    }
    // While the first holder waits for the downstream, every other request must hear 409.
    poll(Duration.ofSeconds(30), () -> calls.stream().filter(CompletableFuture::isDone).count() == 49);
    gate.complete(null);
    List<HttpResponse<String>> answers = new ArrayList<>();
    for (CompletableFuture<HttpResponse<String>> c : calls) {
      answers.add(c.join());
    }
    List<HttpResponse<String>> sent = answers.stream().filter(r -> r.statusCode() == 200).toList();
    List<HttpResponse<String>> busy = answers.stream().filter(r -> r.statusCode() == 409).toList();
    assertThat(sent).hasSize(1);
    assertThat(busy).hasSize(49);
    for (HttpResponse<String> r : busy) {
      assertThat(r.headers().firstValue("Retry-After")).as("held by a request running here").hasValue("1");
      assertThat(new JsonObject(r.body()).getString("leaseExpiresAt")).isNotBlank();
      assertThat(new JsonObject(r.body()).getString("operationId"))
          .isEqualTo(new JsonObject(sent.get(0).body()).getString("operationId"));
    }
    HttpResponse<String> after = sendOk(key, message("fifty"));
    assertThat(after.body()).isEqualTo(sent.get(0).body());
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(1);
  }

  @Test
  void aKeyWhoseSendDeliveredNothingIsFreeForTheRetry() throws Exception {
    String key = UUID.randomUUID().toString();
    dataVerdict = "452 4.3.1 Insufficient system storage";
    HttpResponse<String> deferred = client.send(KEY, key, message("retry me"));
    SendApiTest.assertProblem(deferred, 503);
    assertThat(deferred.headers().firstValue("Retry-After")).isPresent();
    assertThat(new JsonObject(deferred.body()).getString("downstreamReply")).isEqualTo("452 4.3.1 Insufficient system storage");
    assertThat(count("SELECT count(*) FROM idempotency_keys")).isZero();

    HttpResponse<String> retry = sendOk(key, message("retry me"));
    assertThat(new JsonObject(retry.body()).getString("operationId"))
        .isNotEqualTo(new JsonObject(deferred.body()).getString("operationId"));
    assertThat(count("SELECT count(*) FROM messages WHERE status = 'FAILED_TEMP'")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages WHERE status = 'SENT'")).isEqualTo(1);
    assertThat(client.send(KEY, key, message("retry me")).body()).isEqualTo(retry.body());
    assertThat(gateway.downstream().dataCommands()).isEqualTo(2);
  }

  @Test
  void aKeyWhoseAnswerWasNeverStoredIsAnsweredFromTheLedgerNotResent() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = sendOk(key, message("crash"));
    String op = new JsonObject(first.body()).getString("operationId");
    // What a crash between the settle and the storing of the answer leaves: the key bound, no answer.
    execute("UPDATE idempotency_keys SET state = 'OPENED', response = NULL, lease_until = now() + interval '1 hour'");
    HttpResponse<String> held = client.send(KEY, key, message("crash"));
    SendApiTest.assertProblem(held, 409);
    // Held by no request here, on a ledger other gateways may share: a short wait, and when the lease ends.
    assertThat(held.headers().firstValue("Retry-After")).hasValue("5");
    java.time.Instant expires = java.time.Instant.parse(new JsonObject(held.body()).getString("leaseExpiresAt"));
    assertThat(expires).isBetween(java.time.Instant.now().plusSeconds(3500), java.time.Instant.now().plusSeconds(3700));
    execute("UPDATE idempotency_keys SET lease_until = now() - interval '1 second'");

    HttpResponse<String> derived = sendOk(key, message("crash"));
    assertThat(derived.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    JsonObject answer = new JsonObject(derived.body());
    assertThat(answer.getString("operationId")).isEqualTo(op);
    assertThat(answer.getString("status")).isEqualTo("SENT");
    assertThat(answer.getString("downstreamReply")).isEqualTo("250 2.0.0 Ok: queued as DS1");
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);

    // A claim whose holder died before it opened the ledger blocks the key only for its lease.
    execute("DELETE FROM idempotency_keys");
    execute("INSERT INTO idempotency_keys (owner, key, request_hash, operation_id, state, lease_until) VALUES ('"
        + SendClient.sha256(KEY) + "', 'dead-claim', 'whatever', '" + UUID.randomUUID() + "', 'IN_FLIGHT', now() - interval '1 second')");
    assertThat(client.send(KEY, "dead-claim", message("after a crash")).statusCode()).isEqualTo(200);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(2);
  }

  @Test
  void aClaimTakenOverBeforeTheOpenOpensNothingAndSendsNothing() throws Exception {
    String key = UUID.randomUUID().toString();
    UUID other = UUID.randomUUID();
    // Between our look at the key and our open, another request takes it (docs/design.md §7.2: the key is claimed by the
    // open's own statement, so our open finds it taken and writes nothing); answered as a request that meets that key
    // first is: here 422, the key holds another body.
    onRcpt = () -> {
      try {
        execute("INSERT INTO idempotency_keys (owner, key, request_hash, operation_id, state, lease_until) VALUES ('"
            + SendClient.sha256(KEY) + "', '" + key + "', 'another body', '" + other + "', 'IN_FLIGHT', now() + interval '1 hour')");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    };
    HttpResponse<String> r = client.send(KEY, key, message("taken over"));
    SendApiTest.assertProblem(r, 422);
    assertThat(new JsonObject(r.body()).getString("operationId")).isEqualTo(other.toString());
    assertThat(gateway.downstream().dataCommands()).isZero();
    assertThat(count("SELECT count(*) FROM messages")).isZero(); // the open wrote nothing
    assertThat(count("SELECT count(*) FROM outbox")).isZero();
    assertThat(text("SELECT operation_id::text || ' ' || state FROM idempotency_keys")).isEqualTo(other + " IN_FLIGHT");
  }

  @Test
  void keysExpireAfterTheirRetentionAndArePrunedInBatches() throws Exception {
    String key = UUID.randomUUID().toString();
    assertThat(client.send(KEY, key, message("old")).statusCode()).isEqualTo(200);
    for (int i = 0; i < 4; i++) {
      assertThat(client.send(KEY, "k" + i, message("old " + i)).statusCode()).isEqualTo(200);
    }
    execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'");
    // An expired key is as good as new: the same request sends again.
    assertThat(client.send(KEY, key, message("old")).headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(gateway.downstream().dataCommands()).isEqualTo(6);

    Bus bus = Bus.of(gateway.vertx());
    IdempotencyMessages.Prune prune = new IdempotencyMessages.Prune(Duration.ofHours(24), 3);
    assertThat(GatewayHarness.await(bus.request(IdempotencyMessages.PRUNE, prune, IdempotencyMessages.Pruned.class)).deleted())
        .isEqualTo(3);
    assertThat(GatewayHarness.await(bus.request(IdempotencyMessages.PRUNE, prune, IdempotencyMessages.Pruned.class)).deleted())
        .isEqualTo(1);
    assertThat(GatewayHarness.await(bus.request(IdempotencyMessages.PRUNE, prune, IdempotencyMessages.Pruned.class)).deleted())
        .isZero();
    assertThat(count("SELECT count(*) FROM idempotency_keys")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(6);
  }

  /** A send with {@code key} that must be answered 200. */
  private HttpResponse<String> sendOk(String key, JsonObject body) throws Exception {
    return sendOk(key, body.encode());
  }

  private HttpResponse<String> sendOk(String key, String body) throws Exception {
    HttpResponse<String> r = client.send(KEY, key, body);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r;
  }

  private HttpResponse<String> retryWhileInFlight(String key, JsonObject body) throws Exception {
    AtomicReference<HttpResponse<String>> last = new AtomicReference<>();
    // As a client honouring Retry-After would: the last answer, whatever it is, once it is not 409 or time is up.
    Poll.within(Duration.ofSeconds(20), () -> {
      last.set(client.send(KEY, key, body));
      return last.get().statusCode() != 409;
    });
    return last.get();
  }

  static void poll(Duration within, BooleanSupplier condition) throws Exception {
    Poll.until(within, "the condition", condition::getAsBoolean);
  }

  private long count(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }

  private String text(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  private void execute(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }
}
