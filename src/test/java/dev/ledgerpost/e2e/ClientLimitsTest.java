package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One client cannot hog the gateway, on real sockets: connections per address, the minimum DATA rate,
 * and the process-wide cap on smarthost connections that SMTP and the send API share.
 */
class ClientLimitsTest {
  private static final String API_KEY = "client-limits-key";

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("smtp.relayNetworks", "127.0.0.1/32") // 127.0.0.1 relays; other loopback addresses are outsiders
      .with("smtp.maxConnectionsPerAddress", 2)
      .with("smtp.minDataRate", 1000)
      .with("smtp.minDataRateGrace", "300ms")
      .with("downstream.maxConnections", 2)
      .with("api.keysFile", SendClient.keysFile(Map.of(API_KEY, "limits:1000")).toString());

  private static SmtpTestClient greeted(String from) throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), from);
    assertThat(c.reply()).startsWith("220");
    return c;
  }

  @Test
  void anAddressGetsAtMostItsConnectionsOthersAndRelayNetworksAreNotAffected() throws Exception {
    List<SmtpTestClient> open = new ArrayList<>();
    try {
      open.add(greeted("127.0.0.2"));
      open.add(greeted("127.0.0.2"));
      try (SmtpTestClient third = new SmtpTestClient(gateway.smtpPort(), "127.0.0.2")) {
        assertThat(third.reply()).isEqualTo("421 4.7.0 Too many connections from your address, try again later");
        assertThat(third.closedByServer()).isTrue();
      }
      open.add(greeted("127.0.0.3"));
      for (int i = 0; i < 3; i++) {
        open.add(greeted("127.0.0.1")); // inside smtp.relayNetworks: exempt, as Postfix exempts mynetworks
      }
      // One of the two leaves: its place comes free once the gateway has seen the close.
      assertThat(open.get(0).command("QUIT")).startsWith("221");
      open.remove(0).close();
      Poll.until(Duration.ofSeconds(10), "127.0.0.2 may connect again", () -> {
        SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), "127.0.0.2");
        if (c.reply().startsWith("220")) {
          open.add(c);
          return true;
        }
        c.close();
        return false;
      });
    } finally {
      for (SmtpTestClient c : open) {
        c.close();
      }
    }
  }

  @Test
  void aClientTricklingItsDataBelowTheMinimumRateIsCutOffAndNothingIsRelayed() throws Exception {
    int messages = gateway.downstream().messages().size();
    int dataCommands = gateway.downstream().dataCommands();
    try (SmtpTestClient c = greeted("127.0.0.1")) {
      assertThat(c.command("EHLO slow.test")).startsWith("250");
      assertThat(c.command("MAIL FROM:<slow@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
      long t0 = System.nanoTime(); // before DATA: the server's grace starts after this, so none can look short
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: slow\r\n"); // 15 bytes, then nothing: far below 1000 bytes/s once the grace is over
      assertThat(c.reply()).isEqualTo("421 4.4.2 Data arriving too slowly, closing connection");
      assertThat((System.nanoTime() - t0) / 1_000_000).as("not before the grace").isGreaterThanOrEqualTo(300);
      assertThat(c.closedByServer()).isTrue();
    }
    assertThat(gateway.downstream().messages()).hasSize(messages);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(dataCommands);
  }

  /**
   * One timer a connection watches every body's rate (issue 33): a check due for an earlier body, firing while the
   * next trickles, waits for the next body's own grace rather than judging it early.
   */
  @Test
  void theGraceRunsFromEachBodysOwnDataOnAConnectionThatSentOneBefore() throws Exception {
    try (SmtpTestClient c = greeted("127.0.0.1")) {
      assertThat(c.command("EHLO twice.test")).startsWith("250");
      assertThat(c.command("MAIL FROM:<first@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: quick\r\n\r\nquick\r\n.\r\n");
      assertThat(c.reply()).startsWith("250"); // the first body's check was due 300 ms after its DATA
      Thread.sleep(200); // the pace of the client under test: the next DATA comes 200 ms into the first's grace
      assertThat(c.command("MAIL FROM:<second@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
      long t0 = System.nanoTime();
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: slow\r\n");
      assertThat(c.reply()).isEqualTo("421 4.4.2 Data arriving too slowly, closing connection");
      assertThat((System.nanoTime() - t0) / 1_000_000).as("not before this body's grace").isGreaterThanOrEqualTo(300);
    }
  }

  @Test
  void aClientSendingSteadilyAboveTheMinimumRateIsNotCutOff() throws Exception {
    try (SmtpTestClient c = greeted("127.0.0.1")) {
      assertThat(c.command("EHLO steady.test")).startsWith("250");
      assertThat(c.command("MAIL FROM:<steady@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: steady\r\n\r\n");
      String line = "x".repeat(98) + "\r\n";
      long end = System.nanoTime() + Duration.ofMillis(1000).toNanos(); // over three times the grace
      while (System.nanoTime() < end) {
        c.send(line.repeat(4)); // 400 bytes every 50 ms: 8000 bytes/s
        Thread.sleep(50); // the pace of the client under test, not synchronisation
      }
      c.send(".\r\n");
      assertThat(c.reply()).startsWith("250");
    }
  }

  @Test
  void whenEverySmarthostConnectionIsTakenMailHears451AndNothingIsOpenedUntilOneIsReleased() throws Exception {
    SendClient api = new SendClient(gateway.httpPort());
    try (SmtpTestClient a = greeted("127.0.0.1"); SmtpTestClient b = greeted("127.0.0.1"); SmtpTestClient c = greeted("127.0.0.1")) {
      for (SmtpTestClient x : List.of(a, b, c)) {
        assertThat(x.command("EHLO busy.test")).startsWith("250");
      }
      assertThat(a.command("MAIL FROM:<a@example.com>")).startsWith("250");
      assertThat(b.command("MAIL FROM:<b@example.com>")).startsWith("250");
      int connections = gateway.downstream().connections();
      assertThat(c.command("MAIL FROM:<c@example.com>")).isEqualTo(
          "451 4.7.0 All downstream connections are in use, try again later");
      // The send API counts against the same cap.
      HttpResponse<String> viaApi = api.send(API_KEY, null, new JsonObject().put("from", "api@example.com")
          .put("to", new JsonArray().add("bob@example.net")).put("subject", "busy").put("text", "busy\n"));
      assertThat(viaApi.statusCode()).as(viaApi.body()).isEqualTo(503);
      assertThat(gateway.downstream().connections()).as("nothing was opened").isEqualTo(connections);
      String scrape = gateway.get("/metrics", null).body();
      assertThat(scrape).contains("ledgerpost_downstream_connections 2.0");

      assertThat(a.command("QUIT")).startsWith("221");
      Poll.until(Duration.ofSeconds(10), "a smarthost connection comes free", () -> {
        String reply = c.command("MAIL FROM:<c@example.com>");
        assertThat(reply).matches("(250|451 4\\.7\\.0).*");
        return reply.startsWith("250");
      });
      assertThat(c.command("RCPT TO:<bob@example.net>")).startsWith("250");
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: after the wait\r\n\r\nbody\r\n.\r\n");
      assertThat(c.reply()).startsWith("250");
      assertThat(b.command("RSET")).startsWith("250");
    }
  }
}
