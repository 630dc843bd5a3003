package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a send with an Idempotency-Key costs the ledger (issue 33, docs/design.md §7.2): its claim and binding ride in
 * the group-committed open and its answer in the group-committed settle, so concurrent keyed sends share commits as
 * SMTP's do. Counted as writing transactions (transaction ids handed out; a read takes none), the publisher's
 * included: under 2 a message, where a claim, a keyed open and an answer of their own cost 3 before anything was
 * shared. A replay writes nothing at all, and answers what the first request was told.
 */
class KeyedSendCommitsTest {
  static final String KEY = "keyed-commits-key";
  static final int SENDS = 60;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(KEY, "erin:100000")).toString());

  @Test
  void concurrentKeyedSendsShareCommitsAndTheirReplaysWriteNothing() throws Exception {
    SendClient client = gateway.sendClient();
    send(client, "warm-up", 5); // prepared statements, the week's partitions, the first publications
    quiet();

    long before = nextXid();
    List<HttpResponse<String>> first = send(client, "k", SENDS);
    quiet();
    long writes = nextXid() - before;
    for (HttpResponse<String> r : first) {
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }
    assertThat(LedgerRows.count(gateway.databaseUrl(),
        "SELECT count(*) FROM idempotency_keys WHERE key LIKE 'k-%' AND state = 'COMPLETED'")).isEqualTo(SENDS);
    System.out.printf("keyed sends: %d writing transactions for %d messages (%.2f a message)%n", writes, SENDS,
        (double) writes / SENDS);
    assertThat((double) writes / SENDS).as("writing transactions a keyed send").isLessThan(2.0);

    long replayedFrom = nextXid();
    List<HttpResponse<String>> replays = send(client, "k", SENDS);
    long replayWrites = nextXid() - replayedFrom;
    for (int i = 0; i < SENDS; i++) {
      assertThat(replays.get(i).headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(new JsonObject(replays.get(i).body())).isEqualTo(new JsonObject(first.get(i).body()));
    }
    assertThat(gateway.downstream().dataCommands()).isEqualTo(SENDS + 5);
    // Only the gateway's own background writes (heartbeats) may fall in the window.
    assertThat(replayWrites).as("writing transactions of %d replays", SENDS).isLessThan(SENDS / 10);
  }

  /** {@code n} sends with keys {@code prefix-0..n-1}, all in flight at once, answered in order. */
  static List<HttpResponse<String>> send(SendClient client, String prefix, int n) throws Exception {
    List<CompletableFuture<HttpResponse<String>>> running = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      JsonObject body = new JsonObject().put("from", "erin@example.com").put("to", new JsonArray().add("frank@example.net"))
          .put("subject", prefix + " " + i).put("text", "body " + i);
      running.add(client.sendAsync(KEY, prefix + "-" + i, body));
    }
    List<HttpResponse<String>> answers = new ArrayList<>();
    for (CompletableFuture<HttpResponse<String>> r : running) {
      answers.add(r.get(60, TimeUnit.SECONDS));
    }
    return answers;
  }

  /** Every entry settled and every outbox row published: the publisher's transactions are counted too. */
  void quiet() throws Exception {
    Poll.until(Duration.ofSeconds(30), "everything settled and published", () ->
        LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE status = 'PENDING'") == 0
            && LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0);
  }

  /** The next transaction id to be handed out; reading it takes none. */
  long nextXid() throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint");
  }
}
