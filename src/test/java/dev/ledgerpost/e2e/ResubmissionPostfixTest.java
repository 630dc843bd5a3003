package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.TcpProxy;
import io.vertx.core.Future;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 28 (resubmissions) with the client that retries for real: a private Postfix whose relayhost is the
 * gateway, retrying what it deferred by itself within seconds. A reply to the final dot that Postfix never
 * hears (a proxy closes the connection as the gateway's 250 comes) makes it defer and send the message again: the
 * gateway answers that retry from the ledger, so the smarthost holds one copy and Postfix's queue empties. A reply lost
 * between the gateway and the smarthost (UNKNOWN) holds Postfix's retries until an operator resolves the row.
 */
class ResubmissionPostfixTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String FROM = "alice@pf-client.test";
  private static final List<String> TO = List.of("bob@example.net");
  private static final Pattern MESSAGE_ID = Pattern.compile("(?m)^Message-ID: (<[^>]+>)");
  private static final String LOST_AFTER_DOT = "lost connection with 127.0.0.1[127.0.0.1] while sending end of data"
      + " -- message may be sent more than once";

  /** Message-IDs whose first copy the smarthost takes and then closes its socket on, without a reply to the final dot. */
  private final Set<String> unansweredOnce = ConcurrentHashMap.newKeySet();

  /** Each test starts its gateway ({@link #start}); the smarthost answers every final dot but those above. */
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
      boolean unanswered = unansweredOnce.remove(messageId(message.text()));
      return Future.succeededFuture(unanswered ? null : "250 2.0.0 Ok: queued as DS" + n);
    }
  });

  /** The defaults' relay networks hold 127.0.0.0/8, where Postfix connects from: no AUTH, one relay-network scope. */
  private void start() throws Exception {
    gateway.begin(GatewayHarness.defaults(gateway.downstream().port()));
  }

  /**
   * A private Postfix relaying everything to {@code port} (the gateway, or a proxy in front of it) that retries a deferred
   * message by itself within two or three seconds (its defaults are minutes): a deferred-queue scan every second, and a
   * back-off of 3 s. Not less: the queue manager dates a deferred file {@code now + back-off} in whole seconds and takes it
   * from the deferred queue once that is at most a second ahead, so with 1 s (or 2 s, near a second's end) it can take
   * the file back before the smtp process that deferred it has closed it; the file is locked then, and Postfix logs
   * "skipped, still being delivered" and puts it aside for a fixed 60 s (qmgr_active.c). With 3 s it waits a second at
   * least. Without TLS, so that the proxy finds the final dot in the clear.
   */
  private PostfixInstance postfix(int port, Map<String, String> more) throws Exception {
    Map<String, String> settings = new HashMap<>(Map.of(
        "relayhost", "[127.0.0.1]:" + port,
        "smtp_tls_security_level", "none",
        "queue_run_delay", "1s",
        "minimal_backoff_time", "3s",
        "maximal_backoff_time", "3s",
        "default_destination_concurrency_limit", "10"));
    settings.putAll(more);
    return gateway.closeAfter(PostfixInstance.start("pf-retry", settings, false));
  }

  /** A proxy in front of the gateway's SMTP port, for Postfix to relay through. */
  private TcpProxy proxyToGateway() throws Exception {
    return gateway.closeAfter(TcpProxy.to("127.0.0.1", gateway.smtpPort()));
  }

  /** Every header Postfix's cleanup would add is there but its Received: line; the Message-ID is the test's. */
  static byte[] message(String messageId) {
    return ("From: Alice <alice@pf-client.test>\n"
        + "To: Bob <bob@example.net>\n"
        + "Date: Mon, 1 Dec 2025 10:00:00 +0000\n"
        + "Message-ID: " + messageId + "\n"
        + "Subject: retried " + messageId + "\n"
        + "\n"
        + "The same bytes each time Postfix sends it.\n").getBytes(StandardCharsets.US_ASCII);
  }

  private static void send(PostfixInstance postfix, String messageId) throws Exception {
    postfix.sendmail(message(messageId), List.of(), FROM, TO);
  }

  static String messageId(String text) {
    Matcher m = MESSAGE_ID.matcher(text);
    return m.find() ? m.group(1) : null;
  }

  /** Waits until Postfix's queue is empty and {@code also} holds (an empty queue alone is also what comes before pickup). */
  private static void awaitQueueEmpty(PostfixInstance postfix, String what, Callable<Boolean> also) throws Exception {
    await(postfix, what, () -> also.call() && postfix.queued() == 0);
  }

  /** Waits for {@code condition}; a timeout shows Postfix's log as it is then, which says where its retries stand. */
  private static void await(PostfixInstance postfix, String what, Callable<Boolean> condition) throws Exception {
    if (!Poll.within(WAIT, condition)) {
      throw new AssertionError("not within " + WAIT + ": " + what + "; Postfix's log:\n" + tail(postfix.log()));
    }
  }

  private long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  private String string(String sql) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), sql);
  }

  /** The ledger id of the row opened for the first copy of this Message-ID. */
  private String rowOf(String messageId) throws Exception {
    return string("SELECT id FROM messages WHERE message_id_header = '" + messageId + "' AND resubmission_of IS NULL");
  }

  /** How many copies of this Message-ID the smarthost holds. */
  private long copies(String messageId) {
    return gateway.downstream().messages().stream().filter(r -> messageId.equals(messageId(r.text()))).count();
  }

  @Test
  void postfixRetriesAMessageWhoseReplyItNeverHeardAndIsAnsweredAlreadyRelayed() throws Exception {
    start();
    TcpProxy proxy = proxyToGateway();
    proxy.dropRepliesToFinalDot(n -> n == 1); // the first copy's 250 only: the retry hears its answer
    PostfixInstance postfix = postfix(proxy.port(), Map.of());
    String id = "<lost-reply@pf-client.test>";
    send(postfix, id);

    awaitQueueEmpty(postfix, "Postfix retried and heard an answer", () -> count("SELECT count(*) FROM resubmissions") >= 1);
    String first = rowOf(id);
    assertThat(proxy.repliesDropped()).isEqualTo(1);
    assertThat(proxy.finalDotsSeen()).as("the first copy and Postfix's retry").isEqualTo(2);
    assertThat(gateway.downstream().messages()).as("one copy at the smarthost").hasSize(1);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(1);
    assertThat(string("SELECT status FROM messages WHERE id = '" + first + "'")).isEqualTo("SENT");
    assertThat(count("SELECT count(*) FROM resubmissions")).isEqualTo(1);
    assertThat(string("SELECT outcome || '|' || client_ip FROM resubmissions WHERE message_id = '" + first + "'"))
        .as("the earlier row's one resubmission").isEqualTo("already_relayed|127.0.0.1");
    assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.resubmitted' AND message_id = '" + first + "'"))
        .isEqualTo(1);
    io.vertx.core.json.JsonArray listed = new io.vertx.core.json.JsonObject(gateway.get("/api/v1/messages/" + first).body())
        .getJsonArray("resubmissions");
    assertThat(listed).as("the earlier row's detail lists it").hasSize(1);
    assertThat(listed.getJsonObject(0).getString("outcome")).isEqualTo("already_relayed");

    // Postfix's side: it lost the reply, deferred the message once, and its retry was answered from the ledger.
    String log = postfix.log();
    assertThat(occurrences(log, LOST_AFTER_DOT)).as(tail(log)).isEqualTo(1);
    assertThat(occurrences(log, "status=deferred")).isEqualTo(1);
    assertThat(occurrences(log, "status=sent (250 2.0.0 Ok: already relayed as " + first + " ")).isEqualTo(1);
    assertThat(occurrences(log, "status=sent")).isEqualTo(1);
  }

  @Test
  void aHundredMessagesOverTenSessionsWithEveryFifthReplyLostReachTheSmarthostOnceEach() throws Exception {
    int messages = 100;
    int dropped = messages / 5;
    start();
    TcpProxy proxy = proxyToGateway();
    // Every fifth of the first hundred final dots, first copies and retries alike: 20 lost replies, each retried once
    // more, whatever their order (a retry's reply can be the one lost). Retries past the hundredth are answered.
    proxy.dropRepliesToFinalDot(n -> n % 5 == 0 && n <= messages);
    // The messages wait on hold until all are queued, then go at once, not one at a time as sendmail hands them in; and
    // the concurrency window starts at its limit: ten sessions from the first delivery, not Postfix's five growing.
    PostfixInstance postfix = postfix(proxy.port(), Map.of(
        "header_checks", "regexp:" + holdEverything(),
        "initial_destination_concurrency", "10"));
    for (int i = 0; i < messages; i++) {
      send(postfix, "<bulk-" + i + "@pf-client.test>");
    }
    await(postfix, "every message is on hold", () -> postfix.held() == messages);
    postfix.releaseHeld();

    awaitQueueEmpty(postfix, "Postfix delivered all, retries included",
        () -> gateway.downstream().messages().size() >= messages);
    assertThat(proxy.repliesDropped()).isEqualTo(dropped);
    assertThat(proxy.finalDotsSeen()).as("a final dot per message and per retry").isEqualTo(messages + dropped);
    // Connections, not deliveries: Postfix keeps idle sessions in its connection cache beside the ten that deliver, so
    // more than ten can be open; what this shows is that the sessions ran side by side.
    assertThat(proxy.mostOpenAtOnce()).as("sessions at once").isGreaterThan(1);
    Set<String> atSmarthost = new HashSet<>();
    gateway.downstream().messages().forEach(r -> atSmarthost.add(messageId(r.text())));
    assertThat(gateway.downstream().messages()).as("one copy each").hasSize(messages);
    assertThat(atSmarthost).hasSize(messages);
    assertThat(count("SELECT count(*) FROM messages WHERE status = 'SENT'")).isEqualTo(messages);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(messages);
    assertThat(count("SELECT count(*) FROM resubmissions WHERE outcome = 'already_relayed'")).isEqualTo(dropped);
    assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.resubmitted'")).isEqualTo(dropped);

    // Postfix's side: a lost connection per dropped reply, and each message sent once in the end; those whose last
    // copy's reply was lost heard "already relayed" (one per message the resubmissions name).
    String log = postfix.log();
    assertThat(occurrences(log, LOST_AFTER_DOT)).as(tail(log)).isEqualTo(dropped);
    assertThat(occurrences(log, "status=sent")).isEqualTo(messages);
    assertThat(occurrences(log, "status=sent (250 2.0.0 Ok: already relayed as "))
        .isEqualTo(count("SELECT count(DISTINCT message_id) FROM resubmissions"));
  }

  @Test
  void retriesOfAnUnknownOutcomeAreHeldUntilResolvedThenAnsweredOrRelayedOnce() throws Exception {
    start();
    String delivered = "<unknown-delivered@pf-client.test>";
    String notDelivered = "<unknown-not-delivered@pf-client.test>";
    unansweredOnce.addAll(List.of(delivered, notDelivered)); // the smarthost takes each and closes without a reply
    PostfixInstance postfix = postfix(gateway.smtpPort(), Map.of());
    send(postfix, delivered);
    send(postfix, notDelivered);

    // Postfix heard 451 4.4.2 and retried; the retries are held: nothing more goes to the smarthost.
    await(postfix, "a held retry of each",
        () -> count("SELECT count(DISTINCT message_id) FROM resubmissions WHERE outcome = 'held'") == 2);
    String a = rowOf(delivered);
    String b = rowOf(notDelivered);
    assertThat(string("SELECT string_agg(DISTINCT status, ',') FROM messages")).isEqualTo("UNKNOWN");
    assertThat(gateway.downstream().messages()).as("the first copies only").hasSize(2);
    assertThat(postfix.queued()).isEqualTo(2);
    assertThat(postfix.log()).contains("said: 451 4.4.2 Outcome of previous submission " + a + " not yet known",
        "said: 451 4.4.2 Outcome of previous submission " + b + " not yet known");

    resolve(a, "DELIVERED");
    resolve(b, "NOT_DELIVERED");
    awaitQueueEmpty(postfix, "Postfix's retries after the resolutions were answered",
        () -> count("SELECT count(*) FROM messages WHERE resubmission_of IS NOT NULL AND status = 'SENT'") >= 1);

    // DELIVERED: the next retry heard it was relayed; the smarthost still holds its one copy.
    String log = postfix.log();
    assertThat(copies(delivered)).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM resubmissions WHERE outcome = 'already_relayed' AND message_id = '" + a + "'"))
        .isEqualTo(1);
    assertThat(occurrences(log, "status=sent (250 2.0.0 Ok: already relayed as " + a + " ")).as(tail(log)).isEqualTo(1);
    // NOT_DELIVERED: relayed once more, as a new row that names the earlier one; nothing answered from the ledger.
    assertThat(copies(notDelivered)).isEqualTo(2);
    String again = string("SELECT id FROM messages WHERE resubmission_of = '" + b + "'");
    assertThat(count("SELECT count(*) FROM resubmissions WHERE outcome <> 'held' AND message_id = '" + b + "'")).isZero();
    assertThat(occurrences(log, "status=sent (250 2.0.0 Ok: queued as " + again)).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM messages")).isEqualTo(3);
    assertThat(occurrences(log, "status=sent")).isEqualTo(2);
  }

  private void resolve(String id, String outcome) throws Exception {
    HttpResponse<String> r = gateway.post("/api/v1/messages/" + id + "/resolution",
        "{\"outcome\": \"" + outcome + "\", \"note\": \"checked the smarthost's log\"}", "X-Operator", "carol");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
  }

  /**
   * A header check that puts every message on hold (Postfix's cleanup reads it as user postfix: the directory is open
   * to it). Its path.
   */
  private static Path holdEverything() throws Exception {
    Path dir = GatewayHarness.tempDir("postfix-hold-");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    return Files.writeString(dir.resolve("header_checks"), "/^Message-ID:/ HOLD queued until the test releases it\n");
  }

  /** How often {@code what} occurs in Postfix's log. */
  static int occurrences(String log, String what) {
    return PostfixInteropTest.count(log, what);
  }

  static String tail(String log) {
    return PostfixInteropTest.tail(log);
  }
}
