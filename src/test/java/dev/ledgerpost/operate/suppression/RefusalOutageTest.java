package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A refused recipient's reply does not wait for its record (docs/design.md §8.8): with the ledger's connections cut for
 * real (a proxy between the gateway and PostgreSQL), a suppressed recipient is still refused at once, and the refusal
 * that could not be written is counted lost; once the database is back, refusals are recorded again.
 */
class RefusalOutageTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  TcpProxy proxy;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("suppression.refreshInterval", "200ms")
      .configure((g, o) -> {
        String directUrl = TestDatabase.newDatabase();
        TestDatabase.Server server = TestDatabase.server();
        proxy = g.closeAfter(TcpProxy.to(server.host(), server.port()));
        String db = directUrl.substring(directUrl.lastIndexOf('/') + 1);
        o.put("ledger.url", directUrl.substring(0, directUrl.indexOf('@') + 1) + "127.0.0.1:" + proxy.port() + "/" + db);
      });

  @Test
  void aRefusalsReplyGoesOutWhileTheDatabaseIsCutAndTheLossIsCounted() throws Exception {
    JsonObject body = new JsonObject().put("address", "down@example.org").put("reason", "closed");
    HttpResponse<String> added = gateway.post("/api/v1/suppressions", body.encode(), "X-Operator", "ops");
    assertThat(added.statusCode()).as(added.body()).isEqualTo(201);
    double lostBefore = metric("ledgerpost_recipient_refusals_lost_total");

    proxy.cutAll(); // every ledger connection closed, new ones refused
    try (SmtpTestClient c = RefusalsTest.client(gateway)) {
      RefusalsTest.expect(c.command("MAIL FROM:<app@example.com>"), "250");
      long start = System.nanoTime();
      RefusalsTest.expect(c.command("RCPT TO:<down@example.org>"), "550 5.1.1 <down@example.org> suppressed since");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("the reply did not wait for the database")
          .isLessThan(Duration.ofSeconds(1));
    }
    Poll.until(WAIT, "the refusal not written is counted lost",
        () -> metric("ledgerpost_recipient_refusals_lost_total") >= lostBefore + 1);

    proxy.heal();
    Poll.until(WAIT, "after the heal a refusal is recorded again", () -> {
      try (SmtpTestClient c = RefusalsTest.client(gateway)) {
        RefusalsTest.expect(c.command("MAIL FROM:<app@example.com>"), "250");
        RefusalsTest.expect(c.command("RCPT TO:<down@example.org>"), "550 5.1.1");
      }
      return LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM recipient_refusals") > 0;
    });
  }

  private double metric(String series) throws Exception {
    for (String line : gateway.get("/metrics", null).body().split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    throw new AssertionError("no series " + series);
  }
}
