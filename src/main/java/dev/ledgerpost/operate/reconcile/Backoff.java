package dev.ledgerpost.operate.reconcile;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Rows that had no evidence: each is looked at again after a pause that doubles, from one {@code reconcile.interval}
 * up to {@link #MAX}. Bounded: past {@link #LIMIT} rows it forgets them all, which only costs each a look. Used on the
 * context of one verticle only: the reconcile job's, and tracking's downstream Ledgerpost follower's (docs/design.md §8.13).
 */
public final class Backoff {
  /** The longest pause (unless the interval itself is longer). */
  static final Duration MAX = Duration.ofHours(1);
  private static final int LIMIT = 100_000;

  private record Pause(Instant notBefore, Duration length) {}

  private final Duration interval;
  private final Map<UUID, Pause> pauses = new HashMap<>();

  public Backoff(Duration interval) {
    this.interval = interval;
  }

  /** Whether row {@code id} may be looked at {@code now}. */
  public boolean due(UUID id, Instant now) {
    Pause p = pauses.get(id);
    return p == null || !p.notBefore().isAfter(now);
  }

  /** Evidence was found for row {@code id}: its pause ends. */
  public void found(UUID id) {
    pauses.remove(id);
  }

  /** No evidence (yet) for row {@code id}: a pause twice the last one, or one interval for the first. */
  public void later(UUID id, Instant now) {
    Pause last = pauses.get(id);
    Duration next = last == null ? interval : last.length().multipliedBy(2);
    if (next.compareTo(MAX) > 0) {
      next = MAX.compareTo(interval) > 0 ? MAX : interval;
    }
    pauses.put(id, new Pause(now.plus(next).minus(interval.dividedBy(2)), next)); // the timer's own jitter must not skip a pass
    if (pauses.size() > LIMIT) {
      pauses.clear();
    }
  }
}
