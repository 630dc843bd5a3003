package dev.ledgerpost.relay;

import dev.ledgerpost.relay.retry.RetryPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The relay contract (docs/contract.md §1) is one class, {@link RelayContract}, for SMTP and HTTP intake alike:
 * every case here runs once through an SMTP client and once through the send API (raw sends, so the
 * Message-ID is the test's), against one gateway, a scripted downstream and real PostgreSQL locks. The
 * ledger and the downstream must end the same way for both; what the client hears is what that intake's
 * reply table says (§1.9 for SMTP, §1.10 for HTTP).
 */
class RelayContractBothIntakesTest {
  static final String API_KEY = "contract-test-key";
  static final String ALL_TABLES = "messages, recipients, outbox";

  static SendClient http;
  /** What the downstream answers to DATA (null: it hangs up) and to the final dot (null: it hangs up); set per test. */
  static volatile Supplier<String> onData;
  static volatile Function<ScriptedSmtpServer.Received, Future<String>> onDot;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("ledger.lockTimeout", "250ms") // the retry budget is then about one second
      .with("retry.initialBackoff", "100ms")
      .with("api.keysFile", SendClient.keysFile(Map.of(API_KEY, "contract:1000")).toString())
      .afterStart(g -> http = g.sendClient())
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public String data() {
          return onData.get();
        }

        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return onDot.apply(message);
        }
      });

  @BeforeEach
  void downstreamAcceptsEverything() {
    onData = () -> "354 End data with <CR><LF>.<CR><LF>";
    onDot = m -> Future.succeededFuture("250 2.0.0 Ok: queued as DS-" + UUID.randomUUID());
  }

  @AfterEach
  void nothingBrokeTheLineEndings() {
    assertThat(gateway.downstream().bareLineEndings()).isEmpty();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The two intakes, each with its own reply table.

  /** What a client heard: the SMTP reply to the final dot, or the HTTP status, headers and body. */
  record Heard(Intake intake, String smtpReply, HttpResponse<String> response) {
    JsonObject json() {
      return new JsonObject(response.body());
    }

    @Override
    public String toString() {
      return intake + ": " + (smtpReply != null ? smtpReply : response.statusCode() + " " + response.body());
    }
  }

  enum Intake {
    SMTP {
      @Override
      Heard submit(String from, List<String> to, byte[] message) throws Exception {
        try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
          c.reply();
          expect(c.command("EHLO client.test"), "250");
          expect(c.command("MAIL FROM:<" + from + "> BODY=8BITMIME"), "250");
          for (String t : to) {
            expect(c.command("RCPT TO:<" + t + ">"), "250");
          }
          expect(c.command("DATA"), "354");
          c.sendBytes(SmtpTestClient.dotStuffed(message));
          c.send(".\r\n");
          return new Heard(this, c.reply(), null);
        }
      }

      @Override
      void heardSent(Heard h, String ledgerId, boolean settled) {
        // 250 whether or not the settle committed: a 451 would make the client send a duplicate.
        assertThat(h.smtpReply()).as("%s", h).startsWith("250 2.0.0 Ok: queued as " + ledgerId + " (downstream: Ok: queued");
      }

      @Override
      void heardDeferred(Heard h, String downstreamReply) {
        assertThat(h.smtpReply()).as("%s", h).isEqualTo("451 4.3.1 Downstream: Insufficient system storage");
      }

      @Override
      void heardRejected(Heard h, String downstreamReply) {
        assertThat(h.smtpReply()).as("%s", h).isEqualTo("554 5.7.1 Downstream: Message rejected as spam");
      }

      @Override
      void heardLostBeforeDot(Heard h) {
        assertThat(h.smtpReply()).as("%s", h)
            .isEqualTo("451 4.4.2 Downstream connection lost before delivery; nothing was delivered, try again later");
      }

      @Override
      void heardUnknown(Heard h, String ledgerId) {
        assertThat(h.smtpReply()).as("%s", h)
            .isEqualTo("451 4.4.2 Downstream reply lost after the message was sent (" + ledgerId + "); outcome unknown");
      }

      @Override
      void heardNotRecorded(Heard h) {
        assertThat(h.smtpReply()).as("%s", h).isEqualTo("451 4.3.0 Temporary local persistence failure");
      }
    },

    HTTP {
      @Override
      Heard submit(String from, List<String> to, byte[] message) throws Exception {
        JsonObject body = new JsonObject()
            .put("envelope", new JsonObject().put("from", from).put("to", new JsonArray(List.copyOf(to))))
            .put("raw", Base64.getEncoder().encodeToString(message));
        return new Heard(this, null, http.send(API_KEY, null, body));
      }

      @Override
      void heardSent(Heard h, String ledgerId, boolean settled) {
        assertThat(h.response().statusCode()).as("%s", h).isEqualTo(settled ? 200 : 202);
        JsonObject json = h.json();
        assertThat(json.getString("operationId")).isEqualTo(ledgerId);
        assertThat(json.getString("status")).isEqualTo(settled ? "SENT" : "ACCEPTED");
        assertThat(json.getJsonObject("ledger").getBoolean("settled")).isEqualTo(settled);
        assertThat(json.getString("downstreamReply")).startsWith("250 2.0.0 Ok: queued as DS-");
      }

      @Override
      void heardDeferred(Heard h, String downstreamReply) {
        SendClient.assertProblem(h.response(), 503, h.toString());
        assertThat(h.response().headers().firstValue("Retry-After")).hasValue("60");
        assertThat(h.json().getString("downstreamReply")).isEqualTo(downstreamReply);
      }

      @Override
      void heardRejected(Heard h, String downstreamReply) {
        SendClient.assertProblem(h.response(), 422, h.toString());
        assertThat(h.json().getString("downstreamReply")).isEqualTo(downstreamReply);
      }

      @Override
      void heardLostBeforeDot(Heard h) {
        SendClient.assertProblem(h.response(), 503, h.toString());
        assertThat(h.response().headers().firstValue("Retry-After")).hasValue("60");
        assertThat(h.json().getString("detail")).contains("(4.4.2)", "nothing was delivered");
      }

      @Override
      void heardUnknown(Heard h, String ledgerId) {
        assertThat(h.response().statusCode()).as("%s", h).isEqualTo(202);
        assertThat(h.json().getString("operationId")).isEqualTo(ledgerId);
        assertThat(h.json().getString("status")).isEqualTo("UNKNOWN");
        assertThat(h.json().getString("detail")).contains("Do not resend");
      }

      @Override
      void heardNotRecorded(Heard h) {
        SendClient.assertProblem(h.response(), 503, h.toString());
        assertThat(h.response().headers().firstValue("Retry-After")).hasValue("5");
        assertThat(h.json().getString("detail")).contains("(4.3.0)", "not sent");
      }
    };

    /** Submits one message (its unstuffed RFC 5322 bytes) and returns what the client heard. */
    abstract Heard submit(String from, List<String> to, byte[] message) throws Exception;

    abstract void heardSent(Heard h, String ledgerId, boolean settled);

    abstract void heardDeferred(Heard h, String downstreamReply);

    abstract void heardRejected(Heard h, String downstreamReply);

    abstract void heardLostBeforeDot(Heard h);

    abstract void heardUnknown(Heard h, String ledgerId);

    abstract void heardNotRecorded(Heard h);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The cases.

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void downstreamAcceptsOneByteExactCopyAndTheLedgerSaysSent(Intake intake) throws Exception {
    Sample s = new Sample(intake);
    int dataBefore = gateway.downstream().dataCommands();

    Heard h = s.submit();

    String id = s.ledgerId();
    intake.heardSent(h, id, true);
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("SENT");
    assertThat(count("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'ACCEPTED'"))
        .isEqualTo(2);
    List<ScriptedSmtpServer.Received> copies = s.copies();
    assertThat(copies).hasSize(1);
    assertThat(gateway.downstream().dataCommands() - dataBefore).isEqualTo(1);
    ScriptedSmtpServer.Received got = copies.get(0);
    assertThat(got.mailFrom()).isEqualTo("sender@example.com");
    assertThat(got.recipients()).containsExactly("one@example.net", "two@example.net");
    String trace = new String(got.data(), 0, got.data().length - s.bytes.length, StandardCharsets.UTF_8);
    assertThat(trace).startsWith("Received: from ").contains(" id " + id).endsWith("\r\n");
    assertThat(got.afterTrace()).isEqualTo(s.bytes);
    assertThat(events(id, "message.pending")).isEqualTo(1);
    assertThat(events(id, "message.settled")).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void downstream4xxOnTheFinalDotIsFailedTempAndTheIntakesTemporaryAnswer(Intake intake) throws Exception {
    String reply = "452 4.3.1 Insufficient system storage";
    Sample s = refusedOnTheDot(intake, reply, intake::heardDeferred, "FAILED_TEMP", "4.3.1");
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT downstream_reply FROM messages WHERE id = '" + s.ledgerId() + "'"))
        .isEqualTo(reply);
    assertThat(s.copies()).hasSize(1); // the downstream had the body, and refused it
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void downstream5xxOnTheFinalDotIsFailedPermAndTheIntakesPermanentAnswer(Intake intake) throws Exception {
    refusedOnTheDot(intake, "554 5.7.1 Message rejected as spam", intake::heardRejected, "FAILED_PERM", "5.7.1");
  }

  /**
   * The downstream answers {@code reply} to the final dot: the client hears what {@code heard} checks (against the
   * downstream's reply), the row and both recipients end {@code status} with the reply's {@code code}, and one
   * settled event is written.
   */
  private Sample refusedOnTheDot(Intake intake, String reply, BiConsumer<Heard, String> heard, String status, String code)
      throws Exception {
    onDot = m -> Future.succeededFuture(reply);
    Sample s = new Sample(intake);

    Heard h = s.submit();

    heard.accept(h, reply);
    String id = s.ledgerId();
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo(status);
    assertThat(count("SELECT count(*) FROM recipients WHERE message_id = '" + id
        + "' AND status = '" + status + "' AND enhanced_code = '" + code + "'")).isEqualTo(2);
    assertThat(events(id, "message.settled")).isEqualTo(1);
    return s;
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void connectionLostBeforeTheFinalDotIsFailedTemp442AndNothingDelivered(Intake intake) throws Exception {
    onData = () -> null; // the downstream hangs up on DATA: no body can have reached it
    Sample s = new Sample(intake);
    int dataBefore = gateway.downstream().dataCommands();

    Heard h = s.submit();

    intake.heardLostBeforeDot(h);
    String id = s.ledgerId();
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("FAILED_TEMP");
    assertThat(count("SELECT count(*) FROM recipients WHERE message_id = '" + id
        + "' AND status = 'FAILED_TEMP' AND enhanced_code = '4.4.2'")).isEqualTo(2);
    assertThat(gateway.downstream().dataCommands() - dataBefore).isEqualTo(1);
    assertThat(s.copies()).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void replyLostAfterTheFinalDotIsUnknownCriticalAndNeverSentAgain(Intake intake) throws Exception {
    onDot = m -> Future.succeededFuture(null); // the body arrived; the downstream hangs up instead of answering
    Sample s = new Sample(intake);
    int dataBefore = gateway.downstream().dataCommands();
    long settledBefore = gateway.gateway().part(RetryPart.class).stats().settled();

    Heard h;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      h = s.submit();
      String id = s.ledgerId();
      assertThat(audit.errorsContaining("CRITICAL audit_event=delivery_outcome_unknown", "message_id=" + id,
          "msg_id=" + s.messageId)).hasSize(1);
    }

    String id = s.ledgerId();
    intake.heardUnknown(h, id);
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("UNKNOWN");
    assertThat(count("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'UNKNOWN'")).isEqualTo(2);
    // Settled as UNKNOWN by the contract itself: nothing is left for the retry part, and nobody sends it again.
    JsonObject op = new JsonObject(gateway.get("/api/v1/operations/" + id).body());
    assertThat(op.getJsonObject("ledger").getBoolean("settled")).isTrue();
    assertThat(op.getJsonObject("ledger").getBoolean("retrying")).isFalse();
    assertThat(gateway.gateway().part(RetryPart.class).stats().settled()).isEqualTo(settledBefore);
    assertThat(s.copies()).hasSize(1);
    assertThat(gateway.downstream().dataCommands() - dataBefore).isEqualTo(1);
    // The next message on the same intake goes through as usual, and the unknown one is still not re-sent.
    onDot = m -> Future.succeededFuture("250 2.0.0 Ok: queued as DS-next");
    Sample next = new Sample(intake);
    next.submit();
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(next.ledgerId()))).isEqualTo("SENT");
    assertThat(s.copies()).hasSize(1);
    assertThat(gateway.downstream().dataCommands() - dataBefore).isEqualTo(2);
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("UNKNOWN");
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void openBlockedByALockPastTheBudgetIsRefusedNothingDownstreamNoPendingRow(Intake intake) throws Exception {
    Sample s = new Sample(intake);
    int dataBefore = gateway.downstream().dataCommands();
    long closedBefore = gateway.gateway().part(RetryPart.class).stats().notSentClosed();
    Heard h;
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), ALL_TABLES)) {
      h = s.submit();
      assertThat(lock.queryLong("SELECT count(*) FROM messages WHERE message_id_header = '" + s.messageId + "'")).isZero();
    }

    intake.heardNotRecorded(h);
    assertThat(gateway.downstream().dataCommands() - dataBefore).isZero();
    assertThat(s.copies()).isEmpty();
    // The "not sent" outcome was journaled and handed to the retry part, which closes a row the open may
    // have left (here it finds none) once the lock is gone.
    Poll.until(Duration.ofSeconds(10), "the not-sent outcome is closed",
        () -> gateway.gateway().part(RetryPart.class).stats().notSentClosed() == closedBefore + 1);
    Poll.until(Duration.ofSeconds(10), "the retry part holds nothing", () -> gateway.gateway().part(RetryPart.class).stats().held() == 0);
    assertThat(count("SELECT count(*) FROM messages WHERE message_id_header = '" + s.messageId + "'")).isZero();
    assertThat(count("SELECT count(*) FROM messages WHERE status = 'PENDING'")).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void settleBlockedByALockStillAnswersSuccessAndTheRetryPartSettlesItSentOnce(Intake intake) throws Exception {
    AtomicReference<TableLock> lock = new AtomicReference<>();
    onDot = m -> gateway.vertx().executeBlocking(() -> {
      // The downstream has the body: the lock is taken before it answers, so the settle meets it.
      lock.set(TableLock.acquire(gateway.databaseUrl(), ALL_TABLES));
      return "250 2.0.0 Ok: queued as DS-" + UUID.randomUUID();
    });
    Sample s = new Sample(intake);
    long settledBefore = gateway.gateway().part(RetryPart.class).stats().settled();
    String id;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit")) {
      Heard h = s.submit();
      // Read on the lock's own connection: while it is held nothing can commit, so this is what is durable.
      String held = lock.get().queryString("SELECT id || ' ' || status FROM messages WHERE message_id_header = '"
          + s.messageId + "'");
      assertThat(held).endsWith(" PENDING");
      id = held.substring(0, held.indexOf(' '));
      intake.heardSent(h, id, false);
      assertThat(audit.errorsContaining("CRITICAL audit_event=delivery_result_persist_failed", "message_id=" + id,
          "target_status=SENT", "downstream_accepted=true")).hasSize(1);
      lock.get().release();
      Poll.until(Duration.ofSeconds(10), "the retry part settles " + id,
          () -> "SENT".equals(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))));
    } finally {
      if (lock.get() != null) {
        lock.get().release();
      }
    }
    // The retry part counts the settle once the ledger's answer is back, a moment after the commit.
    Poll.until(Duration.ofSeconds(10), "the retry part counts its settle",
        () -> gateway.gateway().part(RetryPart.class).stats().settled() >= settledBefore + 1);
    assertThat(gateway.gateway().part(RetryPart.class).stats().settled()).isEqualTo(settledBefore + 1);
    assertThat(count("SELECT count(*) FROM recipients WHERE message_id = '" + id + "' AND status = 'ACCEPTED'")).isEqualTo(2);
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT version FROM messages WHERE id = '" + id + "'")).isEqualTo("2");
    assertThat(events(id, "message.settled")).isEqualTo(1);
    assertThat(s.copies()).hasSize(1);
    assertThat(s.copies().get(0).afterTrace()).isEqualTo(s.bytes);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Intake.class)
  void aNulByteInTheMessageIdIsRelayedAndRecordedNotRefusedAsAPersistenceFailure(Intake intake) throws Exception {
    // PostgreSQL text cannot hold U+0000: the ledger records the Message-ID with U+FFFD in its place. The
    // message itself goes downstream byte for byte.
    Sample s = new Sample(intake, "<nul\0byte-" + UUID.randomUUID() + "@contract.test>");

    Heard h = s.submit();

    String recorded = s.messageId.replace('\0', '\uFFFD');
    assertThat(count("SELECT count(*) FROM messages WHERE message_id_header = '" + recorded + "'")).as("%s", h).isEqualTo(1);
    String id = LedgerRows.string(gateway.databaseUrl(), "SELECT id FROM messages WHERE message_id_header = '" + recorded + "'");
    intake.heardSent(h, id, true);
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).isEqualTo("SENT");
    assertThat(s.copies()).hasSize(1);
    assertThat(s.copies().get(0).afterTrace()).isEqualTo(s.bytes);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Helpers.

  /**
   * One message with its own Message-ID: 8-bit UTF-8, lines that start with a dot, a lone dot line, a line
   * of 998 octets; everything a relay could damage on the way.
   */
  static final class Sample {
    final Intake intake;
    final String messageId;
    final byte[] bytes;

    Sample(Intake intake) {
      this(intake, "<" + UUID.randomUUID() + "@contract.test>");
    }

    Sample(Intake intake, String messageId) {
      this.intake = intake;
      this.messageId = messageId;
      this.bytes = String.join("\r\n",
          "From: Sender <sender@example.com>",
          "To: one@example.net, two@example.net",
          "Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= via " + intake,
          "Message-ID: " + messageId,
          "MIME-Version: 1.0",
          "Content-Type: text/plain; charset=utf-8",
          "Content-Transfer-Encoding: 8bit",
          "",
          "Grüße aus Köln — 8-bit, as it is.",
          ".a line that starts with a dot",
          "..and one with two",
          ".",
          "x".repeat(998),
          "").getBytes(StandardCharsets.UTF_8);
    }

    Heard submit() throws Exception {
      return intake.submit("sender@example.com", List.of("one@example.net", "two@example.net"), bytes);
    }

    /** The ledger entry of this message (there must be exactly one). */
    String ledgerId() throws Exception {
      assertThat(count("SELECT count(*) FROM messages WHERE message_id_header = '" + messageId + "'"))
          .as("ledger rows of %s", messageId).isEqualTo(1);
      return LedgerRows.string(gateway.databaseUrl(), "SELECT id FROM messages WHERE message_id_header = '" + messageId + "'");
    }

    /** The copies of this message the downstream received. */
    List<ScriptedSmtpServer.Received> copies() {
      return gateway.downstream().messages().stream().filter(m -> m.text().contains("\r\nMessage-ID: " + messageId + "\r\n")).toList();
    }
  }

  static long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  /** Events of one type for one message, one row per event (V40's view). */
  static long events(String id, String type) throws Exception {
    return count("SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND type = '" + type + "'");
  }


  private static void expect(String reply, String prefix) {
    assertThat(reply).as("reply").startsWith(prefix);
  }
}
