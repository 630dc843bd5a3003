package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * N event loops (smtp.instances, http.instances): SMTP sessions and HTTP sends spread over every instance, each
 * on its own event loop with its own smarthost pool; the relay stays byte for byte on all of them, STARTTLS
 * included (Vert.x 5.0.7 gave only the first of several servers sharing a socket the TLS set-up: see
 * smtp.tls.SharedServerTls); and the send API's per-key rate limit holds per process, not per instance.
 *
 * <p>Which loop served a session is read from outside, with no hook in the product: the line
 * "client ... authenticated as ..." is logged by the session on its own event loop, and names the client's
 * address, so every session (each from its own loopback address) is tied to a thread. The smarthost pools
 * are a second witness: a pool reuses its idle connection, so sequential sessions open exactly one
 * downstream connection per instance that served them.
 */
class EventLoopsTest {
  static final int INSTANCES = 2;
  static final String FAST_KEY = "event-loops-fast-key";
  static final String LIMITED_KEY = "event-loops-limited-key";
  static final int LIMITED_RATE = 5;
  static final int PER_ADDRESS = 4;

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("smtp.instances", INSTANCES)
      .with("http.instances", INSTANCES)
      .with("auth.usersFile", Credentials.htpasswd(Map.of("alice", "s3cret")).toString())
      .with("smtp.relayNetworks", "10.0.0.0/8") // loopback clients must STARTTLS and AUTH: every session does both
      .with("smtp.maxConnectionsPerAddress", PER_ADDRESS)
      .with("api.keysFile", SendClient.keysFile(Map.of(FAST_KEY, "fast:1000", LIMITED_KEY, "limited:" + LIMITED_RATE))
          .toString());

  @AfterEach
  void theSmarthostSawNoBareCrOrLf() {
    assertThat(gateway.downstream().bareLineEndings()).isEmpty();
  }

  @Test
  void twentyConcurrentStartTlsSessionsAreServedByBothSmtpEventLoopsAndRelayByteForByte() throws Exception {
    int sessions = 20;
    ExecutorService threads = Executors.newFixedThreadPool(sessions);
    // All twenty are connected, on TLS and authenticated at the same time before any sends its message.
    CyclicBarrier together = new CyclicBarrier(sessions);
    List<CompletableFuture<Session>> running = new ArrayList<>();
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.SmtpSession")) {
      for (int i = 0; i < sessions; i++) {
        String address = "127.0.0." + (20 + i);
        running.add(CompletableFuture.supplyAsync(() -> session(address, together), threads));
      }
      joinAll(running);
      Map<String, String> threadByAddress = threadsOfAuthenticatedClients(log);

      Map<String, List<Session>> byLoop = new TreeMap<>();
      for (CompletableFuture<Session> f : running) {
        Session s = f.join();
        String thread = threadByAddress.get(s.address());
        assertThat(thread).as("the event loop of %s", s.address()).isNotNull().startsWith("vert.x-eventloop-thread-");
        byLoop.computeIfAbsent(thread, t -> new ArrayList<>()).add(s);
      }
      System.out.printf("SMTP sessions per event loop: %s%n", counts(byLoop));
      assertThat(byLoop).as("event loops that served the sessions").hasSize(INSTANCES);
      for (Map.Entry<String, List<Session>> loop : byLoop.entrySet()) {
        for (Session s : loop.getValue()) {
          assertRelayedByteForByteOverTls(loop.getKey(), s);
        }
      }
    } finally {
      threads.shutdownNow();
    }
    assertThat(gateway.downstream().messages()).hasSize(sessions);
  }

  @Test
  void sequentialSmtpSessionsAlternateLoopsAndEachLoopHasItsOwnSmarthostPool() throws Exception {
    int before = gateway.downstream().connections();
    List<String> loops = new ArrayList<>();
    try (LogCapture log = LogCapture.of("dev.ledgerpost.intake.smtp.SmtpSession")) {
      for (int i = 0; i < 3 * INSTANCES; i++) {
        Session s = session("127.0.0." + (60 + i), null);
        loops.add(threadsOfAuthenticatedClients(log).get(s.address()));
        assertRelayedByteForByteOverTls(loops.get(i), s);
      }
    }
    System.out.printf("sequential SMTP sessions ran on %s%n", loops);
    assertThat(loops).doesNotContainNull();
    assertThat(loops.stream().distinct().count()).isEqualTo(INSTANCES);
    // One session at a time: a single pool would have reused one connection throughout. One per instance.
    assertThat(gateway.downstream().connections() - before).isEqualTo(INSTANCES);
  }

  @Test
  void httpSendsOnFreshConnectionsUseBothApiInstancesAndRelayByteForByte() throws Exception {
    int before = gateway.downstream().connections();
    for (int i = 0; i < 3 * INSTANCES; i++) {
      Sample s = new Sample("http-" + i);
      HttpResponse<String> r = sendOnFreshConnection(FAST_KEY, s);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonObject answer = new JsonObject(r.body());
      assertThat(answer.getString("status")).isEqualTo("SENT");
      String op = answer.getString("operationId");
      List<ScriptedSmtpServer.Received> copies = s.copies(gateway.downstream());
      assertThat(copies).hasSize(1);
      assertThat(copies.get(0).text()).startsWith("Received: from unknown ([127.0.0.1])").contains("with HTTP id " + op);
      assertThat(copies.get(0).afterTrace()).isEqualTo(s.bytes);
      assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(op))).isEqualTo("SENT");
    }
    // Each API instance relays through its own pool, which keeps its connection for the next send: two
    // instances, two downstream connections, however many sends.
    assertThat(gateway.downstream().connections() - before).isEqualTo(INSTANCES);
  }

  @Test
  void theConnectionLimitPerAddressHoldsForTheProcessNotPerInstance() throws Exception {
    // Connections go to the instances in turn, so each instance sees half of them: a count per instance
    // would let 2 x PER_ADDRESS in.
    List<SmtpTestClient> open = new ArrayList<>();
    List<String> greetings = new ArrayList<>();
    try {
      for (int i = 0; i < PER_ADDRESS + INSTANCES; i++) {
        SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), "127.0.0.99");
        open.add(c);
        greetings.add(c.reply());
      }
    } finally {
      for (SmtpTestClient c : open) {
        c.close();
      }
    }
    assertThat(greetings.subList(0, PER_ADDRESS)).allSatisfy(g -> assertThat(g).startsWith("220 "));
    assertThat(greetings.subList(PER_ADDRESS, greetings.size()))
        .containsOnly("421 4.7.0 Too many connections from your address, try again later");
  }

  @Test
  void theSendRateLimitOfAKeyHoldsForTheProcessNotPerInstance() throws Exception {
    int requests = 40;
    ExecutorService threads = Executors.newFixedThreadPool(requests);
    List<HttpClient> clients = new ArrayList<>();
    for (int i = 0; i < requests; i++) {
      clients.add(newClient()); // one connection each: Vert.x hands them to the instances in turn
    }
    CountDownLatch go = new CountDownLatch(1);
    List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
    try {
      for (int i = 0; i < requests; i++) {
        HttpClient client = clients.get(i);
        Sample s = new Sample("limited-" + i);
        answers.add(CompletableFuture.supplyAsync(() -> {
          try {
            go.await();
            return client.send(request(LIMITED_KEY, s), HttpResponse.BodyHandlers.ofString());
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }, threads));
      }
      long started = System.nanoTime();
      go.countDown();
      CompletableFuture.allOf(answers.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
      double seconds = (System.nanoTime() - started) / 1e9;

      Map<Integer, Integer> statuses = new TreeMap<>();
      for (CompletableFuture<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.join();
        statuses.merge(r.statusCode(), 1, Integer::sum);
        if (r.statusCode() == 429) {
          assertThat(r.headers().firstValue("Retry-After")).isPresent();
        } else {
          assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
      }
      int sent = statuses.getOrDefault(200, 0);
      // A bucket of LIMITED_RATE tokens (one second's worth) refilled at LIMITED_RATE a second, for the whole
      // process. One bucket per instance would let through twice the burst at once.
      double allowed = LIMITED_RATE + LIMITED_RATE * seconds;
      System.out.printf("rate limit %d/s over %d instances: %s in %.3f s (allowed at most %.1f)%n", LIMITED_RATE, INSTANCES,
          statuses, seconds, allowed);
      assertThat(sent).isGreaterThanOrEqualTo(1).isLessThanOrEqualTo((int) Math.floor(allowed));
      assertThat(statuses.getOrDefault(429, 0)).isEqualTo(requests - sent);
      assertThat(gateway.downstream().messages()).hasSize(sent);
    } finally {
      threads.shutdownNow();
    }
  }

  // ---------------------------------------------------------------------------------------------------------------

  /** One SMTP session as it ended: from which address, whether TLS was on, the reply to the final dot, the message sent. */
  record Session(String address, boolean tls, String reply, Sample sample) {}

  /**
   * EHLO, STARTTLS, EHLO, AUTH PLAIN, (wait for the others), MAIL, RCPT, DATA and the message, from
   * {@code address}. Every step's reply is checked; the last one is returned.
   */
  Session session(String address, CyclicBarrier together) {
    Sample sample = new Sample(address);
    String step = "connect";
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort(), address)) {
      step = "greeting";
      assertThat(c.reply()).startsWith("220");
      step = "EHLO";
      assertThat(c.command("EHLO client.test")).contains("STARTTLS").doesNotContain("AUTH");
      step = "STARTTLS";
      c.startTls();
      step = "EHLO over TLS";
      assertThat(c.command("EHLO client.test")).contains("AUTH PLAIN").doesNotContain("STARTTLS");
      step = "AUTH";
      String credentials = Base64.getEncoder().encodeToString("\0alice\0s3cret".getBytes(StandardCharsets.UTF_8));
      assertThat(c.command("AUTH PLAIN " + credentials)).startsWith("235");
      if (together != null) {
        step = "waiting for the other sessions";
        together.await(30, TimeUnit.SECONDS);
      }
      step = "MAIL";
      assertThat(c.command("MAIL FROM:<alice@example.com> BODY=8BITMIME")).startsWith("250");
      step = "RCPT";
      assertThat(c.command("RCPT TO:<" + sample.tag + "@example.net>")).startsWith("250");
      step = "DATA";
      assertThat(c.command("DATA")).startsWith("354");
      step = "the message and the final dot";
      c.sendBytes(SmtpTestClient.dotStuffed(sample.bytes));
      c.send(".\r\n");
      String reply = c.reply();
      step = "QUIT";
      assertThat(c.command("QUIT")).startsWith("221");
      return new Session(address, c.tls(), reply, sample);
    } catch (Exception | AssertionError e) {
      if (together != null && !(e instanceof java.util.concurrent.BrokenBarrierException)) {
        together.reset(); // the others stop waiting for this one: the test fails now, with this cause
      }
      throw new IllegalStateException("session from " + address + " failed at " + step, e);
    }
  }

  /** Waits for every session; the first failure that is not a broken barrier (another session's) is the one reported. */
  static <T> void joinAll(List<CompletableFuture<T>> all) throws Exception {
    try {
      CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable first = e.getCause();
      for (CompletableFuture<T> f : all) {
        if (f.isCompletedExceptionally()) {
          Throwable cause = f.handle((v, x) -> x).join();
          Throwable root = cause instanceof java.util.concurrent.CompletionException ? cause.getCause() : cause;
          if (!(root.getCause() instanceof java.util.concurrent.BrokenBarrierException)) {
            first = root;
            break;
          }
        }
      }
      throw new AssertionError("a session failed", first);
    }
  }

  void assertRelayedByteForByteOverTls(String loop, Session s) throws Exception {
    String as = s.address() + " on " + loop;
    assertThat(s.tls()).as(as).isTrue();
    assertThat(s.reply()).as(as).startsWith("250 2.0.0 Ok: queued as ");
    String id = s.reply().substring("250 2.0.0 Ok: queued as ".length(), "250 2.0.0 Ok: queued as ".length() + 36);
    List<ScriptedSmtpServer.Received> copies = s.sample().copies(gateway.downstream());
    assertThat(copies).as(as).hasSize(1);
    assertThat(copies.get(0).recipients()).containsExactly(s.sample().tag + "@example.net");
    assertThat(copies.get(0).text()).as(as).startsWith("Received: from client.test ([" + s.address() + "])")
        .contains("with ESMTPSA id " + id);
    assertThat(copies.get(0).afterTrace()).as(as).isEqualTo(s.sample().bytes);
    assertThat(LedgerRows.status(gateway.databaseUrl(), UUID.fromString(id))).as(as).isEqualTo("SENT");
  }

  /** Client address to the thread that logged its successful AUTH: the session's event loop. */
  static Map<String, String> threadsOfAuthenticatedClients(LogCapture log) {
    Map<String, String> byAddress = new HashMap<>();
    for (LogCapture.Line line : log.linesContaining("authenticated as alice")) {
      String address = line.message().substring("client ".length(), line.message().indexOf(' ', "client ".length()));
      assertThat(byAddress.put(address, line.thread())).as("one AUTH per address").isNull();
    }
    return byAddress;
  }

  static Map<String, Integer> counts(Map<String, List<Session>> byLoop) {
    Map<String, Integer> counts = new TreeMap<>();
    byLoop.forEach((loop, list) -> counts.put(loop, list.size()));
    return counts;
  }

  /** A message with its own Message-ID and the bytes a relay could damage (8-bit, leading dots, a 998-octet line). */
  static final class Sample {
    final String tag;
    final String messageId = "<" + UUID.randomUUID() + "@event-loops.test>";
    final byte[] bytes;

    Sample(String tag) {
      this.tag = "to-" + tag.replace('.', '-');
      this.bytes = String.join("\r\n",
          "From: Alice <alice@example.com>",
          "To: <" + this.tag + "@example.net>",
          "Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= " + tag,
          "Message-ID: " + messageId,
          "MIME-Version: 1.0",
          "Content-Type: text/plain; charset=utf-8",
          "Content-Transfer-Encoding: 8bit",
          "",
          "Grüße — über " + tag + ".",
          ".a line that starts with a dot",
          "..and one with two",
          ".",
          "y".repeat(998),
          "").getBytes(StandardCharsets.UTF_8);
    }

    List<ScriptedSmtpServer.Received> copies(ScriptedSmtpServer downstream) {
      return downstream.messages().stream().filter(m -> m.text().contains("\r\nMessage-ID: " + messageId + "\r\n")).toList();
    }
  }


  static HttpClient newClient() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
  }

  /** A raw send (the Message-ID is the test's) on a client of its own, so on a TCP connection of its own. */
  HttpResponse<String> sendOnFreshConnection(String key, Sample s) throws Exception {
    return newClient().send(request(key, s), HttpResponse.BodyHandlers.ofString());
  }

  HttpRequest request(String key, Sample s) {
    JsonObject body = new JsonObject()
        .put("envelope", new JsonObject().put("from", "alice@example.com").put("to", new JsonArray().add(s.tag + "@example.net")))
        .put("raw", Base64.getEncoder().encodeToString(s.bytes));
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + "/api/v1/messages"))
        .timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode()))
        .build();
  }
}
