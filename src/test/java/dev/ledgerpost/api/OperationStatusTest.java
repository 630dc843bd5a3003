package dev.ledgerpost.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** GET /api/v1/operations/{id} for a message whose settle the retry part is still trying (docs/design.md §4.6). */
class OperationStatusTest {
  Vertx vertx;
  GatewayHarness gateway;
  final AtomicReference<TableLock> lock = new AtomicReference<>();

  @BeforeEach
  void start() throws Exception {
    vertx = Vertx.vertx();
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        return vertx.executeBlocking(() -> {
          // Writes to the outbox blocked (reads pass): the settle cannot commit, the status can still be read.
          lock.set(TableLock.writes(gateway.databaseUrl(), "outbox"));
          return "250 2.0.0 Ok: queued as DS" + n;
        });
      }
    }));
    Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("ledger.lockTimeout", "250ms");
    gateway = GatewayHarness.start(vertx, o);
  }

  @AfterEach
  void stop() throws Exception {
    if (lock.get() != null) {
      lock.get().release();
    }
    gateway.close();
    GatewayHarness.await(vertx.close());
  }

  @Test
  void aPendingMessageWhoseSettleIsRetriedSaysSoThenSettles() throws Exception {
    String reply;
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      reply = c.sendMail("a@example.com", List.of("b@example.net"), "Subject: retried\r\n\r\nbody");
    }
    assertThat(reply).startsWith("250 2.0.0");
    String id = InvariantCheck.ledgerId(reply);
    JsonObject op = operation(id);
    assertThat(op.getJsonObject("message").getString("status")).isEqualTo("PENDING");
    assertThat(op.getJsonObject("ledger").getBoolean("settled")).isFalse();
    assertThat(op.getJsonObject("ledger").getBoolean("retrying")).isTrue();
    assertThat(op.getJsonArray("recipients").getJsonObject(0).getString("status")).isEqualTo("PENDING");
    String node = gateway.gateway().nodeId();
    assertThat(op.getJsonObject("message").getString("node")).isEqualTo(node);
    // Every node sees which node holds the outcome: its heartbeat publishes what its retry part holds.
    long published = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!operation(id).getJsonObject("ledger").getJsonArray("retryingOn").contains(node)) {
      assertThat(System.nanoTime()).as("the held outcome on the node's heartbeat in time").isLessThan(published);
      Thread.sleep(20); // polling with a deadline
    }

    lock.get().release();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!"SENT".equals(operation(id).getJsonObject("message").getString("status"))) {
      assertThat(System.nanoTime()).as("settled by the retry part in time").isLessThan(deadline);
      Thread.sleep(20); // polling with a deadline
    }
    JsonObject settled = operation(id);
    assertThat(settled.getJsonObject("ledger").getBoolean("settled")).isTrue();
    assertThat(settled.getJsonObject("ledger").getBoolean("retrying")).isFalse();
    assertThat(settled.getJsonObject("message").getInteger("version")).isEqualTo(2);
    while (!operation(id).getJsonObject("ledger").getJsonArray("retryingOn").isEmpty()) {
      assertThat(System.nanoTime()).as("released on the next heartbeat").isLessThan(deadline);
      Thread.sleep(20); // polling with a deadline
    }
  }

  private JsonObject operation(String id) throws Exception {
    var r = gateway.get("/api/v1/operations/" + id);
    assertThat(r.statusCode()).isEqualTo(200);
    return new JsonObject(r.body());
  }
}
