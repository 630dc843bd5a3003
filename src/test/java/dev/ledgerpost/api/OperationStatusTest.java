package dev.ledgerpost.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.LockingSmarthost;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** GET /api/v1/operations/{id} for a message whose settle the retry part is still trying (docs/contract.md §1.11). */
class OperationStatusTest {
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().with("ledger.lockTimeout", "250ms");
  /** Writes to the outbox blocked (reads pass): the settle cannot commit, the status can still be read. */
  final LockingSmarthost smarthost = gateway.locking(gateway::databaseUrl);

  @BeforeEach
  void lockTheOutboxOnEveryBody() {
    smarthost.lockWith(url -> TableLock.writes(url, "outbox"));
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
    Poll.until(Duration.ofSeconds(30), "the held outcome on the node's heartbeat",
        () -> operation(id).getJsonObject("ledger").getJsonArray("retryingOn").contains(node));

    smarthost.lock().release();
    long started = System.nanoTime();
    Poll.until(Duration.ofSeconds(30), "settled by the retry part",
        () -> "SENT".equals(operation(id).getJsonObject("message").getString("status")));
    JsonObject settled = operation(id);
    assertThat(settled.getJsonObject("ledger").getBoolean("settled")).isTrue();
    assertThat(settled.getJsonObject("ledger").getBoolean("retrying")).isFalse();
    assertThat(settled.getJsonObject("message").getInteger("version")).isEqualTo(2);
    Poll.until(Duration.ofSeconds(30).minusNanos(System.nanoTime() - started), "released on the next heartbeat",
        () -> operation(id).getJsonObject("ledger").getJsonArray("retryingOn").isEmpty());
  }

  private JsonObject operation(String id) throws Exception {
    var r = gateway.get("/api/v1/operations/" + id);
    assertThat(r.statusCode()).isEqualTo(200);
    return new JsonObject(r.body());
  }
}
