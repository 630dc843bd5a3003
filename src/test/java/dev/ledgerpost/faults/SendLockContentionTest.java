package dev.ledgerpost.faults;

import dev.ledgerpost.ledger.LedgerPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TableLock;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The send API's 451 4.3.0 case under a real lock: the ledger cannot be opened, so nothing is sent. */
class SendLockContentionTest {
  static final String KEY = "lock-test-key";

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("ledger.lockTimeout", "250ms")
      .with("api.keysFile", SendClient.keysFile(Map.of(KEY, "erin")).toString());


  static JsonObject message() {
    return new JsonObject().put("from", "erin@example.com").put("to", new JsonArray().add("f@example.net"))
        .put("subject", "blocked").put("text", "body");
  }

  @Test
  void lockedLedgerTablesMean503AndNoDataDownstream() throws Exception {
    HttpResponse<String> r;
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), LockContentionTest.ALL_TABLES)) {
      r = gateway.sendClient().send(KEY, null, message());
    }
    assertTemporaryPersistenceFailure(r);
    LockContentionTest.assertNothingOpened(gateway);
  }

  @Test
  void aKeyThatCouldNotBeRecordedIsNotHeldAndTheRetrySends() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> r;
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), LockContentionTest.ALL_TABLES)) {
      // The claim's foreign key to messages waits for the lock too: the key is refused before MAIL FROM.
      r = gateway.sendClient().send(KEY, key, message());
      assertThat(count("SELECT count(*) FROM idempotency_keys")).isZero();
    }
    assertTemporaryPersistenceFailure(r);
    assertThat(gateway.downstream().dataCommands()).isZero();
    HttpResponse<String> retry = gateway.sendClient().send(KEY, key, message());
    assertThat(retry.statusCode()).as(retry.body()).isEqualTo(200);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages WHERE status = 'SENT'")).isEqualTo(1);
  }

  @Test
  void anOpenThatFailsAfterTheClaimReleasesTheKeyAndSendsNothing() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> r;
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), "recipients", "outbox")) {
      r = gateway.sendClient().send(KEY, key, message());
      assertThat(count("SELECT count(*) FROM idempotency_keys")).isZero();
    }
    assertTemporaryPersistenceFailure(r);
    assertThat(gateway.downstream().dataCommands()).isZero();
    assertThat(count("SELECT count(*) FROM messages")).isZero(); // the open rolled back, message row and key binding alike
    assertThat(gateway.gateway().part(LedgerPart.class).retries()).containsEntry("55P03", 2L);
    HttpResponse<String> retry = gateway.sendClient().send(KEY, key, message());
    assertThat(retry.statusCode()).as(retry.body()).isEqualTo(200);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
  }

  static void assertTemporaryPersistenceFailure(HttpResponse<String> r) {
    SendClient.assertProblem(r, 503);
    assertThat(new JsonObject(r.body()).getString("detail")).contains("4.3.0");
    assertThat(r.headers().firstValue("Retry-After")).hasValue("5");
  }

  private long count(String sql) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }
}
