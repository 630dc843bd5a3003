package dev.ledgerpost.faults;

import dev.ledgerpost.ledger.LedgerPart;
import dev.ledgerpost.relay.RelayPart;
import dev.ledgerpost.relay.retry.RetryPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * docs/contract.md §1 and §2 under real PostgreSQL locks taken from another connection: whole-transaction
 * retries, 451 4.3.0 when the ledger cannot be opened, 250 + CRITICAL when it cannot be settled.
 */
class LockContentionTest {
  static final String ALL_TABLES = "messages, recipients, outbox";

  /** Runs (on a worker) when the downstream has the body, before it answers 250. */
  volatile Function<ScriptedSmtpServer.Received, Object> beforeFinalReply = m -> null;
  volatile String finalReply;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("ledger.lockTimeout", "250ms")
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          return g.vertx().executeBlocking(() -> {
            beforeFinalReply.apply(message);
            return finalReply != null ? finalReply : "250 2.0.0 Ok: queued as DS" + n;
          });
        }
      });

  @Test
  void lockHeldLongerThanTheRetryBudgetMeans451AndNoDataDownstream() throws Exception {
    String reply;
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), ALL_TABLES); SmtpTestClient c = client()) {
      reply = c.sendMail("a@example.com", List.of("b@example.net"), "Subject: blocked\r\n\r\nbody");
      // The session goes on after a 451: the downstream transaction was reset, not left half-open.
      assertThat(c.command("RSET")).startsWith("250");
    }
    assertThat(reply).isEqualTo("451 4.3.0 Temporary local persistence failure");
    assertNothingOpened(gateway);
  }

  @Test
  void lockReleasedAfterTheFirstAttemptFailedMeansOneDeliveryAndSent() throws Exception {
    TableLock lock = TableLock.acquire(gateway.databaseUrl(), ALL_TABLES);
    CompletableFuture<String> reply;
    try (SmtpTestClient c = client()) {
      reply = CompletableFuture.supplyAsync(() -> send(c, "Subject: delayed\r\n\r\nbody"));
      poll(Duration.ofSeconds(10), () -> gateway.gateway().part(LedgerPart.class).retries().getOrDefault("55P03", 0L) >= 1);
      lock.release();
      assertThat(reply.get()).startsWith("250 2.0.0 Ok: queued as ");
    }
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(status(ledgerId(reply.get()))).isEqualTo("SENT");
    assertThat(gateway.gateway().part(LedgerPart.class).retries().get("55P03")).isGreaterThanOrEqualTo(1L);
  }

  @Test
  void settleBlockedPastTheBudgetStillAnswers250AndLeavesPendingWithOneCriticalLine() throws Exception {
    AtomicReference<TableLock> lock = lockBeforeFinalReply(ALL_TABLES);
    String reply;
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit"); SmtpTestClient c = client()) {
      reply = c.sendMail("a@example.com", List.of("b@example.net"),
          "Message-ID: <settle-blocked@example.com>\r\nSubject: settle blocked\r\n\r\nbody");
      String id = ledgerId(reply);
      // Read on the lock's own connection: while it is held nobody else can read, and nothing can commit.
      assertThat(lock.get().queryString("SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("PENDING");
      assertThat(lock.get().queryLong("SELECT count(*) FROM recipients WHERE status = 'PENDING'")).isEqualTo(1);
      lock.get().release();
      List<String> critical = audit.errorsContaining("CRITICAL audit_event=delivery_result_persist_failed", id);
      assertThat(critical).hasSize(1);
      assertThat(critical.get(0)).contains("msg_id=<settle-blocked@example.com>", "target_status=SENT",
          "downstream_accepted=true");
      // The retry part holds the known outcome and settles it once the lock is gone.
      poll(Duration.ofSeconds(10), () -> "SENT".equals(uncheckedStatus(id)));
      assertThat(count("SELECT count(*) FROM recipients WHERE status = 'ACCEPTED'")).isEqualTo(1);
      assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.settled'")).isEqualTo(1);
    } finally {
      release(lock);
    }
    assertThat(reply).startsWith("250 2.0.0 Ok: queued as ");
    assertThat(gateway.downstream().messages()).hasSize(1);
    assertThat(gateway.downstream().dataCommands()).isEqualTo(1);
    assertThat(gateway.gateway().part(RelayPart.class).handovers()).isEqualTo(1);
    assertThat(gateway.gateway().part(RetryPart.class).stats().settled()).isEqualTo(1);
  }

  @Test
  void settleBacklogGaugeCountsTheOutcomeWhileItsSettleIsBlocked() throws Exception {
    AtomicReference<TableLock> lock = lockBeforeFinalReply(ALL_TABLES);
    assertThat(backlogGauge()).isZero();
    try (SmtpTestClient c = client()) {
      String reply = c.sendMail("a@example.com", List.of("b@example.net"), "Subject: backlog\r\n\r\nbody");
      assertThat(reply).startsWith("250 2.0.0");
      // The 250 came after the settle failed and the outcome was handed over: it is backlog now.
      poll(Duration.ofSeconds(10), () -> backlogGauge() == 1);
      lock.get().release();
      String id = ledgerId(reply);
      poll(Duration.ofSeconds(10), () -> "SENT".equals(uncheckedStatus(id)));
      poll(Duration.ofSeconds(10), () -> backlogGauge() == 0);
    } finally {
      release(lock);
    }
  }

  private double backlogGauge() {
    try {
      String metrics = gateway.get("/metrics").body();
      return metrics.lines().filter(l -> l.startsWith("ledgerpost_settle_backlog "))
          .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1))).findFirst().orElseThrow();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void failedSettleOfARefusalStillGivesTheClientTheDownstreamVerdict() throws Exception {
    finalReply = "550 5.7.1 Refused by policy";
    AtomicReference<TableLock> lock = lockBeforeFinalReply(ALL_TABLES);
    try (LogCapture audit = LogCapture.of("dev.ledgerpost.audit"); SmtpTestClient c = client()) {
      String reply = c.sendMail("a@example.com", List.of("b@example.net"), "Subject: refused\r\n\r\nbody");
      assertThat(lock.get().queryLong("SELECT count(*) FROM messages WHERE status = 'PENDING'")).isEqualTo(1);
      lock.get().release();
      assertThat(reply).isEqualTo("550 5.7.1 Downstream: Refused by policy");
      assertThat(audit.errorsContaining("CRITICAL audit_event=delivery_result_persist_failed", "target_status=FAILED_PERM",
          "downstream_accepted=false")).hasSize(1);
    } finally {
      release(lock);
    }
    // A known failure is a fact too: the retry part records it.
    poll(Duration.ofSeconds(10), () -> uncheckedCount("SELECT count(*) FROM messages WHERE status = 'FAILED_PERM'") == 1);
  }

  @Test
  void settleBlockedOnOneTableRollsBackTheWholeSettle() throws Exception {
    AtomicReference<TableLock> lock = lockBeforeFinalReply("recipients");
    String reply;
    try (SmtpTestClient c = client()) {
      reply = c.sendMail("a@example.com", List.of("b@example.net", "c@example.net"), "Subject: half\r\n\r\nbody");
      assertThat(reply).startsWith("250");
      String id = ledgerId(reply);
      // The message row could be updated, its recipients could not: neither may show the new status.
      TableLock held = lock.get();
      assertThat(held.queryString("SELECT status FROM messages WHERE id = '" + id + "'")).isEqualTo("PENDING");
      assertThat(held.queryLong("SELECT version FROM messages")).isEqualTo(1);
      assertThat(held.queryLong("SELECT count(*) FROM recipients WHERE status = 'PENDING'")).isEqualTo(2);
      assertThat(held.queryLong("SELECT count(*) FROM outbox WHERE type = 'message.settled'")).isZero();
    } finally {
      release(lock);
    }
    // Released: the retry part's settle writes message and recipients together, once.
    poll(Duration.ofSeconds(10), () -> "SENT".equals(uncheckedStatus(ledgerId(reply))));
    assertThat(count("SELECT version FROM messages")).isEqualTo(2);
    assertThat(count("SELECT count(*) FROM recipients WHERE status = 'ACCEPTED'")).isEqualTo(2);
    assertThat(count("SELECT count(*) FROM outbox WHERE type = 'message.settled'")).isEqualTo(1);
  }

  @Test
  void twoSubmissionsWithTheSameMessageIdAreTwoEntriesAndTwoDeliveries() throws Exception {
    // The Message-ID is no key: two messages that share one but not their bytes are two (the same bytes again would be
    // a client's retry, answered from the first row: docs/contract.md §1.13, ResubmissionTest).
    List<String> ids = new ArrayList<>();
    try (SmtpTestClient c = client()) {
      for (int i = 0; i < 2; i++) {
        ids.add(ledgerId(send(c, "Message-ID: <same@example.com>\r\nSubject: twice\r\n\r\nbody " + i)));
      }
    }
    assertThat(ids.get(0)).isNotEqualTo(ids.get(1));
    assertThat(count("SELECT count(*) FROM messages WHERE message_id_header = '<same@example.com>' AND status = 'SENT'"))
        .isEqualTo(2);
    assertThat(gateway.downstream().messages()).hasSize(2);
  }

  private SmtpTestClient client() throws Exception {
    SmtpTestClient c = new SmtpTestClient(gateway.smtpPort());
    c.reply();
    return c;
  }

  private static String send(SmtpTestClient c, String body) {
    try {
      return c.sendMail("a@example.com", List.of("b@example.net"), body);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    assertThat(m.find()).as("ledger id in %s", reply).isTrue();
    return m.group(1);
  }

  private String status(String id) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT status FROM messages WHERE id = '" + id + "'")) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  private String uncheckedStatus(String id) {
    try {
      return status(id);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private long uncheckedCount(String sql) {
    try {
      return count(sql);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private long count(String sql) throws Exception {
    return LedgerRows.count(gateway.databaseUrl(), sql);
  }

  /** From now on the downstream, once it has a body, locks {@code tables} before it answers; holds the lock taken. */
  private AtomicReference<TableLock> lockBeforeFinalReply(String tables) {
    AtomicReference<TableLock> lock = new AtomicReference<>();
    beforeFinalReply = m -> {
      try {
        lock.set(TableLock.acquire(gateway.databaseUrl(), tables));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      return null;
    };
    return lock;
  }

  private static void release(AtomicReference<TableLock> lock) throws SQLException {
    if (lock.get() != null) {
      lock.get().release();
    }
  }

  /** Nothing was opened: no DATA downstream, no row, no event; both tries of the open were refused by the lock. */
  static void assertNothingOpened(GatewayHarness gateway) throws Exception {
    assertThat(gateway.downstream().dataCommands()).isZero();
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM messages")).isZero();
    assertThat(LedgerRows.count(gateway.databaseUrl(), "SELECT count(*) FROM outbox")).isZero();
    assertThat(gateway.gateway().part(LedgerPart.class).retries()).containsEntry("55P03", 2L);
  }

  static void poll(Duration within, BooleanSupplier condition) throws Exception {
    Poll.until(within, "the condition", condition::getAsBoolean);
  }

}
