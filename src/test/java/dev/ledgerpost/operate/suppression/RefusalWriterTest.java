package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.observability.GatewayMetrics.RefusalSource;
import java.time.OffsetDateTime;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The refusal log's queue is bounded (docs/design.md §8.8): while nothing drains it (the part not started, or its
 * database slow), refusals beyond {@link RefusalWriter#CAPACITY} are counted lost at once instead of growing memory,
 * and handing one over never blocks.
 */
class RefusalWriterTest {
  @Test
  void refusalsBeyondTheQueuesBoundAreCountedLostNotKept() {
    AtomicInteger handed = new AtomicInteger();
    AtomicInteger lost = new AtomicInteger();
    GatewayMetrics metrics = new GatewayMetrics() {
      @Override
      public void recipientRefused(RefusalSource source) {
        handed.incrementAndGet();
      }

      @Override
      public void refusalsLost(int count) {
        lost.addAndGet(count);
      }
    };
    RefusalWriter writer = new RefusalWriter("node-a", metrics); // never started: nothing drains the queue
    RefusalMessages.Refusal r = new RefusalMessages.Refusal(OffsetDateTime.now(), null, "127.0.0.1", "a@example.com",
        "b@example.net", RefusalMessages.Stage.RCPT, RefusalSource.SMARTHOST, 550, "5.1.1", "550 5.1.1 unknown", null, null,
        RefusalMessages.Door.SMTP);
    for (int i = 0; i < RefusalWriter.CAPACITY + 25; i++) {
      writer.refused(r);
    }
    assertThat(handed.get()).isEqualTo(RefusalWriter.CAPACITY + 25);
    assertThat(lost.get()).isEqualTo(25);
  }
}
