package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Connection limits and timeouts on real sockets: a client cannot hold the gateway hostage. */
class SessionLimitsTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("smtp.maxConnections", 3)
      .with("smtp.idleTimeout", "400ms")
      .with("smtp.commandTimeout", "800ms");

  @Test
  void aSilentClientIsToldAndDisconnectedAfterTheIdleTimeout() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(c.reply()).startsWith("220");
      assertThat(c.reply()).isEqualTo("421 4.4.2 Timeout, closing connection");
      assertThat(c.closedByServer()).isTrue();
    }
  }

  @Test
  void aClientTricklingOneCommandLineIsCutOffByTheCommandTimeout() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      long start = System.nanoTime();
      String reply;
      // One byte every 100 ms never completes the line; the idle timer alone would be reset forever.
      for (char ch : "EHLO slow.client.example.with.a.long.name".toCharArray()) {
        try {
          c.send(String.valueOf(ch));
        } catch (java.io.IOException closedByServer) {
          break;
        }
        Thread.sleep(100); // the fault itself: a slow client, not synchronisation
        if (System.nanoTime() - start > 3_000_000_000L) {
          break;
        }
      }
      reply = c.reply();
      assertThat(reply).isEqualTo("421 4.4.2 Timeout, closing connection");
    }
  }

  /**
   * Since issue 33 one timer serves the idle and command timeouts and is re-armed only when it fires: a client that
   * speaks within the idle timeout every time keeps its connection well past both timeouts, and once silent is timed
   * out after the idle timeout from its last reply, not sooner (a deadline left over from before) nor never.
   */
  @Test
  void eachCommandRestartsTheIdleTimeoutAndSilenceEndsItOnTime() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(c.reply()).startsWith("220");
      long start = System.nanoTime();
      while (System.nanoTime() - start < 2_000_000_000L) { // 2 s: five idle timeouts, two and a half command ones
        Thread.sleep(250); // the client's pace, under the 400 ms idle timeout: the behaviour under test
        assertThat(c.command("NOOP")).startsWith("250");
      }
      long silentFrom = System.nanoTime();
      assertThat(c.reply()).isEqualTo("421 4.4.2 Timeout, closing connection");
      long silentMs = (System.nanoTime() - silentFrom) / 1_000_000;
      assertThat(silentMs).isBetween(380L, 3_000L);
      assertThat(c.closedByServer()).isTrue();
    }
  }

  @Test
  void connectionsAboveTheLimitAreRefusedWith421() throws Exception {
    try (SmtpTestClient a = new SmtpTestClient(gateway.smtpPort());
        SmtpTestClient b = new SmtpTestClient(gateway.smtpPort());
        SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(a.reply()).startsWith("220");
      assertThat(b.reply()).startsWith("220");
      assertThat(c.reply()).startsWith("220");
      try (SmtpTestClient d = new SmtpTestClient(gateway.smtpPort())) {
        assertThat(d.reply()).isEqualTo("421 4.7.0 Too many connections, try again later");
      }
    }
    // Slots are given back when clients leave (the server sees the close a moment later: poll).
    Poll.until(Duration.ofSeconds(5), "a slot came back", () -> {
      try (SmtpTestClient e = new SmtpTestClient(gateway.smtpPort())) {
        if (!e.reply().startsWith("220")) {
          return false;
        }
        assertThat(e.sendMail("a@example.com", List.of("b@example.net"), "Subject: ok\r\n\r\nbody")).startsWith("250");
        return true;
      }
    });
  }
}
