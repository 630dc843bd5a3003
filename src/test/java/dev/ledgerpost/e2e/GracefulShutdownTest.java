package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.net.ConnectException;
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
    CompletableFuture<String> busyReply = CompletableFuture.supplyAsync(() -> {
      try {
        return busy.sendMail("a@example.com", List.of("b@example.net"), "Subject: in flight\r\n\r\nbody");
      } catch (Exception e) {
        return "client error: " + e;
      }
    });
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

  private static boolean refusesConnections(int port, Duration within) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket("127.0.0.1", port)) {
        // still accepting: poll again
      } catch (ConnectException refused) {
        return true;
      } catch (java.io.IOException other) {
        return true;
      }
      Thread.sleep(10); // polling with a deadline, not synchronisation
    }
    return false;
  }
}
