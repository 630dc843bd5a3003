package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.tenants.Tenants;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;

/**
 * What the open's statement needs to count the users' hourly and daily quotas (docs/design.md §8.9 "Quotas"): each
 * open's limits as its node's tenants file says now (so a raised limit applies with the next open, on the node whose
 * file was raised), the windows by the gateway's clock, and the fraction at which {@code quota.approaching} is written.
 * The counting itself is the statement's CTE {@code qa} (the function {@code quota_take}, V105): no commit of its own.
 */
public final class QuotaCounting {
  /** No tenants file: nothing counted (every limit 0), and the statement's CTE returns at once. */
  public static final QuotaCounting OFF = new QuotaCounting(
      Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of())), Clock.systemUTC(), 0.8);

  private final Tenants tenants;
  private final Clock clock;
  private final double approachingAt;

  public QuotaCounting(Tenants tenants, Clock clock, double approachingAt) {
    this.tenants = tenants;
    this.clock = clock;
    this.approachingAt = approachingAt;
  }

  /** The clock hour {@code at} falls in, by its start. */
  public static Instant hourStart(Instant at) {
    return at.truncatedTo(ChronoUnit.HOURS);
  }

  /** The UTC day {@code at} falls in, by its start. */
  public static Instant dayStart(Instant at) {
    return at.truncatedTo(ChronoUnit.DAYS);
  }

  /** The five parameters the statement takes after its own: hour and day limits per open, the two windows, the fraction. */
  List<Object> params(List<Open> batch) {
    Long[] perHour = new Long[batch.size()];
    Long[] perDay = new Long[batch.size()];
    for (int i = 0; i < batch.size(); i++) {
      String user = batch.get(i).authUser();
      // Mail without a user is counted for nobody: its sender cannot be told from another's (the relay networks').
      TenantPolicy p = user == null ? TenantPolicy.UNLIMITED : tenants.policy(user);
      perHour[i] = p.messagesPerHour();
      perDay[i] = p.messagesPerDay();
    }
    Windows w = windows(clock.instant());
    return List.of(perHour, perDay, w.hour(), w.day(), approachingAt);
  }

  /** The hour's and the day's starts as the statement takes them, for the hour starting at {@code hourSecond}. */
  private record Windows(long hourSecond, OffsetDateTime hour, OffsetDateTime day) {}

  /**
   * The last windows, kept for their hour (issue 33: two OffsetDateTime values, with their dates and times, each batch
   * for what changes once an hour). Replaced whole, so a reader sees a consistent one.
   */
  private volatile Windows lastWindows = new Windows(Long.MIN_VALUE, null, null);

  private Windows windows(Instant now) {
    long hourSecond = Math.floorDiv(now.getEpochSecond(), 3600) * 3600;
    Windows w = lastWindows;
    if (w.hourSecond() != hourSecond) {
      w = new Windows(hourSecond, OffsetDateTime.ofInstant(hourStart(now), ZoneOffset.UTC),
          OffsetDateTime.ofInstant(dayStart(now), ZoneOffset.UTC));
      lastWindows = w;
    }
    return w;
  }
}
