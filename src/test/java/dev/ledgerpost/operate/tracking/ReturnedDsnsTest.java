package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.testing.GatewayHarness;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The intake's side of the question before the wire (docs/design.md §8.13, "Returned DSNs"): a message whose headers do
 * not say it is a delivery-status report is relayed without asking; tracking's answer is passed on; a tracking part that
 * is absent, or does not answer within {@link ReturnedDsns#VERDICT_TIMEOUT}, makes it relayed, as before.
 */
class ReturnedDsnsTest {
  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() throws Exception {
    GatewayHarness.await(vertx.close());
  }

  private static Buffer report() {
    return Buffer.buffer(TrackingDsnTest.dsn("", "b@example.org", "failed", "5.1.1", "550 5.1.1 no", "<m@x>"));
  }

  @Test
  void aReportIsAskedAboutAndTheAnswerPassedOn() throws Exception {
    AtomicInteger asked = new AtomicInteger();
    UUID row = UUID.randomUUID();
    vertx.runOnContext(v -> Bus.of(vertx).serve(TrackingMessages.DSN_VERDICT, TrackingMessages.Ask.class, q -> {
      asked.incrementAndGet();
      return Future.succeededFuture(new TrackingMessages.Verdict(TrackingMessages.Action.KEEP, new byte[32], row, "why"));
    }));
    ReturnedDsns dsns = ReturnedDsns.over(vertx);
    awaitServed();
    TrackingMessages.Verdict v = GatewayHarness.await(dsns.verdict(report(), false));
    assertThat(v.action()).isEqualTo(TrackingMessages.Action.KEEP);
    assertThat(v.matched()).isEqualTo(row);
    assertThat(asked).hasValue(1);

    TrackingMessages.Verdict other = GatewayHarness.await(dsns.verdict(Buffer.buffer("Subject: Out of office\r\n"
        + "Content-Type: text/plain\r\n\r\nAway.\r\n"), false));
    assertThat(other).isEqualTo(TrackingMessages.Verdict.RELAY);
    assertThat(asked).as("a message that is no report is not asked about").hasValue(1);
  }

  @Test
  void noTrackingOrNoAnswerInTimeRelays() throws Exception {
    ReturnedDsns dsns = ReturnedDsns.over(vertx);
    assertThat(GatewayHarness.await(dsns.verdict(report(), true))).as("nobody serves the address").isEqualTo(TrackingMessages.Verdict.RELAY);

    vertx.runOnContext(v -> Bus.of(vertx).serve(TrackingMessages.DSN_VERDICT, TrackingMessages.Ask.class,
        q -> Future.<TrackingMessages.Verdict>future(p -> {})));
    awaitServed();
    long started = System.nanoTime();
    assertThat(GatewayHarness.await(dsns.verdict(report(), true))).as("an answer that never comes").isEqualTo(TrackingMessages.Verdict.RELAY);
    long waited = (System.nanoTime() - started) / 1_000_000;
    assertThat(waited).isBetween(ReturnedDsns.VERDICT_TIMEOUT.toMillis() - 100, ReturnedDsns.VERDICT_TIMEOUT.toMillis() + 3_000);
  }

  private void awaitServed() throws Exception {
    dev.ledgerpost.testing.Poll.until(java.time.Duration.ofSeconds(5), "the address served",
        () -> Bus.served(vertx).values().stream().anyMatch(s -> s.contains(TrackingMessages.DSN_VERDICT)));
  }
}
