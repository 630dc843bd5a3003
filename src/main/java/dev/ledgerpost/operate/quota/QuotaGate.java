package dev.ledgerpost.operate.quota;

import dev.ledgerpost.ledger.LedgerMessages.OverQuota;
import dev.ledgerpost.ledger.QuotaCounting;
import dev.ledgerpost.operate.quota.QuotaMessages.Usage;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import dev.ledgerpost.platform.tenants.Tenants;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * Each door's quota check (docs/design.md §8.9 "Quotas"), thread-safe and lock-free: every SMTP and API event loop reads
 * it. The limits are the tenants file's as it is now (a SIGHUP that raised one applies at the next command); the counts
 * are this node's copy of the ledger's counter rows, replaced whole every {@code tenants.refreshInterval} by
 * {@link QuotaVerticle}. The copy only makes the refusal early and cheap (at MAIL, before the smarthost is asked): it may
 * be a refresh behind, so the open's own count in the ledger (V105) is what decides, on every node alike.
 */
public final class QuotaGate {
  private final Tenants tenants;
  private final Clock clock;
  private final GatewayMetrics metrics;
  private volatile Map<String, Usage> usage = Map.of();

  public QuotaGate(Tenants tenants, Clock clock) {
    this(tenants, clock, GatewayMetrics.NOOP);
  }

  /** With the metrics its refusals are counted in (per user, under metrics.perUser). */
  public QuotaGate(Tenants tenants, Clock clock, GatewayMetrics metrics) {
    this.tenants = tenants;
    this.clock = clock;
    this.metrics = metrics;
  }

  /** No tenants file: nothing limited (tests that build a session without the part). */
  public static QuotaGate none() {
    return new QuotaGate(null, Clock.systemUTC());
  }

  /** What {@code user} may do now; mail without a user has the defaults (its counts are nobody's, see QuotaCounting). */
  public TenantPolicy policy(String user) {
    return tenants == null ? TenantPolicy.UNLIMITED : tenants.policy(user);
  }

  /**
   * The hourly or daily quota {@code user} has used up by this node's copy, or empty. The day's first: when both are
   * used up, waiting for the hour would not help. No user: nothing counted, never refused here. Both doors (SMTP MAIL,
   * the send API) refuse on a present answer, so it is counted here as the user's quota refusal.
   */
  public Optional<OverQuota> overQuota(String user) {
    Optional<OverQuota> over = usedUp(user);
    if (over.isPresent()) {
      metrics.userQuotaRefusal(user);
    }
    return over;
  }

  private Optional<OverQuota> usedUp(String user) {
    if (user == null) {
      return Optional.empty();
    }
    TenantPolicy p = policy(user);
    if (p.messagesPerHour() == 0 && p.messagesPerDay() == 0) {
      return Optional.empty();
    }
    Usage u = usage.get(user);
    if (u == null) {
      return Optional.empty();
    }
    Instant now = clock.instant();
    Usage c = current(u, now);
    if (p.messagesPerDay() > 0 && c.dayUsed() >= p.messagesPerDay()) {
      return Optional.of(new OverQuota("messagesPerDay", p.messagesPerDay(), c.dayStart().plus(Duration.ofDays(1))));
    }
    if (p.messagesPerHour() > 0 && c.hourUsed() >= p.messagesPerHour()) {
      return Optional.of(new OverQuota("messagesPerHour", p.messagesPerHour(), c.hourStart().plus(Duration.ofHours(1))));
    }
    return Optional.empty();
  }

  /** {@code u} seen at {@code now}: a window that has ended counts as a fresh one (0 used, 0 refused). */
  public static Usage current(Usage u, Instant now) {
    Instant hour = QuotaCounting.hourStart(now);
    Instant day = QuotaCounting.dayStart(now);
    boolean sameHour = !u.hourStart().isBefore(hour);
    boolean sameDay = !u.dayStart().isBefore(day);
    return new Usage(u.user(), sameHour ? u.hourStart() : hour, sameHour ? u.hourUsed() : 0, sameHour ? u.hourRefused() : 0,
        sameDay ? u.dayStart() : day, sameDay ? u.dayUsed() : 0, sameDay ? u.dayRefused() : 0);
  }

  /** The gateway's clock: the windows' one. */
  public Instant now() {
    return clock.instant();
  }

  /** The tenants file's table now, for the API's list of users. */
  public Tenants.Table table() {
    return tenants == null ? new Tenants.Table(TenantPolicy.UNLIMITED, Map.of()) : tenants.table();
  }

  /** Replaces this node's copy whole (on the quota part's context). */
  void replace(Map<String, Usage> fresh) {
    usage = Map.copyOf(fresh);
  }

  /** Users in this node's copy (a gauge). */
  int size() {
    return usage.size();
  }
}
