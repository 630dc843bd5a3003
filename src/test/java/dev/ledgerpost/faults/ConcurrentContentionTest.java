package dev.ledgerpost.faults;

import dev.ledgerpost.ledger.LedgerPart;
import dev.ledgerpost.relay.RelayPart;
import dev.ledgerpost.relay.retry.RetryPart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TableLock;
import dev.ledgerpost.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * 200 messages over 20 connections while another connection takes and releases table locks at
 * random. Afterwards every client reply must agree with the ledger and with the downstream.
 */
class ConcurrentContentionTest {
  static final int CONNECTIONS = 20;
  static final int PER_CONNECTION = 10;
  static final List<String[]> LOCK_SETS = List.of(
      new String[] {"messages"}, new String[] {"recipients"}, new String[] {"outbox"},
      new String[] {"messages", "recipients", "outbox"});

  @Test
  void everyReplyAgreesWithTheLedgerAndTheDownstream() throws Exception {
    Vertx vertx = Vertx.vertx();
    ExecutorService pool = Executors.newFixedThreadPool(CONNECTIONS + 1);
    try {
      ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      Map<String, Object> o = GatewayHarness.defaults(downstream.port());
      o.put("ledger.lockTimeout", "250ms");
      try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
        Map<String, String> replies = new ConcurrentHashMap<>(); // Message-ID -> final reply
        AtomicBoolean done = new AtomicBoolean();
        AtomicInteger locksTaken = new AtomicInteger();
        Future<?> locker = pool.submit(() -> lockAtRandom(gateway.databaseUrl(), done, locksTaken));
        List<Future<?>> clients = new ArrayList<>();
        for (int c = 0; c < CONNECTIONS; c++) {
          int conn = c;
          clients.add(pool.submit(() -> {
            try (SmtpTestClient client = new SmtpTestClient(gateway.smtpPort())) {
              client.reply();
              for (int i = 0; i < PER_CONNECTION; i++) {
                String messageId = "<run-" + conn + "-" + i + "@example.com>";
                replies.put(messageId, client.sendMail("a@example.com", List.of("b@example.net"),
                    "Message-ID: " + messageId + "\r\nSubject: contention\r\n\r\nbody " + conn + "/" + i));
              }
            }
            return null;
          }));
        }
        for (Future<?> f : clients) {
          f.get(5, TimeUnit.MINUTES);
        }
        done.set(true);
        locker.get(1, TimeUnit.MINUTES);
        // Every outcome whose settle failed under a lock was handed to the retry part: wait until it has them all.
        Poll.until(Duration.ofSeconds(60), "no PENDING rows left",
            () -> count(gateway.databaseUrl(), "SELECT count(*) FROM messages WHERE status = 'PENDING'") == 0);

        List<InvariantCheck.Heard> heard = new ArrayList<>();
        replies.forEach((messageId, reply) -> heard.add(new InvariantCheck.Heard(messageId, reply.startsWith("250 "),
            InvariantCheck.ledgerId(reply), true, reply)));
        assertThat(replies.values()).allSatisfy(r -> assertThat(r).matches("250 .*|451 4\\.3\\.0 .*"));
        InvariantCheck.Result result = InvariantCheck.check(gateway.databaseUrl(), downstream.messages(), heard);
        assertThat(result.violations()).isEmpty();
        assertThat(result.pending()).as("every accepted message is SENT once the retry part caught up").isZero();
        assertThat(result.accepted() + result.refused()).isEqualTo(CONNECTIONS * PER_CONNECTION);
        assertThat(gateway.gateway().part(RetryPart.class).stats().settled()).isEqualTo(gateway.gateway().part(RelayPart.class).handovers());
        assertThat(gateway.gateway().part(RetryPart.class).stats().dropped()).isZero();
        assertThat(count(gateway.databaseUrl(), "SELECT count(*) FROM outbox_events WHERE type = 'message.settled'"))
            .as("one settle per accepted message, none twice").isEqualTo(result.accepted());
        assertThat(locksTaken.get()).isPositive();
        System.out.printf("contention run: %s; %d handed over and settled by the retry part; %d locks taken, retries %s%n",
            result, gateway.gateway().part(RelayPart.class).handovers(), locksTaken.get(), gateway.gateway().part(LedgerPart.class).retries());
      }
    } finally {
      pool.shutdownNow();
      GatewayHarness.await(vertx.close());
    }
  }

  private static long count(String url, String sql) throws Exception {
    try (Connection c = TestDatabase.connect(url); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }

  /** Takes a random lock set, holds it 100..1500 ms, pauses 50..300 ms; bounded by the clients and 5 minutes. */
  private static Void lockAtRandom(String url, AtomicBoolean done, AtomicInteger taken) throws Exception {
    Random random = new Random(42);
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    while (!done.get() && System.nanoTime() < deadline) {
      Thread.sleep(50 + random.nextInt(250)); // load pacing, not synchronisation
      try (TableLock lock = TableLock.acquire(url, LOCK_SETS.get(random.nextInt(LOCK_SETS.size())))) {
        taken.incrementAndGet();
        Thread.sleep(100 + random.nextInt(1400));
      }
    }
    return null;
  }
}
