package dev.ledgerpost.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.publish.webhook.WebhookDeliveryTest;
import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.InvariantCheck;
import dev.ledgerpost.testing.PatroniLedger;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.RunsAlone;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonObject;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The ledger survives losing its database server (deploy/ha/, README "A ledger that survives its server"): three
 * gateway nodes on the HA ledger ({@link PatroniLedger}: etcd, two PostgreSQL 15 servers under Patroni with a
 * synchronous standby, HAProxy), 20 SMTP sessions relaying to a counting smarthost while (1) the primary's machine
 * dies (Patroni and postmaster SIGKILLed together), the dead server comes back and rejoins as a standby, and (2) an
 * operator runs a planned {@code patronictl switchover}, then (3) etcd is lost for a while. Afterwards the ledger on the last primary, every client's
 * reply and every copy the smarthost took must agree (docs/contract.md §3.3), a WebSocket subscriber must have seen
 * every published event once and in order, and every single-active job must have exactly one leader again.
 */
@RunsAlone
class HaFailoverTest {
  static final int SESSIONS = 20;
  /** Accepted messages before each fault, and after the gateway relays again: 1,000+ over the run. */
  static final int BEFORE = 250;
  static final int AFTER = 250;
  /** The targets: mail flows again within 30 s of a server's death (shipped TTLs), 5 s of a switchover. */
  static final Duration KILL_GAP = Duration.ofSeconds(30);
  static final Duration SWITCHOVER_GAP = Duration.ofSeconds(5);
  static final Duration WAIT = Duration.ofSeconds(120);
  static final String[] NODES = {"a", "b", "c"};

  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();
  static PatroniLedger ledger;
  static Cluster cluster;
  static WebhookReceiver webhooks;

  /** One submission as its client saw it. */
  record Sent(String messageId, long startNanos, long replyNanos, String reply) {
    boolean accepted() {
      return reply.startsWith("250 ");
    }
  }

  @BeforeAll
  static void start() throws Exception {
    ledger = harness.closeAfter(PatroniLedger.start());
    webhooks = harness.closeAfter(GatewayHarness.await(WebhookReceiver.start(harness.vertx(), r -> WebhookReceiver.Answer.of(200))));
    cluster = harness.closeAfter(Cluster.on(ledger.url(), harness.downstream().port(), Map.of(
        "node", List.of("heartbeatInterval: 500ms", "deadAfter: 3s"),
        "ledger", List.of("requireSynchronousStandby: true"),
        "webhooks", List.of("endpoints: [{name: app, url: \"" + webhooks.url("/hook") + "\", secret: \""
            + WebhookDeliveryTest.secret(1) + "\", events: [message.settled]}]", "pollInterval: 200ms"),
        "downstream", List.of("replyTimeout: 5s", "dataTimeout: 5s"),
        "notify", List.of("pollInterval: 500ms"))));
    cluster.start(NODES);
  }

  @AfterAll
  static void record() throws Exception {
    if (ledger != null) {
      System.out.println(ledger.list());
    }
  }

  @Test
  void aServerDeathAndASwitchoverUnderLoadLoseNothingAcknowledgedAndDeliverNothingTwice() throws Exception {
    List<Sent> sent = Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean stop = new AtomicBoolean();
    int before = harness.downstream().messages().size();
    ExecutorService threads = Executors.newFixedThreadPool(SESSIONS);
    List<CompletableFuture<Void>> sessions = new ArrayList<>();
    try (WsTestClient subscriber = WsTestClient.connect(harness.vertx(), cluster.node("a").httpPort(), null, "child-token")) {
      assertThat(subscriber.next(WAIT).getString("type")).isEqualTo("hello");
      for (int s = 0; s < SESSIONS; s++) {
        int session = s;
        sessions.add(CompletableFuture.runAsync(() -> load(session, sent, stop), threads));
      }
      awaitAccepted(sent, BEFORE, s -> true);

      // (1) The primary's machine dies.
      String first = ledger.primary();
      long killedAt = System.nanoTime();
      ledger.killServer(first);
      // Backends the dead postmaster left may finish a commit or two; mail flows again once the stretch without a
      // 250 that the death opened is over.
      Sent flowing = resumption(sent, killedAt);
      Duration killGap = Duration.ofNanos(flowing.replyNanos() - killedAt);
      awaitAccepted(sent, AFTER, s -> s.startNanos() > flowing.replyNanos());
      String second = ledger.primary();
      assertThat(second).as("the standby took over").isEqualTo(PatroniLedger.other(first));
      awaitEveryJobLedOnce();
      // The new primary runs alone: every node says so (the gauge and its alert), and still takes mail.
      Poll.until(WAIT, "the nodes see no synchronous standby", () -> standbys("b") == 0);
      // Each node's LISTEN connection (the outbox wake-up, every hub's tail) is back, on the new primary.
      try (Connection c = ledger.connect(second); Statement st = c.createStatement()) {
        Poll.until(WAIT, "every node LISTENs on the new primary", () -> Integer.parseInt(value(st,
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND usename = current_user")) == NODES.length);
      }

      // The dead server comes back: it rejoins as the synchronous standby, and the gateway never writes to it.
      ledger.restart(first);
      ledger.awaitSynchronousStandby(first);
      Poll.until(WAIT, "the nodes see the synchronous standby again", () -> standbys("b") == 1);
      try (Connection old = ledger.connect(first); Statement st = old.createStatement()) {
        assertThat(value(st, "SELECT pg_is_in_recovery()")).isEqualTo("t");
        assertThat(value(st, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'ledgerpost%'"))
            .as("gateway connections on the rejoined server").isEqualTo("0");
      }
      Sent beforeSwitch = awaitAccepted(sent, BEFORE, s -> s.startNanos() > flowing.replyNanos());

      // (2) A planned switchover back to the first server.
      long switchAt = System.nanoTime();
      ledger.switchover(second, first);
      long switched = System.nanoTime();
      System.out.println("switchover, as Patroni logged it:\n" + ledger.log(second, 60) + "\n" + ledger.log(first, 60)
          + "\nand HAProxy:\n" + String.join("\n", ledger.haproxyLog()));
      Sent afterSwitch = awaitAccepted(sent, AFTER, s -> s.startNanos() > switched);
      assertThat(ledger.primary()).isEqualTo(first);

      // (3) etcd is lost: Patroni demotes the primary (it cannot hold its leader key), the gateway answers 451 4.3.0
      // until etcd is back and a leader is elected again.
      long etcdLostAt = System.nanoTime();
      ledger.killEtcd();
      Sent refused = awaitRefused(sent, etcdLostAt);
      long etcdBackAt = System.nanoTime();
      ledger.restartEtcd();
      Sent again = awaitAccepted(sent, 1, s -> s.startNanos() > etcdBackAt);
      awaitAccepted(sent, AFTER, s -> s.startNanos() > again.replyNanos());
      System.out.printf("HA run: etcd lost: mail refused from %d ms after; etcd back: mail again %d ms after%n",
          (refused.replyNanos() - etcdLostAt) / 1_000_000, (again.replyNanos() - etcdBackAt) / 1_000_000);
      stop.set(true);
      CompletableFuture.allOf(sessions.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);

      Duration killStop = longestWithout250(sent, killedAt, flowing.replyNanos() + 1);
      Duration switchStop = longestWithout250(sent, switchAt, afterSwitch.replyNanos());
      System.out.printf("HA run: kill of %s to the first 250 opened after it: %d ms (longest stretch without a 250: %d ms);"
          + " switchover %s -> %s: longest stretch without a 250 %d ms (patronictl took %d ms); %s%n",
          first, killGap.toMillis(), killStop.toMillis(), second, first, switchStop.toMillis(),
          (switched - switchAt) / 1_000_000, replies(sent));
      assertThat(killGap).as("mail flows again after the primary's death").isLessThanOrEqualTo(KILL_GAP);
      assertThat(switchStop).as("mail stops for at most this during a switchover").isLessThanOrEqualTo(SWITCHOVER_GAP);
      assertThat(beforeSwitch).isNotNull();

      // Every refusal said 451 4.3.0 (nothing recorded, nothing sent): the gateway told no client more than it knew.
      assertThat(sent).filteredOn(s -> !s.accepted()).extracting(Sent::reply)
          .allSatisfy(r -> assertThat(r).startsWith("451 4.3.0"));

      List<InvariantCheck.Heard> heard = new ArrayList<>();
      Set<String> acceptedIds = new HashSet<>();
      for (Sent s : sent) {
        String id = s.accepted() ? InvariantCheck.ledgerId(s.reply()) : null;
        heard.add(new InvariantCheck.Heard(s.messageId(), s.accepted(), id, s.reply().startsWith("451 4.3.0"), s.reply()));
        if (id != null) {
          acceptedIds.add(id);
        }
      }
      assertThat(acceptedIds).hasSizeGreaterThanOrEqualTo(1000);
      try (Connection c = ledger.connect(first)) {
        Poll.until(WAIT, "every accepted message settled on the new primary", () -> pending(c, acceptedIds) == 0);
        List<ScriptedSmtpServer.Received> copies = harness.downstream().messages()
            .subList(before, harness.downstream().messages().size());
        InvariantCheck.Result result = InvariantCheck.check(c, copies, heard);
        System.out.println("HA run: " + result);
        assertThat(result.violations()).isEmpty();
        // An open whose commit landed unseen (its client heard 451) is closed by the retry part, not left PENDING.
        Poll.until(WAIT, "no PENDING row left", () -> Long.parseLong(value(c.createStatement(),
            "SELECT count(*) FROM messages WHERE status = 'PENDING'")) == 0);
        System.out.println("HA run: ledger " + value(c.createStatement(),
            "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM (SELECT status, count(*) n FROM messages GROUP BY status) s"));
      }
      // Webhooks in flight when a server died were claimed again, not lost: each accepted message's settle arrived.
      Poll.until(WAIT, "a message.settled webhook for every accepted message", () ->
          webhooks.timesById().keySet().containsAll(acceptedIds.stream().map(id -> id + ":2").toList()));

      // The subscriber on node a saw every event once, in order, through both fail-overs: each accepted message's
      // settle among them, and no reset (no gap taken for a pruned history).
      Map<String, Integer> settled = new HashMap<>();
      long last = -1;
      Set<String> eventIds = new HashSet<>();
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (!settled.keySet().containsAll(acceptedIds)) {
        JsonObject f = subscriber.next(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        assertThat(f.getString("type")).as("frame %s", f).isEqualTo("event");
        long seq = f.getLong("seq");
        if (last >= 0) {
          assertThat(seq).as("the event after %d", last).isEqualTo(last + 1);
        }
        last = seq;
        assertThat(eventIds.add(f.getString("id", String.valueOf(seq)))).as("event seen once: %s", f).isTrue();
        if ("message.settled".equals(f.getString("event"))) {
          settled.merge(f.getString("messageId"), 1, Integer::sum);
        }
      }
      assertThat(settled.values()).allMatch(n -> n == 1);
    } finally {
      stop.set(true);
      threads.shutdownNow();
    }

    awaitEveryJobLedOnce();
  }

  /**
   * Single-active jobs: their locks die with a primary's sessions; each must have exactly one leader again, which acts
   * (its node's ledgerpost_node_leads), and exactly one holder of its lock on the primary.
   */
  private static void awaitEveryJobLedOnce() throws Exception {
    Poll.until(WAIT, "every job led by exactly one node", () -> {
      Map<String, Integer> leaders = new TreeMap<>();
      for (String id : NODES) {
        cluster.leads(id).forEach((job, n) -> leaders.merge(job, n, Integer::sum));
      }
      return !leaders.isEmpty() && leaders.values().stream().allMatch(n -> n == 1);
    });
    try (Connection c = ledger.connect(ledger.primary()); Statement st = c.createStatement()) {
      assertThat(value(st, "SELECT count(*) = count(DISTINCT objid) FROM pg_locks WHERE locktype = 'advisory' "
          + "AND classid = x'4C50'::int AND granted")).as("one holder per job lock").isEqualTo("t");
    }
  }

  /** One client session against node {@code NODES[session % 3]}, submitting until told to stop. */
  private static void load(int session, List<Sent> sent, AtomicBoolean stop) {
    SmtpTestClient c = null;
    for (int i = 0; !stop.get() && i < 100_000; i++) {
      String messageId = "<ha-" + session + "-" + i + "@load.test>";
      long start = System.nanoTime();
      try {
        if (c == null) {
          c = new SmtpTestClient(cluster.smtpPort(NODES[session % NODES.length]));
          c.reply();
        }
        String reply = c.sendMail("load@example.com", List.of("sink@example.net"),
            "Message-ID: " + messageId + "\r\nSubject: ha\r\n\r\nbody " + i + "\r\n");
        sent.add(new Sent(messageId, start, System.nanoTime(), reply));
      } catch (Exception e) {
        sent.add(new Sent(messageId, start, System.nanoTime(), "lost: " + e));
        close(c);
        c = null;
      }
    }
    close(c);
  }

  /** Waits for {@code n} accepted submissions that match; returns the n-th, by reply time. */
  private static Sent awaitAccepted(List<Sent> sent, int n, Predicate<Sent> which) throws Exception {
    Sent[] nth = new Sent[1];
    Poll.until(WAIT, n + " accepted messages", () -> {
      List<Sent> matching = acceptedByReplyTime(sent, which);
      if (matching.size() >= n) {
        nth[0] = matching.get(n - 1);
        return true;
      }
      return false;
    });
    return nth[0];
  }

  /** The accepted submissions that match, in the order their 250s came. */
  private static List<Sent> acceptedByReplyTime(List<Sent> sent, Predicate<Sent> which) {
    synchronized (sent) {
      return sent.stream().filter(Sent::accepted).filter(which).sorted(java.util.Comparator.comparingLong(Sent::replyNanos)).toList();
    }
  }

  /** Waits until a submission opened after {@code from} is refused (every one, from then on, until the fault ends). */
  private static Sent awaitRefused(List<Sent> sent, long from) throws Exception {
    Sent[] first = new Sent[1];
    Poll.until(WAIT, "a refusal", () -> {
      synchronized (sent) {
        first[0] = sent.stream().filter(s -> s.startNanos() > from && !s.accepted()).findFirst().orElse(null);
      }
      return first[0] != null;
    });
    return first[0];
  }

  /**
   * The 250 that ends the longest stretch without one after {@code from}, once 250s have flowed again for a while:
   * waits until {@link #AFTER} more have come after it.
   */
  private static Sent resumption(List<Sent> sent, long from) throws Exception {
    Sent[] end = new Sent[1];
    Poll.until(WAIT, "mail flowing again", () -> {
      List<Sent> accepted = acceptedByReplyTime(sent, s -> s.replyNanos() > from);
      long longest = -1;
      long previous = from;
      int after = 0;
      for (Sent s : accepted) {
        if (s.replyNanos() - previous > longest) {
          longest = s.replyNanos() - previous;
          end[0] = s;
          after = 0;
        } else {
          after++;
        }
        previous = s.replyNanos();
      }
      return end[0] != null && after >= AFTER;
    });
    return end[0];
  }

  /** The longest stretch inside [from, to] with no 250 reply received (printed with its wall-clock ends). */
  private static Duration longestWithout250(List<Sent> sent, long from, long to) {
    List<Long> times;
    synchronized (sent) {
      times = sent.stream().filter(Sent::accepted).map(Sent::replyNanos).filter(t -> t > from && t < to).sorted().toList();
    }
    long longest = 0;
    long start = from;
    long previous = from;
    List<Long> ends = new ArrayList<>(times);
    ends.add(to);
    for (long t : ends) {
      if (t - previous > longest) {
        longest = t - previous;
        start = previous;
      }
      previous = t;
    }
    System.out.printf("longest stretch without a 250: %s to %s%n", wall(start), wall(start + longest));
    return Duration.ofNanos(longest);
  }

  private static java.time.Instant wall(long nanos) {
    return java.time.Instant.now().minusNanos(System.nanoTime() - nanos);
  }

  private static String replies(List<Sent> sent) {
    Map<String, Integer> byReply = new TreeMap<>();
    synchronized (sent) {
      sent.forEach(s -> byReply.merge(s.reply().length() > 9 ? s.reply().substring(0, 9) : s.reply(), 1, Integer::sum));
    }
    return "replies " + byReply;
  }

  private static long pending(Connection c, Set<String> ids) throws Exception {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT id FROM messages WHERE status = 'PENDING'")) {
      long n = 0;
      while (rs.next()) {
        n += ids.contains(rs.getString(1)) ? 1 : 0;
      }
      return n;
    }
  }

  /** What a node's gauge ledgerpost_ledger_synchronous_standbys reads (NaN before its first check). */
  private static double standbys(String node) throws Exception {
    return cluster.metrics(node).lines().filter(l -> l.startsWith("ledgerpost_ledger_synchronous_standbys"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst().orElse(Double.NaN);
  }

  private static String value(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static void close(SmtpTestClient c) {
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // the session is over either way
      }
    }
  }
}
