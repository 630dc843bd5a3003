package dev.ledgerpost.operate.stale;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.TableLock;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The ledger-wide gauges at scrape time (docs/design.md §8.1): a new PENDING row shows within a second or two
 * of being read, not at the next stale scan (here an hour away); UNKNOWN rows are counted; and a scrape answers
 * with the last values while the ledger cannot be read.
 */
class PendingGaugesTest {
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension()
      .with("stale.scanInterval", "1h"); // the scan at start only: whatever shows later comes from the open counts

  @Test
  void newPendingAndUnknownRowsShowAtTheNextScrapesNotAtTheNextScan() throws Exception {
    StaleGauges gauges = gateway.gateway().part(StalePart.class).gauges();
    Poll.until(Duration.ofSeconds(10), "the first scan", () -> gauges.scans() >= 1);
    assertThat(gauges.pendingMessages()).isZero();
    assertThat(gauges.unknownMessages()).isZero();

    LedgerRows.insert(gateway.databaseUrl(), UUID.randomUUID(), "PENDING", "PENDING", Instant.now().minusSeconds(120), null);
    LedgerRows.insert(gateway.databaseUrl(), UUID.randomUUID(), "UNKNOWN", "UNKNOWN", Instant.now().minusSeconds(30), null);
    LedgerRows.insert(gateway.databaseUrl(), UUID.randomUUID(), "SENT", "ACCEPTED", Instant.now().minusSeconds(300), null);
    long inserted = System.nanoTime();
    Poll.until(Duration.ofSeconds(10), "the open counts", () -> gauges.pendingMessages() == 1 && gauges.unknownMessages() == 1);
    assertThat(Duration.ofNanos(System.nanoTime() - inserted)).as("within a refresh or two, far from the hour's scan")
        .isLessThan(Duration.ofSeconds(5));
    assertThat(gauges.oldestPendingAgeSeconds()).isBetween(119L, 180L);
    assertThat(gauges.scans()).as("no scan ran meanwhile").isEqualTo(1);
    assertThat(scrape()).contains("ledgerpost_pending_messages 1.0", "ledgerpost_unknown_messages 1.0");

    // The ledger cannot be read: a scrape still answers at once, with the last values.
    try (TableLock lock = TableLock.acquire(gateway.databaseUrl(), "messages")) {
      long before = System.nanoTime();
      String text = scrape();
      assertThat(Duration.ofNanos(System.nanoTime() - before)).isLessThan(Duration.ofSeconds(2));
      assertThat(text).contains("ledgerpost_pending_messages 1.0", "ledgerpost_unknown_messages 1.0");
      lock.release();
    }
  }

  private String scrape() throws Exception {
    HttpResponse<String> r = gateway.get("/metrics", null);
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }
}
