package dev.ledgerpost.relay.smarthost;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import dev.ledgerpost.relay.DownstreamReply;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.parsetools.RecordParser;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The reply timeouts of one downstream connection, served by one re-armed timer since issue 33: a reply that does not
 * come in time fails the connection with its own timeout in the reason, a shorter deadline awaited after a longer one
 * still fires on time, and replies that each come in time never trip it however long the connection lives.
 */
class DownstreamReplyTimerTest {
  private Vertx vertx;
  private NetServer server;
  private NetClient client;

  @BeforeEach
  void start() throws Exception {
    vertx = Vertx.vertx();
    // A smarthost that greets, answers EHLO and "NOOP" (after 60 ms), and never answers "STALL".
    server = vertx.createNetServer().connectHandler(s -> {
      s.handler(RecordParser.newDelimited("\r\n", line -> {
        String l = line.toString();
        if (l.startsWith("EHLO")) {
          s.write("250 ok\r\n");
        } else if (l.startsWith("NOOP")) {
          vertx.setTimer(60, t -> s.write("250 2.0.0 ok\r\n"));
        }
      }));
      s.write("220 hi\r\n");
    });
    server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    client = vertx.createNetClient();
  }

  @AfterEach
  void stop() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private GatewayConfig.Downstream config(Duration replyTimeout) {
    return new GatewayConfig.Downstream("127.0.0.1", server.actualPort(), GatewayConfig.StartTls.NONE, false, "", "",
        Duration.ofSeconds(5), replyTimeout, Duration.ofSeconds(60), 1, Duration.ofSeconds(60), 1, List.of(),
        Duration.ofSeconds(1), Duration.ofSeconds(1));
  }

  private <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
  }

  private Future<DownstreamConnection> open(Duration replyTimeout) {
    GatewayConfig.Downstream c = config(replyTimeout);
    return DownstreamConnection.open(vertx, client, c, c.primary(), "test.example");
  }

  @Test
  void repliesEachInTimeNeverTripTheTimerThoughTheyOutlastIt() throws Exception {
    // Ten NOOPs, each answered after 60 ms, each awaited for 200 ms: 600 ms in all, three times the timeout.
    List<Integer> codes = new ArrayList<>();
    Future<Void> all = open(Duration.ofSeconds(5)).compose(c -> {
      Future<Void> chain = Future.succeededFuture();
      for (int i = 0; i < 10; i++) {
        chain = chain.compose(v -> c.command("NOOP", Duration.ofMillis(200)).map(r -> {
          codes.add(r.code());
          return null;
        }));
      }
      return chain.map(v -> {
        assertThat(c.usable()).isTrue();
        return null;
      });
    });
    await(all);
    assertThat(codes).hasSize(10).containsOnly(250);
  }

  @Test
  void aReplyThatDoesNotComeFailsWithItsTimeout() throws Exception {
    long[] took = new long[1];
    String reason = await(open(Duration.ofSeconds(5)).compose(c -> c.command("NOOP", Duration.ofMillis(300))
        .compose(r -> {
          long t0 = System.nanoTime();
          return c.command("STALL", Duration.ofMillis(300)).transform(ar -> {
            took[0] = System.nanoTime() - t0;
            assertThat(c.usable()).isFalse();
            return Future.succeededFuture(ar.failed() ? ar.cause().getMessage() : "answered: " + ar.result());
          });
        })));
    assertThat(reason).isEqualTo("no downstream reply within 300 ms");
    assertThat(took[0]).isBetween(TimeUnit.MILLISECONDS.toNanos(299), TimeUnit.SECONDS.toNanos(10));
  }

  @Test
  void aShorterDeadlineAwaitedAfterALongerOneStillFiresOnTime() throws Exception {
    long[] took = new long[1];
    List<String> reasons = new ArrayList<>();
    await(open(Duration.ofSeconds(5)).compose(c -> {
      long t0 = System.nanoTime();
      Future<DownstreamReply> slow = c.command("STALL", Duration.ofSeconds(600)); // pipelined, as MAIL and RCPT are
      Future<DownstreamReply> quick = c.command("STALL", Duration.ofMillis(200));
      return Future.join(slow, quick).transform(ar -> {
        took[0] = System.nanoTime() - t0;
        reasons.add(slow.cause().getMessage());
        reasons.add(quick.cause().getMessage());
        return Future.succeededFuture();
      });
    }));
    // The first failure closes the connection: the 200 ms deadline's reason fails the other reply too.
    assertThat(reasons).containsExactly("no downstream reply within 200 ms", "no downstream reply within 200 ms");
    assertThat(took[0]).isBetween(TimeUnit.MILLISECONDS.toNanos(199), TimeUnit.SECONDS.toNanos(30));
  }
}
