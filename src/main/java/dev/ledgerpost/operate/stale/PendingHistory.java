package dev.ledgerpost.operate.stale;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The last hour of the stale watch's gauges, one sample every {@link #INTERVAL}, in memory: what the operator
 * console's pending-age chart draws without a Prometheus. One per process, written by the stale watch on its
 * context and read by every API instance on theirs (hence synchronized); a restart starts it empty.
 */
public final class PendingHistory {
  public static final Duration INTERVAL = Duration.ofSeconds(10);
  public static final Duration WINDOW = Duration.ofHours(1);
  private static final int CAPACITY = (int) (WINDOW.toSeconds() / INTERVAL.toSeconds());

  /** The gauges at {@code at} (the stale watch's clock). */
  public record Sample(Instant at, long pending, long oldestPendingAgeSeconds, long stale, long unknown) {}

  private final Sample[] ring = new Sample[CAPACITY];
  private int next;
  private int size;

  public synchronized void add(Sample s) {
    ring[next] = s;
    next = (next + 1) % CAPACITY;
    size = Math.min(size + 1, CAPACITY);
  }

  /** Oldest first. */
  public synchronized List<Sample> samples() {
    List<Sample> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      out.add(ring[(next - size + i + CAPACITY) % CAPACITY]);
    }
    return out;
  }
}
