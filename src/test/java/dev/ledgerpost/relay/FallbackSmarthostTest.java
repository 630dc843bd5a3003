package dev.ledgerpost.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * downstream.fallback over real sockets: a first smarthost nobody listens on (a closed port) or one that greets
 * with 421 sends the mail through the next, and the row and the API name the one used; a failed host is skipped
 * for its back-off and tried again after it (by every event loop's pool, SMTP and HTTP alike); a message that
 * reached DATA on one host never goes to another.
 */
class FallbackSmarthostTest {
  static final String KEY = "fallback-test-key";
  static final String BUSY = "421 4.3.2 Too busy, try later";

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual();

  @Test
  void theFirstSmarthostDownSendsTheMailThroughTheFallbackAndTheRowAndTheApiNameIt() throws Exception {
    int down = closedPort();
    ScriptedSmtpServer fallback = server(new ScriptedSmtpServer.Script() {});
    start(down, List.of(fallback.port()), Map.of(), Clock.systemUTC());

    String reply = send("<first-down@example.com>");

    assertThat(reply).startsWith("250 2.0.0");
    String id = ledgerId(reply);
    String route = "smarthost:127.0.0.1:" + fallback.port();
    assertThat(fallback.messages()).hasSize(1);
    assertThat(fallback.messages().get(0).text()).contains("Message-ID: <first-down@example.com>");
    assertThat(routeOf(id)).isEqualTo(route);
    assertThat(LedgerRows.status(gateway.databaseUrl(), java.util.UUID.fromString(id))).isEqualTo("SENT");
    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + id).body());
    assertThat(detail.getString("route")).isEqualTo(route);
    JsonObject operation = new JsonObject(gateway.get("/api/v1/operations/" + id).body());
    assertThat(operation.getJsonObject("message").getString("route")).isEqualTo(route);
  }

  @Test
  void aFirstSmarthostThatGreetsWith421SendsTheMailThroughTheFallback() throws Exception {
    ScriptedSmtpServer busy = server(greeting(new AtomicReference<>(BUSY)));
    ScriptedSmtpServer fallback = server(new ScriptedSmtpServer.Script() {});
    start(busy.port(), List.of(fallback.port()), Map.of(), Clock.systemUTC());

    String reply = send("<first-busy@example.com>");

    assertThat(reply).startsWith("250 2.0.0");
    assertThat(routeOf(ledgerId(reply))).isEqualTo("smarthost:127.0.0.1:" + fallback.port());
    assertThat(busy.connections()).isEqualTo(1);
    assertThat(busy.commands()).as("nothing is said to a host that greets with 421").isEmpty();
    assertThat(fallback.messages()).hasSize(1);
  }

  @Test
  void everySmarthostDownIs451_4_4_1AndNothingIsRecorded() throws Exception {
    int down = closedPort();
    ScriptedSmtpServer busy = server(greeting(new AtomicReference<>(BUSY)));
    start(down, List.of(busy.port()), Map.of(), Clock.systemUTC());

    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      c.command("EHLO client.test");
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("451 4.4.1");
      assertThat(busy.connections()).isEqualTo(1);
      // Both in back-off now: the next client costs one attempt (the host whose back-off ends first), and hears 451.
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("451 4.4.1");
    }
    assertThat(busy.connections()).as("the closed port was the one retried").isEqualTo(1);
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();
  }

  @Test
  void aFailedSmarthostIsSkippedByEveryPoolDuringItsBackoffAndTriedAgainAfterIt() throws Exception {
    AtomicReference<String> greeting = new AtomicReference<>(BUSY);
    ScriptedSmtpServer primary = server(greeting(greeting));
    ScriptedSmtpServer fallback = server(new ScriptedSmtpServer.Script() {});
    MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
    Map<String, Object> extra = new HashMap<>();
    extra.put("api.keysFile", SendClient.keysFile(Map.of(KEY, "alice:1000")).toString());
    extra.put("downstream.hostBackoff", "30s");
    start(primary.port(), List.of(fallback.port()), extra, clock);
    String toFallback = "smarthost:127.0.0.1:" + fallback.port();

    String first = send("<backoff-1@example.com>");
    assertThat(routeOf(ledgerId(first))).isEqualTo(toFallback);
    assertThat(primary.connections()).isEqualTo(1);

    // The primary answers again, but its back-off has not ended: neither SMTP (whichever event loop takes the
    // client) nor the send API (its own pools on its own loops) tries it.
    greeting.set("220 gateway.downstream().test ESMTP scripted");
    clock.advance(Duration.ofSeconds(29));
    String second = send("<backoff-2@example.com>");
    assertThat(routeOf(ledgerId(second))).isEqualTo(toFallback);
    HttpResponse<String> sent = new SendClient(gateway.httpPort()).send(KEY, null, new JsonObject()
        .put("from", "alice@example.com").put("to", new JsonArray().add("bob@example.net")).put("subject", "s").put("text", "t"));
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    String operation = new JsonObject(sent.body()).getString("operationId");
    JsonObject status = new JsonObject(gateway.get("/api/v1/operations/" + operation).body());
    assertThat(status.getJsonObject("message").getString("route")).isEqualTo(toFallback);
    assertThat(primary.connections()).as("skipped during its back-off").isEqualTo(1);
    assertThat(fallback.messages()).hasSize(3);

    clock.advance(Duration.ofSeconds(1));
    String third = send("<backoff-3@example.com>");
    assertThat(third).startsWith("250 2.0.0");
    assertThat(routeOf(ledgerId(third))).isEqualTo("smarthost:127.0.0.1:" + primary.port());
    assertThat(primary.connections()).isEqualTo(2);
    assertThat(primary.messages()).hasSize(1);
    assertThat(fallback.messages()).hasSize(3);
  }

  @Test
  void aMessageWhoseConnectionDiesAfterDataIsNeverSentToAnotherSmarthost() throws Exception {
    AtomicInteger dataCommands = new AtomicInteger();
    ScriptedSmtpServer primary = server(new ScriptedSmtpServer.Script() {
      @Override
      public String data() {
        return dataCommands.incrementAndGet() == 1 ? null : "354 End data with <CR><LF>.<CR><LF>"; // first: hang up at DATA
      }

      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        return Future.succeededFuture(null); // hang up after the final dot
      }
    });
    ScriptedSmtpServer fallback = server(new ScriptedSmtpServer.Script() {});
    start(primary.port(), List.of(fallback.port()), Map.of(), Clock.systemUTC());
    String onPrimary = "smarthost:127.0.0.1:" + primary.port();

    String lostBefore = send("<lost-before@example.com>");
    assertThat(lostBefore).startsWith("451 4.4.2").contains("nothing was delivered");
    String before = LedgerRows.string(gateway.databaseUrl(),
        "SELECT id FROM messages WHERE message_id_header = '<lost-before@example.com>'");
    assertThat(routeOf(before)).isEqualTo(onPrimary);
    assertThat(LedgerRows.status(gateway.databaseUrl(), java.util.UUID.fromString(before))).isEqualTo("FAILED_TEMP");

    String lostAfter = send("<lost-after@example.com>");
    assertThat(lostAfter).startsWith("451 4.4.2").contains("outcome unknown");
    assertThat(routeOf(ledgerId(lostAfter))).isEqualTo(onPrimary);
    assertThat(LedgerRows.status(gateway.databaseUrl(), java.util.UUID.fromString(ledgerId(lostAfter)))).isEqualTo("UNKNOWN");

    assertThat(primary.dataCommands()).isEqualTo(2);
    assertThat(fallback.connections()).as("a connection lost after it opened is not a reason to fail over").isZero();
    assertThat(fallback.commands()).isEmpty();
  }

  @Test
  void a421AtMailOnAReusedConnectionRetriesOnAFreshOneWhichFailsOver() throws Exception {
    AtomicReference<String> greeting = new AtomicReference<>("220 gateway.downstream().test ESMTP scripted");
    AtomicInteger mails = new AtomicInteger();
    ScriptedSmtpServer primary = server(new ScriptedSmtpServer.Script() {
      @Override
      public String greeting() {
        return greeting.get();
      }

      @Override
      public String mail(String from) {
        if (mails.incrementAndGet() == 1) {
          return "250 2.1.0 Sender ok";
        }
        greeting.set(BUSY); // it goes on refusing new connections too
        return BUSY;
      }
    });
    ScriptedSmtpServer fallback = server(new ScriptedSmtpServer.Script() {});
    // One SMTP event loop, so that the second client gets the first one's pooled connection.
    start(primary.port(), List.of(fallback.port()), Map.of("smtp.instances", 1), Clock.systemUTC());
    int atStart = primary.connections(); // the start's probe of what the smarthost offers (EHLO, QUIT)

    String first = send("<reuse-1@example.com>");
    assertThat(routeOf(ledgerId(first))).isEqualTo("smarthost:127.0.0.1:" + primary.port());
    String second = send("<reuse-2@example.com>");

    assertThat(second).startsWith("250 2.0.0");
    assertThat(routeOf(ledgerId(second))).isEqualTo("smarthost:127.0.0.1:" + fallback.port());
    assertThat(mails.get()).as("MAIL on the pooled connection, then none on the fresh one it greeted with 421").isEqualTo(2);
    assertThat(primary.connections() - atStart).isEqualTo(2);
    assertThat(primary.messages()).hasSize(1);
    assertThat(fallback.messages()).hasSize(1);
    assertThat(fallback.messages().get(0).text()).contains("Message-ID: <reuse-2@example.com>");
  }

  private ScriptedSmtpServer server(ScriptedSmtpServer.Script script) throws Exception {
    return GatewayHarness.await(ScriptedSmtpServer.start(gateway.vertx(), script));
  }

  private static ScriptedSmtpServer.Script greeting(AtomicReference<String> greeting) {
    return new ScriptedSmtpServer.Script() {
      @Override
      public String greeting() {
        return greeting.get();
      }
    };
  }

  private void start(int primary, List<Integer> fallback, Map<String, Object> extra, Clock clock) throws Exception {
    Map<String, Object> o = GatewayHarness.defaults(primary);
    o.put("downstream.fallback", fallback.stream().map(p -> "127.0.0.1:" + p).toList());
    o.putAll(extra);
    gateway.begin(o, clock);
  }

  /** A port on loopback nobody listens on: bound, noted, closed. */
  private static int closedPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private String send(String messageId) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Message-ID: " + messageId + "\r\nSubject: s\r\n\r\nbody");
    }
  }

  private String routeOf(String id) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), "SELECT route FROM messages WHERE id = '" + id + "'");
  }

  private static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    assertThat(m.find()).as("ledger id in %s", reply).isTrue();
    return m.group(1);
  }
}
