package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One attempt against a real receiver on loopback whose refusal's body is not ASCII (issue 26, item 12): the attempt
 * ends when the answer does, with the status and the printable start of the body, whatever bytes and chunks it came in.
 */
class SenderTest {
  /** Long enough that an attempt ended by this timer, not by the answer, is plain to see. */
  static final Duration TIMEOUT = Duration.ofSeconds(20);
  Vertx vertx;
  HttpServer server;
  volatile byte[][] chunks;

  @BeforeEach
  void start() throws Exception {
    vertx = Vertx.vertx();
    server = GatewayHarness.await(vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
        .requestHandler(req -> req.body().onSuccess(b -> {
          var response = req.response().setStatusCode(500).setChunked(true);
          for (byte[] chunk : chunks) {
            response.write(Buffer.buffer(chunk));
          }
          response.end();
        }))
        .listen());
  }

  @AfterEach
  void stop() throws Exception {
    GatewayHarness.await(vertx.close());
  }

  Sender.Outcome attempt(byte[]... body) throws Exception {
    chunks = body;
    Sender sender = new Sender(vertx, "t", "http://127.0.0.1:" + server.actualPort() + "/hook", TIMEOUT, 1);
    try {
      return GatewayHarness.await(sender.post("id-1", 1, "v1,sig", "{}"));
    } finally {
      GatewayHarness.await(sender.close());
    }
  }

  @Test
  void aNonAsciiRefusalIsKeptAsItsPrintableStartAndEndsTheAttemptAtOnce() throws Exception {
    Sender.Outcome o = attempt("Zugriff verweigert: Schlüssel ungültig".getBytes(StandardCharsets.UTF_8));
    assertThat(o.status()).isEqualTo(500);
    // A word with a character outside printable ASCII goes whole (a piece of an address is what erasure cannot find).
    assertThat(o.error()).isEqualTo("HTTP 500 Internal Server Error: Zugriff verweigert: ? ?");
    assertThat(Duration.ofNanos(o.nanos())).as("ended by the answer, not by webhooks.timeout").isLessThan(TIMEOUT.dividedBy(2));
  }

  @Test
  void aCharacterSplitAcrossChunksAndALongBodyAreCutAtTheKeptBytes() throws Exception {
    byte[] u = "ü".getBytes(StandardCharsets.UTF_8);
    byte[] first = {'a', ' ', u[0]};
    byte[] second = {u[1], 'b', ' '};
    byte[] rest = "€".repeat(300).getBytes(StandardCharsets.UTF_8); // 900 bytes: far past the 200 kept
    Sender.Outcome o = attempt(first, second, rest);
    assertThat(o.status()).isEqualTo(500);
    // The cut (in bytes, inside the euros) drops the word it went through; "üb" goes whole, as a non-ASCII word.
    assertThat(o.error()).isEqualTo("HTTP 500 Internal Server Error: a ?");
    assertThat(Duration.ofNanos(o.nanos())).isLessThan(TIMEOUT.dividedBy(2));
  }

  @Test
  void aRedirectIsNamedByItsHostOnlyAndNeverFollowed() {
    assertThat(Sender.redirect(301, "https://internal.example:8443/admin?token=secret"))
        .isEqualTo("HTTP 301 redirect to host internal.example not followed: a webhook is sent to its endpoint's URL only");
    assertThat(Sender.redirect(302, "/elsewhere")).contains("to a relative or unreadable Location");
    assertThat(Sender.redirect(307, "http://exa mple/")).contains("to a relative or unreadable Location");
    assertThat(Sender.redirect(308, null)).contains("without a Location");
  }
}
