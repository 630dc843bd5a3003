package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, item 2: clients that hang up while their MAIL is on its way to a slow smarthost must not keep its
 * connections. Real sockets both sides: the smarthost answers MAIL after half a second, the gateway may hold three
 * smarthost connections, and eight clients say EHLO and MAIL and close at once. Before the fix every slot stayed
 * taken (the transaction was stored in a session that was gone) and every later client heard
 * {@code 451 4.7.0 All downstream connections are in use} until the smarthost dropped the connections.
 */
class ClientHangupTest {
  private static final Duration MAIL_DELAY = Duration.ofMillis(500);
  private static final int SLOTS = 3;
  private static final int HANGUPS = 8;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("downstream.maxConnections", SLOTS)
      .with("downstream.maxIdle", 0) // a connection that comes back is closed: an open one is one somebody holds
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> mailLater(String from) {
          Promise<String> reply = Promise.promise();
          g.vertx().setTimer(MAIL_DELAY.toMillis(), t -> reply.complete("250 2.1.0 Sender ok"));
          return reply.future();
        }
      });

  @Test
  void clientsThatHangUpDuringMailReleaseTheirSmarthostConnections() throws Exception {
    List<SmtpTestClient> clients = new ArrayList<>();
    for (int i = 0; i < HANGUPS; i++) {
      SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
      assertThat(c.reply()).startsWith("220");
      assertThat(c.command("EHLO hangup" + i + ".test")).startsWith("250");
      clients.add(c);
    }
    for (SmtpTestClient c : clients) {
      c.send("MAIL FROM:<hangup@example.com>\r\n");
      c.close(); // at once: the gateway's MAIL is still on its way to (or waiting at) the smarthost
    }
    // The hung-up clients' MAILs reached the smarthost: every slot was taken by one of them.
    Poll.until(Duration.ofSeconds(10), "the smarthost got MAIL on " + SLOTS + " connections",
        () -> gateway.downstream().commands().stream().filter(l -> l.startsWith("MAIL FROM:<hangup@")).count() == SLOTS);

    // Once the smarthost has answered them, a normal client gets a connection (it would hear 451 4.7.0 for as long
    // as the smarthost keeps the connections open, were they still held).
    String heard = normalClientMail(Duration.ofSeconds(10));
    assertThat(heard).startsWith("250 2.0.0 Ok: queued as ");
    assertThat(gateway.downstream().messages()).hasSize(1);

    // Every smarthost connection came back and, with maxIdle 0, was closed: none is held for a gone session.
    Poll.until(Duration.ofSeconds(10), "every smarthost connection closed (open: "
        + gateway.downstream().openConnections() + ")", () -> gateway.downstream().openConnections() == 0);
    assertThat(gateway.downstream().commands().stream().filter(l -> l.equals("RSET")).count())
        .as("each transaction of a gone client was reset downstream").isEqualTo(SLOTS);
  }

  /**
   * A well-behaved client's message. Its MAIL is tried again while the hung-up clients' MAILs are still being
   * answered (a 451 4.7.0 then is right: the slots are in use); past the deadline the last answer is returned.
   */
  private String normalClientMail(Duration within) throws Exception {
    String[] last = {null};
    boolean through = Poll.within(within, () -> {
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
        c.reply();
        c.command("EHLO normal.test");
        String mail = c.command("MAIL FROM:<normal@example.com>");
        if (!mail.startsWith("250")) {
          last[0] = mail;
          c.command("QUIT");
          return false;
        }
        assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
        assertThat(c.command("DATA")).startsWith("354");
        c.send("Subject: after the hang-ups\r\n\r\nbody\r\n.\r\n");
        last[0] = c.reply();
        c.command("QUIT");
        return true;
      }
    });
    return through ? last[0] : "not through within " + within + "; last MAIL answer: " + last[0];
  }
}
