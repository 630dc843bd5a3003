package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Stopping the gateway: idle sessions hear 421 4.3.2, a transaction in flight still gets its real answer. */
class GracefulShutdownTest {
  Vertx vertx;
  final CountDownLatch bodyArrived = new CountDownLatch(1);
  final Promise<String> finalReply = Promise.promise();

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
  }

  @AfterEach
  void stop() throws Exception {
    GatewayHarness.await(vertx.close());
  }

  @Test
  void inFlightTransactionFinishesWhileIdleSessionsAreToldToGoAway() throws Exception {
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        bodyArrived.countDown();
        return finalReply.future();
      }
    }));
    GatewayHarness gateway = GatewayHarness.start(vertx, GatewayHarness.defaults(downstream.port()));
    int port = gateway.smtpPort();

    SmtpTestClient idle = new SmtpTestClient(port);
    idle.reply();
    assertThat(idle.command("EHLO idle.test")).startsWith("250");

    SmtpTestClient busy = new SmtpTestClient(port);
    busy.reply();
    CompletableFuture<String> busyReply = sendInBackground(busy);
    assertThat(bodyArrived.await(20, TimeUnit.SECONDS)).isTrue();

    Future<Void> stopping = gateway.gateway().stop();

    assertThat(idle.reply()).isEqualTo("421 4.3.2 Service shutting down, try again later");
    assertThat(idle.closedByServer()).isTrue();
    assertThat(refusesConnections(port, Duration.ofSeconds(10))).isTrue();
    assertThat(stopping.isComplete()).isFalse();

    finalReply.complete("250 2.0.0 Ok: queued as LATE");
    assertThat(busyReply.get(20, TimeUnit.SECONDS)).startsWith("250 2.0.0 Ok: queued as ");
    GatewayHarness.await(stopping);
    assertThat(downstream.messages()).hasSize(1);
    busy.close();
    idle.close();
  }

  /**
   * Issue 26, item 4, with a real process and SIGTERM: the smarthost has the message's final dot and gives its
   * verdict only after {@code smtp.shutdownGrace} is over. The transaction is let finish (within
   * {@code downstream.dataTimeout}): the client hears the smarthost's 250, then 421, and the row is SENT. Before the
   * fix the grace's end closed the client bare and cut the smarthost connection, the row went UNKNOWN, and the
   * client, having heard nothing, would send the message again.
   */
  @Test
  void aMessagePastItsFinalDotWhenTheGraceEndsIsLetFinishAndSettlesSent() throws Exception {
    Duration verdictAfter = Duration.ofSeconds(5); // the grace is 2 s: the verdict comes 3 s after it ended
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        Promise<String> verdict = Promise.promise();
        vertx.setTimer(verdictAfter.toMillis(), t -> verdict.complete("250 2.0.0 Ok: queued as SLOW" + n));
        bodyArrived.countDown();
        return verdict.future();
      }
    }));
    String url = dev.ledgerpost.testing.TestDatabase.newDatabase();
    java.nio.file.Path dir = GatewayHarness.tempDir("child-stop-");
    String yaml = dev.ledgerpost.testing.ChildGateway.config(dir, downstream.port(), url)
        .replace("smtp:\n", "smtp:\n  shutdownGrace: 2s\n")
        .replace("downstream:\n", "downstream:\n  dataTimeout: 60s\n");
    try (dev.ledgerpost.testing.ChildGateway child = dev.ledgerpost.testing.ChildGateway.start(dir, yaml, null)
        .awaitReady(Duration.ofSeconds(120))) {
      SmtpTestClient client = new SmtpTestClient(child.smtpPort());
      client.reply();
      CompletableFuture<List<String>> heard = CompletableFuture.supplyAsync(() -> {
        List<String> replies = new java.util.ArrayList<>();
        try (client) {
          replies.add(client.sendMail("a@example.com", List.of("b@example.net"),
              "Message-ID: <stop@example.com>\r\nSubject: past the dot at SIGTERM\r\n\r\nbody"));
          for (String r = readReply(client); r != null; r = readReply(client)) {
            replies.add(r);
          }
        } catch (Exception e) {
          replies.add("client error: " + e);
        }
        return replies;
      });
      assertThat(bodyArrived.await(30, TimeUnit.SECONDS)).isTrue();

      child.signal("TERM");
      child.awaitExit(Duration.ofSeconds(60));
      assertThat(child.log("Ledgerpost stopped")).as("a clean stop").hasSize(1);

      assertThat(statuses(url)).as("the message's row").containsExactly("SENT");
      List<String> replies = heard.get(30, TimeUnit.SECONDS);
      assertThat(replies).hasSize(2);
      assertThat(replies.get(0)).startsWith("250 2.0.0 Ok: queued as ").contains("SLOW1");
      assertThat(replies.get(1)).isEqualTo("421 4.3.2 Service shutting down, try again later");
      assertThat(child.log("message(s) past the final dot wait for the smarthost's verdict")).hasSize(1);
    }
    assertThat(downstream.messages()).hasSize(1);
  }

  /**
   * The other half of item 4: what is not past its final dot when the grace ends does not hold the stop. A MAIL the
   * smarthost would answer only long after the grace is cut then (its connection closed, nothing was sent for a
   * message): the client hears 451 4.4.1 and 421 4.3.2, and the stop ends without waiting for the smarthost.
   */
  @Test
  void aTransactionBeforeItsFinalDotIsCutWhenTheGraceEnds() throws Exception {
    Promise<String> mailReply = Promise.promise(); // never given: the smarthost sits on MAIL
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> mailLater(String from) {
        return from.startsWith("slow@") ? mailReply.future() : Future.succeededFuture("250 2.1.0 Sender ok");
      }
    }));
    java.util.Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("smtp.shutdownGrace", "2s");
    GatewayHarness gateway = GatewayHarness.start(vertx, o);
    SmtpTestClient client = new SmtpTestClient(gateway.smtpPort());
    client.reply();
    assertThat(client.command("EHLO client.test")).startsWith("250");
    client.send("MAIL FROM:<slow@example.com>\r\n");
    Poll.until(Duration.ofSeconds(10), "MAIL at the smarthost",
        () -> downstream.commands().contains("MAIL FROM:<slow@example.com>"));

    Future<Void> stopping = gateway.gateway().stop();

    assertThat(client.reply()).startsWith("451 4.4.1 ");
    assertThat(client.reply()).isEqualTo("421 4.3.2 Service shutting down, try again later");
    assertThat(client.closedByServer()).isTrue();
    stopping.toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
    assertThat(mailReply.future().isComplete()).as("the smarthost never answered MAIL").isFalse();
    Poll.until(Duration.ofSeconds(10), "every smarthost connection closed", () -> downstream.openConnections() == 0);
    client.close();
  }

  /** The same for the send API: a send whose final dot is at the smarthost when the grace ends gets its verdict. */
  @Test
  void aSendPastItsFinalDotWhenTheGraceEndsIsAnsweredWithTheVerdict() throws Exception {
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        Promise<String> verdict = Promise.promise();
        vertx.setTimer(4000, t -> verdict.complete("250 2.0.0 Ok: queued as SLOW" + n)); // 2 s after the grace
        bodyArrived.countDown();
        return verdict.future();
      }
    }));
    java.util.Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("smtp.shutdownGrace", "2s");
    o.put("api.keysFile", dev.ledgerpost.testing.SendClient.keysFile(java.util.Map.of("stop-key", "stopper")).toString());
    GatewayHarness gateway = GatewayHarness.start(vertx, o);
    CompletableFuture<java.net.http.HttpResponse<String>> answer = new dev.ledgerpost.testing.SendClient(gateway.httpPort())
        .sendAsync("stop-key", null, new io.vertx.core.json.JsonObject().put("from", "a@example.com")
            .put("to", new io.vertx.core.json.JsonArray().add("b@example.net")).put("subject", "past the dot").put("text", "t"));
    assertThat(bodyArrived.await(30, TimeUnit.SECONDS)).isTrue();

    Future<Void> stopping = gateway.gateway().stop();

    java.net.http.HttpResponse<String> r = answer.get(30, TimeUnit.SECONDS);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(new io.vertx.core.json.JsonObject(r.body()).getString("status")).isEqualTo("SENT");
    GatewayHarness.await(stopping);
    assertThat(statuses((String) o.get("ledger.url"))).containsExactly("SENT");
  }

  /**
   * Both intakes stop at once (issue 26 review): while SMTP's stop waits for a message's verdict, a send that
   * arrives is refused with 503, not admitted and relayed. Stopped one after the other, the API took new sends for
   * as long as SMTP's stop lasted, and its own stop then began a grace of its own past the bound the process waits.
   */
  @Test
  void whileSmtpWaitsForAVerdictTheSendApiAlreadyRefusesNewSends() throws Exception {
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        if (n > 1) {
          return Future.succeededFuture("250 2.0.0 Ok: queued as AFTER" + n);
        }
        bodyArrived.countDown();
        return finalReply.future();
      }
    }));
    java.util.Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("api.keysFile", dev.ledgerpost.testing.SendClient.keysFile(java.util.Map.of("stop-key", "stopper")).toString());
    GatewayHarness gateway = GatewayHarness.start(vertx, o);
    SmtpTestClient busy = new SmtpTestClient(gateway.smtpPort());
    busy.reply();
    CompletableFuture<String> busyReply = sendInBackground(busy);
    assertThat(bodyArrived.await(20, TimeUnit.SECONDS)).isTrue();

    Future<Void> stopping = gateway.gateway().stop();
    assertThat(refusesConnections(gateway.smtpPort(), Duration.ofSeconds(10))).as("SMTP's stop began").isTrue();
    // No send is in flight, so the API's stop may already have closed its listener: refused either way.
    String refused;
    try {
      java.net.http.HttpResponse<String> r = new dev.ledgerpost.testing.SendClient(gateway.httpPort())
          .sendAsync("stop-key", null, new io.vertx.core.json.JsonObject().put("from", "a@example.com")
              .put("to", new io.vertx.core.json.JsonArray().add("b@example.net")).put("subject", "during the stop").put("text", "t"))
          .get(30, TimeUnit.SECONDS);
      refused = r.statusCode() + " " + r.body();
    } catch (java.util.concurrent.ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(java.net.ConnectException.class);
      refused = "503 connection refused: shutting down";
    }
    assertThat(refused).startsWith("503").contains("shutting down");
    assertThat(stopping.isComplete()).isFalse();

    finalReply.complete("250 2.0.0 Ok: queued as LATE");
    assertThat(busyReply.get(20, TimeUnit.SECONDS)).startsWith("250 2.0.0 Ok: queued as ");
    GatewayHarness.await(stopping);
    assertThat(downstream.messages()).as("only the message in flight went out").hasSize(1);
    busy.close();
  }

  /** One message sent on {@code c} on a thread of its own: its final reply, or what went wrong on the client. */
  private static CompletableFuture<String> sendInBackground(SmtpTestClient c) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return c.sendMail("a@example.com", List.of("b@example.net"), "Subject: in flight\r\n\r\nbody");
      } catch (Exception e) {
        return "client error: " + e;
      }
    });
  }

  /** The ledger's message statuses, oldest first. */
  private static List<String> statuses(String url) throws Exception {
    String all = dev.ledgerpost.testing.LedgerRows.string(url,
        "SELECT coalesce(string_agg(status::text, ',' ORDER BY id), '') FROM messages");
    return all == null || all.isEmpty() ? List.of() : List.of(all.split(","));
  }

  /**
   * Many sessions in every state when the stop begins, and new connections arriving while it does: every
   * client that speaks after the stop began hears {@code 421 4.3.2} before the connection ends. Idle ones
   * and those between commands of a transaction at once; one in DATA after its message's answer; one whose
   * DATA stalls past the grace when the grace ends; one that connects during the stop instead of a greeting.
   */
  @Test
  void everyClientThatSpeaksAfterTheStopBeganHears421BeforeTheClose() throws Exception {
    ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    java.util.Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("smtp.shutdownGrace", "3s");
    GatewayHarness gateway = GatewayHarness.start(vertx, o);
    int port = gateway.smtpPort();
    int perState = 25;
    List<SmtpTestClient> idle = new java.util.ArrayList<>();
    List<SmtpTestClient> inTransaction = new java.util.ArrayList<>();
    List<SmtpTestClient> inData = new java.util.ArrayList<>();
    List<SmtpTestClient> stalled = new java.util.ArrayList<>();
    for (int i = 0; i < perState; i++) {
      idle.add(session(port, 0));
      inTransaction.add(session(port, 2));
      inData.add(session(port, 3));
      stalled.add(session(port, 3));
    }
    java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newCachedThreadPool();
    CountDownLatch stopBegan = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean refused = new java.util.concurrent.atomic.AtomicBoolean();
    List<java.util.concurrent.Future<List<String>>> latecomers = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<java.util.concurrent.Future<?>> connectors = new java.util.ArrayList<>();
    CountDownLatch connecting = new CountDownLatch(4);
    for (int c = 0; c < 4; c++) {
      connectors.add(threads.submit(() -> {
        connecting.countDown();
        for (int n = 0; n < 2000 && !refused.get(); n++) {
          SmtpTestClient late;
          try {
            late = new SmtpTestClient(port);
          } catch (java.io.IOException e) {
            refused.set(true); // the listener is closed
            return null;
          }
          latecomers.add(threads.submit(() -> latecomer(late, stopBegan)));
        }
        return null;
      }));
    }
    assertThat(connecting.await(10, TimeUnit.SECONDS)).isTrue();
    Poll.until(Duration.ofSeconds(10), "latecomers connecting", () -> latecomers.size() >= 100);

    Future<Void> stopping = gateway.gateway().stop();
    stopBegan.countDown();

    java.util.Map<String, java.util.concurrent.Future<List<String>>> talks = new java.util.LinkedHashMap<>();
    for (int i = 0; i < perState; i++) {
      SmtpTestClient a = idle.get(i);
      SmtpTestClient b = inTransaction.get(i);
      SmtpTestClient d = inData.get(i);
      talks.put("idle " + i, threads.submit(() -> speak(a, "MAIL FROM:<a@example.com>\r\n")));
      talks.put("in transaction " + i, threads.submit(() -> speak(b, "DATA\r\n")));
      talks.put("in DATA " + i, threads.submit(() -> speak(d, "the end\r\n.\r\n", "MAIL FROM:<a@example.com>\r\n")));
    }
    GatewayHarness.await(stopping); // the grace has run out
    for (int i = 0; i < perState; i++) {
      SmtpTestClient s = stalled.get(i);
      talks.put("stalled in DATA " + i, threads.submit(() -> speak(s, "too late\r\n.\r\n")));
    }
    for (java.util.concurrent.Future<?> c : connectors) {
      c.get(30, TimeUnit.SECONDS);
    }
    int n = 0;
    for (java.util.concurrent.Future<List<String>> f : latecomers) {
      talks.put("latecomer " + n++, f);
    }
    String goodbye = "421 4.3.2 Service shutting down, try again later";
    List<String> wrong = new java.util.ArrayList<>();
    for (var e : talks.entrySet()) {
      List<String> heard = e.getValue().get(30, TimeUnit.SECONDS);
      // A command that arrived before the session learnt of the stop has its ordinary answer; whatever
      // the client heard, the last thing before the close is the goodbye.
      boolean ok = !heard.isEmpty() && heard.get(heard.size() - 1).equals(goodbye) && heard.indexOf(goodbye) == heard.size() - 1
          || heard.equals(List.of("(no greeting)"));
      if (!ok) {
        wrong.add(e.getKey() + " heard " + heard);
      }
    }
    threads.shutdownNow();
    assertThat(wrong).as("clients that did not hear 421 4.3.2 before the close").isEmpty();
    assertThat(latecomers).isNotEmpty();
  }

  /** A client that has said EHLO and, by {@code stage}: 2 MAIL and RCPT, 3 also DATA and a first body line. */
  private static SmtpTestClient session(int port, int stage) throws Exception {
    SmtpTestClient c = new SmtpTestClient(port);
    assertThat(c.reply()).startsWith("220");
    assertThat(c.command("EHLO client.test")).startsWith("250");
    if (stage >= 2) {
      assertThat(c.command("MAIL FROM:<a@example.com>")).startsWith("250");
      assertThat(c.command("RCPT TO:<b@example.net>")).startsWith("250");
    }
    if (stage >= 3) {
      assertThat(c.command("DATA")).startsWith("354");
      c.send("Subject: shutdown race\r\n\r\nfirst line\r\n");
    }
    return c;
  }

  /**
   * Sends each chunk (a write may fail once the server has closed: what it said before is still read) and
   * returns every reply line heard until the connection ends.
   */
  private static List<String> speak(SmtpTestClient c, String... chunks) {
    List<String> heard = new java.util.ArrayList<>();
    try (c) {
      for (String chunk : chunks) {
        try {
          c.send(chunk);
        } catch (java.io.IOException e) {
          // closed already: read what is left
        }
        String reply = readReply(c);
        if (reply == null) {
          return heard;
        }
        heard.add(reply);
      }
      for (String reply = readReply(c); reply != null; reply = readReply(c)) {
        heard.add(reply);
      }
    } catch (java.io.IOException e) {
      heard.add("(close failed: " + e + ")");
    }
    return heard;
  }

  /** One reply, or null at the end of the stream (or a reset after it). */
  private static String readReply(SmtpTestClient c) {
    try {
      return c.reply();
    } catch (java.io.IOException e) {
      return null;
    }
  }

  /** A connection made around the stop: once the stop has begun it asks to send mail. */
  private static List<String> latecomer(SmtpTestClient c, CountDownLatch stopBegan) throws Exception {
    String greeting = readReply(c);
    if (greeting == null) {
      c.close();
      return List.of("(no greeting)"); // the kernel had it queued when the listener closed: it was never served
    }
    List<String> heard = new java.util.ArrayList<>();
    if (!greeting.startsWith("220")) {
      heard.add(greeting);
      for (String reply = readReply(c); reply != null; reply = readReply(c)) {
        heard.add(reply);
      }
      c.close();
      return heard;
    }
    assertThat(stopBegan.await(30, TimeUnit.SECONDS)).isTrue();
    return speak(c, "MAIL FROM:<late@example.com>\r\n");
  }

  private static boolean refusesConnections(int port, Duration within) throws Exception {
    return Poll.within(within, () -> {
      try (Socket s = new Socket("127.0.0.1", port)) {
        return false; // still accepting: poll again
      } catch (java.io.IOException refusedOrGone) {
        return true;
      }
    });
  }
}
