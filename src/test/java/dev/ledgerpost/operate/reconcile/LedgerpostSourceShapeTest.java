package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A downstream Ledgerpost's message detail read as evidence in either shape (docs/contract.md §1.12): `recipients` as the
 * array (openapi.yaml 0.2.0 on), or `recipientList` with `recipients` as the count (a downstream not upgraded yet).
 */
class LedgerpostSourceShapeTest {
  final Vertx vertx = Vertx.vertx();
  final LedgerpostSource source = new LedgerpostSource(vertx, new GatewayConfig.ReconcileSource("next-hop",
      GatewayConfig.SourceType.LEDGERPOST, null, null, "http://127.0.0.1:9", "t"));

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS);
  }

  static JsonObject detail() {
    return new JsonObject().put("id", "0193a5c2-7c1e-7d4a-9b1e-3f2a1c4b5d6e").put("status", "SENT").put("version", 2)
        .put("receivedAt", "2026-12-03T10:00:00Z").put("mailFrom", "a@example.com").put("sha256", "00");
  }

  static JsonArray recipients() {
    return new JsonArray()
        .add(new JsonObject().put("address", "b@example.net").put("status", "ACCEPTED"))
        .add(new JsonObject().put("address", "c@example.net").put("status", "REJECTED"));
  }

  @Test
  void theRecipientsOfEitherVersionOfTheDetailAreRead() {
    Sighting now = source.sighting(detail().put("recipientCount", 2).put("recipients", recipients()));
    Sighting before = source.sighting(detail().put("recipients", 2).put("recipientList", recipients()));
    assertThat(now.recipients()).isEqualTo(Set.of("b@example.net"));
    assertThat(before.recipients()).isEqualTo(Set.of("b@example.net"));
  }
}
