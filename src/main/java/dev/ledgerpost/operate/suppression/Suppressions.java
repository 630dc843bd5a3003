package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.SuppressionMessages.Entry;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import java.time.Clock;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * This node's copy of the suppression list (docs/design.md §8.8): what the intakes consult for every recipient, so that
 * the check costs a map lookup, never a database round trip on the hot path. Thread-safe: the map is replaced whole
 * ({@link #replace}, by {@link SuppressionRefresh} on the part's context) and read by every SMTP and API event loop.
 * An entry past its {@code expires_at} (by the gateway's clock) no longer applies here, whether or not the expiry job
 * has deleted it yet.
 */
public final class Suppressions {
  public static final String GLOBAL = "global";
  private static final String USER = "user:";

  private final Clock clock;
  private final GatewayMetrics metrics;
  /** Keyed by {@link #key}; replaced whole, never changed in place. */
  private volatile Map<String, Entry> entries = Map.of();
  private volatile long version = -1;
  private final RefusalLog refusals;

  public Suppressions(Clock clock, GatewayMetrics metrics) {
    this(clock, metrics, RefusalLog.NONE);
  }

  public Suppressions(Clock clock, GatewayMetrics metrics, RefusalLog refusals) {
    this.clock = clock;
    this.metrics = metrics;
    this.refusals = refusals;
  }

  /** The gateway's clock: a refusal's time is the reply's, as the list's expiry is. */
  public Clock clock() {
    return clock;
  }

  /** No list at all (tests of the session alone, tools). */
  public static Suppressions none() {
    return new Suppressions(Clock.systemUTC(), GatewayMetrics.NOOP);
  }

  /**
   * The entry that refuses {@code address} for {@code user} (null: an unauthenticated relay client, which only global
   * entries cover), or empty; a refusal is counted on {@code channel}. A global entry wins over the user's own: it is
   * the one that holds for everyone.
   */
  public Optional<Entry> refusal(String address, String user, GatewayMetrics.Channel channel) {
    Map<String, Entry> now = entries;
    if (now.isEmpty()) {
      return Optional.empty();
    }
    String normalised = normalise(address);
    Instant at = clock.instant();
    Entry e = live(now.get(key(GLOBAL, normalised)), at);
    if (e == null && user != null) {
      e = live(now.get(key(scopeOf(user), normalised)), at);
    }
    if (e != null) {
      metrics.suppressed(channel);
    }
    return Optional.ofNullable(e);
  }

  /** Whether a live entry of {@code scope} holds the (normalised) address; not counted as a refusal. */
  boolean holds(String scope, String normalisedAddress) {
    return live(entries.get(key(scope, normalisedAddress)), clock.instant()) != null;
  }

  /** Where the intakes hand a refused recipient (docs/design.md §8.8); the part's writer, or none. */
  public RefusalLog refusals() {
    return refusals;
  }

  private static Entry live(Entry e, Instant at) {
    return e == null || !e.expiresAt().toInstant().isAfter(at) ? null : e;
  }

  /** The list as read at {@code version} (one statement, so the two agree). */
  void replace(long version, Map<String, Entry> entries) {
    this.entries = Map.copyOf(entries);
    this.version = version;
  }

  /** The version the copy was read at; -1 before the first read. */
  long version() {
    return version;
  }

  /** How many entries this node holds (expired ones not yet deleted included): a gauge. */
  public int size() {
    return entries.size();
  }

  static String key(String scope, String normalisedAddress) {
    return scope + "\n" + normalisedAddress;
  }

  /** The scope of one user's mail. */
  public static String scopeOf(String user) {
    return USER + user;
  }

  /** {@code global} or {@code user:<name>} (a name of at least one character); anything else is not a scope. */
  public static boolean validScope(String scope) {
    return scope.equals(GLOBAL) || (scope.startsWith(USER) && scope.length() > USER.length());
  }

  /**
   * The address as the list keeps it: the domain lower-cased (domains are case-insensitive), the local part as given
   * (RFC 5321 §2.4: only the receiving domain may read its case), without surrounding spaces or angle brackets.
   */
  public static String normalise(String address) {
    String a = address.trim();
    if (a.startsWith("<") && a.endsWith(">")) {
      a = a.substring(1, a.length() - 1);
    }
    int at = a.lastIndexOf('@');
    return at < 0 ? a : a.substring(0, at + 1) + a.substring(at + 1).toLowerCase(Locale.ROOT);
  }
}
