package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Haproxy;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The PROXY protocol on the SMTP listener behind a real HAProxy (TCP mode, send-proxy-v2 and send-proxy).
 * The client binds 127.0.0.2 (and other loopback addresses) and HAProxy connects from {@code source
 * 127.0.0.3}, so the two differ: whatever the gateway decides by address must name the client, never the
 * proxy. A third route connects from 127.0.0.5, outside smtp.proxyNetworks: its header is refused. Raw
 * sockets from 127.0.0.7 (a trusted proxy address too) send what HAProxy never would.
 */
class ProxyProtocolTest {
  private static final String PROXY = "127.0.0.3";
  private static final String UNTRUSTED_PROXY = "127.0.0.5";
  private static final String RAW_PROXY = "127.0.0.7";
  private static final String EXPECTED_HEADER = "421 4.7.0 Expected a valid PROXY protocol header, closing connection";

  static GatewayHarness plain;
  static Haproxy haproxy;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("smtp.proxyProtocol", "any")
      .with("smtp.proxyNetworks", PROXY + "/32, " + RAW_PROXY + "/32")
      .with("smtp.proxyTimeout", "1s")
      .with("smtp.relayNetworks", "127.0.0.2/32") // the client relays; HAProxy's 127.0.0.3 would not
      .with("smtp.maxConnectionsPerAddress", 2)
      .with("auth.usersFile", Credentials.htpasswd(Map.of("alice", "s3cret")).toString())
      .with("smtp.allowInsecureAuth", true)
      .with("auth.failureDelay", "0s")
      .with("auth.banThreshold", 2)
      .with("auth.banWindow", "10m")
      .afterStart(g -> {
        // smtp.proxyProtocol none
        plain = g.closeAfter(GatewayHarness.start(g.vertx(), GatewayHarness.defaults(g.downstream().port())));
        haproxy = g.closeAfter(Haproxy.start(List.of(
            new Haproxy.Route("v2", "127.0.0.1", g.smtpPort(), "send-proxy-v2 source " + PROXY),
            new Haproxy.Route("v1", "127.0.0.1", g.smtpPort(), "send-proxy source " + PROXY),
            new Haproxy.Route("untrusted", "127.0.0.1", g.smtpPort(), "send-proxy-v2 source " + UNTRUSTED_PROXY))));
      });

  /** A client at {@code from} talking to the gateway through HAProxy's {@code route}. */
  private static SmtpTestClient via(String route, String from) throws Exception {
    return new SmtpTestClient(haproxy.port(route), from);
  }

  private static String ledgerClientIp(String mailFrom) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), "SELECT client_ip FROM messages WHERE mail_from = '" + mailFrom + "'");
  }

  private static String receivedOf(String mailFrom) {
    return gateway.downstream().messages().stream().filter(m -> m.mailFrom().equals(mailFrom)).findFirst()
        .map(ScriptedSmtpServer.Received::text).orElseThrow();
  }

  @ParameterizedTest
  @ValueSource(strings = {"v2", "v1"})
  void behindHaproxyTheClientsAddressRelaysAndIsTheOneInTheReceivedHeaderTheLedgerAndTheLog(String route) throws Exception {
    String from = "sender-" + route + "@client.example";
    try (LogCapture log = LogCapture.at("dev.ledgerpost.intake.smtp.SmtpVerticle", Level.DEBUG);
        SmtpTestClient client = via(route, "127.0.0.2")) {
      assertThat(client.reply()).startsWith("220 gateway.test");
      // No AUTH: 127.0.0.2 is in smtp.relayNetworks, HAProxy's 127.0.0.3 is not.
      assertThat(client.sendMail(from, List.of("rcpt@dest.example"), "Subject: via " + route + "\r\n\r\nhello\r\n"))
          .startsWith("250 2.0.0");
      assertThat(client.command("QUIT")).startsWith("221");
      assertThat(log.linesContaining("proxy " + PROXY + " passes on client 127.0.0.2:", "(PROXY " + route + ")")).hasSize(1);
    }
    assertThat(receivedOf(from)).startsWith("Received: from client.test ([127.0.0.2])\r\n\tby gateway.test");
    assertThat(ledgerClientIp(from)).isEqualTo("127.0.0.2");
  }

  @Test
  void theConnectionLimitCountsTheClientsAddressNotTheProxys() throws Exception {
    List<SmtpTestClient> open = new ArrayList<>();
    try {
      for (String route : List.of("v2", "v1")) {
        SmtpTestClient c = via(route, "127.0.0.4");
        open.add(c);
        assertThat(c.reply()).startsWith("220");
      }
      try (SmtpTestClient third = via("v2", "127.0.0.4")) {
        assertThat(third.reply()).isEqualTo("421 4.7.0 Too many connections from your address, try again later");
        assertThat(third.closedByServer()).isTrue();
      }
      // HAProxy's own address has three connections open now, and the limit is 2: only the client's counts.
      SmtpTestClient other = via("v2", "127.0.0.6");
      open.add(other);
      assertThat(other.reply()).startsWith("220");
      // Outside smtp.relayNetworks, as HAProxy is: relaying needs AUTH.
      assertThat(other.command("EHLO client.test")).startsWith("250");
      assertThat(other.command("MAIL FROM:<outsider@client.example>")).isEqualTo("530 5.7.0 Authentication required");
    } finally {
      for (SmtpTestClient c : open) {
        c.close();
      }
    }
  }

  @Test
  void failedAuthIsLoggedAndBannedByTheClientsAddress() throws Exception {
    String auth = "AUTH PLAIN " + Base64.getEncoder().encodeToString("\0alice\0wrong".getBytes(StandardCharsets.UTF_8));
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.SmtpSession")) {
      try (SmtpTestClient c = via("v2", "127.0.0.8")) {
        assertThat(c.reply()).startsWith("220");
        assertThat(c.command("EHLO client.test")).startsWith("250");
        assertThat(c.command(auth)).startsWith("535 5.7.8");
        assertThat(c.command(auth)).startsWith("535 5.7.8");
      }
      assertThat(log.warningsContaining("authentication failed for user 'alice' from 127.0.0.8")).hasSize(2);
      assertThat(log.warningsContaining(PROXY)).isEmpty();
    }
    try (SmtpTestClient banned = via("v1", "127.0.0.8")) {
      assertThat(banned.reply()).isEqualTo("421 4.7.0 Too many failed authentications from your address, try again later");
      assertThat(banned.closedByServer()).isTrue();
    }
    try (SmtpTestClient other = via("v2", "127.0.0.9")) {
      assertThat(other.reply()).startsWith("220");
      assertThat(other.command("EHLO client.test")).startsWith("250");
      assertThat(other.command("AUTH PLAIN " + Base64.getEncoder().encodeToString("\0alice\0s3cret".getBytes(
          StandardCharsets.UTF_8)))).startsWith("235");
    }
  }

  @Test
  void aProxyOutsideProxyNetworksIsNotBelievedItsConnectionIsClosedAndNothingRelayed() throws Exception {
    int before = gateway.downstream().messages().size();
    List<String> replies = new ArrayList<>();
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.SmtpConnection");
        SmtpTestClient client = via("untrusted", "127.0.0.2")) {
      // The gateway greets a peer it does not expect a header from, and then meets one.
      for (String r = client.reply(); r != null; r = client.reply()) {
        replies.add(r);
      }
      assertThat(log.linesContaining("SMTP peer " + UNTRUSTED_PROXY + " sent a PROXY header but is not in smtp.proxyNetworks"))
          .hasSize(1);
    }
    assertThat(replies).hasSize(2);
    assertThat(replies.get(0)).startsWith("220 gateway.test");
    assertThat(replies.get(1)).isEqualTo("421 4.7.0 PROXY protocol header not accepted from this address, closing connection");
    assertThat(gateway.downstream().messages()).hasSize(before);
  }

  @Test
  void aDirectClientOutsideProxyNetworksIsServedOnItsOwnAddressButItsProxyLineClosesTheConnection() throws Exception {
    String from = "direct@client.example";
    try (SmtpTestClient direct = new SmtpTestClient(gateway.smtpPort(), "127.0.0.2")) {
      assertThat(direct.reply()).startsWith("220 gateway.test"); // greeted at once: no header is awaited from it
      assertThat(direct.sendMail(from, List.of("rcpt@dest.example"), "Subject: direct\r\n\r\nhello\r\n")).startsWith("250 2.0.0");
    }
    assertThat(receivedOf(from)).startsWith("Received: from client.test ([127.0.0.2])");

    int before = gateway.downstream().messages().size();
    try (SmtpTestClient spoofer = new SmtpTestClient(gateway.smtpPort(), "127.0.0.12")) {
      assertThat(spoofer.reply()).startsWith("220 gateway.test");
      // It claims to be 127.0.0.2, which may relay: not read, not believed.
      spoofer.send("PROXY TCP4 127.0.0.2 127.0.0.1 5555 25\r\nEHLO client.test\r\nMAIL FROM:<spoof@client.example>\r\n");
      assertThat(spoofer.reply()).isEqualTo("421 4.7.0 PROXY protocol header not accepted from this address, closing connection");
      assertThat(spoofer.closedByServer()).isTrue();
    }
    assertThat(gateway.downstream().messages()).hasSize(before);
    assertThat(gateway.downstream().commands()).noneMatch(c -> c.contains("spoof@"));
  }

  @Test
  void aMalformedHeaderFromATrustedProxyClosesTheConnectionBeforeAnyGreeting() throws Exception {
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.SmtpVerticle");
        SmtpTestClient raw = new SmtpTestClient(gateway.smtpPort(), RAW_PROXY)) {
      raw.send("PROXY TCP4 127.0.0.256 127.0.0.1 5555 25\r\nEHLO client.test\r\n");
      assertThat(raw.reply()).isEqualTo(EXPECTED_HEADER);
      assertThat(raw.closedByServer()).isTrue();
      assertThat(log.warningsContaining("SMTP connection from proxy " + RAW_PROXY + " closed", "127.0.0.256")).hasSize(1);
    }
  }

  @Test
  void aTrustedProxyThatSendsSmtpInsteadOfAHeaderIsClosed() throws Exception {
    try (SmtpTestClient raw = new SmtpTestClient(gateway.smtpPort(), RAW_PROXY)) {
      raw.send("EHLO client.test\r\n");
      assertThat(raw.reply()).isEqualTo(EXPECTED_HEADER);
      assertThat(raw.closedByServer()).isTrue();
    }
  }

  @Test
  void aTrustedProxyThatSendsNothingOrHalfAHeaderIsClosedAtTheDeadline() throws Exception {
    for (String partial : List.of("", "PROXY TCP4 127.0.0.2 127.0")) {
      try (SmtpTestClient raw = new SmtpTestClient(gateway.smtpPort(), RAW_PROXY)) {
        long t0 = System.nanoTime();
        raw.send(partial);
        assertThat(raw.reply()).isEqualTo(EXPECTED_HEADER); // smtp.proxyTimeout is 1s
        long millis = (System.nanoTime() - t0) / 1_000_000;
        assertThat(millis).isBetween(900L, 10_000L);
        assertThat(raw.closedByServer()).isTrue();
      }
    }
  }

  @Test
  void whatTheClientSentWithTheHeaderIsReadAfterTheGreeting() throws Exception {
    try (SmtpTestClient raw = new SmtpTestClient(gateway.smtpPort(), RAW_PROXY)) {
      raw.send("PROXY TCP4 127.0.0.2 127.0.0.1 5555 25\r\nEHLO early.test\r\n"); // one write: an early talker
      assertThat(raw.reply()).startsWith("220 gateway.test");
      assertThat(raw.reply()).startsWith("250-gateway.test");
      assertThat(raw.command("QUIT")).startsWith("221");
    }
  }

  @Test
  void aV2LocalHeaderIsTheProxysOwnConnectionAndGetsNoClientsRights() throws Exception {
    ByteArrayOutputStream local = new ByteArrayOutputStream();
    local.writeBytes(new byte[] {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x20, 0x00, 0x00, 0x00});
    try (SmtpTestClient raw = new SmtpTestClient(gateway.smtpPort(), RAW_PROXY)) {
      raw.sendBytes(local.toByteArray());
      assertThat(raw.reply()).startsWith("220 gateway.test");
      assertThat(raw.command("EHLO health.check")).startsWith("250");
      assertThat(raw.command("MAIL FROM:<check@proxy.example>")).isEqualTo("530 5.7.0 Authentication required");
    }
  }

  @Test
  void withProxyProtocolNoneAProxyLineIsAnUnknownCommandAndChangesNothing() throws Exception {
    String from = "no-proxy@client.example";
    try (SmtpTestClient client = new SmtpTestClient(plain.smtpPort(), "127.0.0.2")) {
      assertThat(client.reply()).startsWith("220");
      assertThat(client.command("PROXY TCP4 10.9.9.9 127.0.0.1 5555 25")).isEqualTo("500 5.5.2 Syntax error, command unrecognized");
      assertThat(client.sendMail(from, List.of("rcpt@dest.example"), "Subject: none\r\n\r\nhello\r\n")).startsWith("250 2.0.0");
      assertThat(client.command("QUIT")).startsWith("221");
    }
    assertThat(receivedOf(from)).startsWith("Received: from client.test ([127.0.0.2])");
    assertThat(LedgerRows.string(plain.databaseUrl(), "SELECT client_ip FROM messages WHERE mail_from = '" + from + "'"))
        .isEqualTo("127.0.0.2");
  }
}
