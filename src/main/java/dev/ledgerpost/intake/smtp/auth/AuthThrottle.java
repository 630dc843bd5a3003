package dev.ledgerpost.intake.smtp.auth;

import dev.ledgerpost.platform.config.Durations;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brute-force throttling of SMTP AUTH, across connections: one instance per process, shared by every
 * SMTP event loop. Failures are counted per client address and per user name. Each failure waits
 * before its 535, {@code failureDelay} doubled per recent failure of the address or the name (whichever
 * has more); {@code banThreshold} failures from one address ban it for {@code banWindow}. A user name is
 * never banned: anyone could then lock its owner out by guessing wrong on purpose.
 *
 * <p>Memory is bounded: each table holds at most {@code capacity} entries and drops the oldest (the
 * one whose last failure lies furthest back) when full, so an attacker with many addresses or names
 * pushes out its own old entries, not without bound. An entry expires {@code banWindow} after its last
 * failure; a ban begins with a failure, so it ends when its entry expires and the count starts over.
 */
public final class AuthThrottle {
  private static final Logger LOG = LoggerFactory.getLogger(AuthThrottle.class);
  /** Per table; an entry is a few dozen bytes plus its key. */
  static final int DEFAULT_CAPACITY = 10_000;
  /** The delay stops doubling at 2^5 = 32 times auth.failureDelay. */
  static final int MAX_DOUBLINGS = 5;
  /** User names are keyed by at most this many characters: an AUTH line may be 12 KB. */
  private static final int MAX_USER_KEY = 128;

  public record Settings(Duration failureDelay, int banThreshold, Duration banWindow) {}

  /** What a failure costs: the wait before its reply, and whether it began a ban of the address. */
  public record Penalty(Duration delay, boolean banBegan) {}

  private static final class Entry {
    int failures;
    long lastNanos;
    boolean banned;
  }

  private final Settings settings;
  private final GatewayMetrics metrics;
  private final LongSupplier nanos;
  private final long windowNanos;
  private final Table addresses;
  private final Table users;

  public AuthThrottle(Settings settings, GatewayMetrics metrics) {
    this(settings, metrics, System::nanoTime, DEFAULT_CAPACITY);
  }

  /** With the clock ({@code nanos}) and table size a test chooses. */
  public AuthThrottle(Settings settings, GatewayMetrics metrics, LongSupplier nanos, int capacity) {
    this.settings = settings;
    this.metrics = metrics;
    this.nanos = nanos;
    this.windowNanos = settings.banWindow().toNanos();
    this.addresses = new Table(capacity);
    this.users = new Table(capacity);
  }

  /** No delay and no ban (sessions built without a throttle, in tests). */
  public static AuthThrottle off() {
    return new AuthThrottle(new Settings(Duration.ZERO, 0, Duration.ofMinutes(1)), GatewayMetrics.NOOP);
  }

  /** Whether the address is banned now: checked at connect (421 4.7.0). */
  public boolean banned(String address) {
    long now = nanos.getAsLong();
    synchronized (addresses) {
      Entry e = addresses.live(address, now);
      return e != null && e.banned;
    }
  }

  /** Whether an AUTH from the address may be checked at all; a refusal (454 4.7.0) is counted. */
  public boolean mayAttempt(String address) {
    if (banned(address)) {
      metrics.authFailure(GatewayMetrics.AuthFailure.REFUSED);
      return false;
    }
    return true;
  }

  /** Records a failed AUTH and says how long to wait before answering it. */
  public Penalty failed(String address, String user) {
    long now = nanos.getAsLong();
    int byAddress;
    boolean banBegan = false;
    synchronized (addresses) {
      Entry e = addresses.touch(address, now);
      byAddress = e.failures;
      if (settings.banThreshold() > 0 && !e.banned && e.failures >= settings.banThreshold()) {
        e.banned = true;
        banBegan = true;
      }
    }
    int byUser;
    String userKey = user == null ? "" : user.length() > MAX_USER_KEY ? user.substring(0, MAX_USER_KEY) : user;
    synchronized (users) {
      byUser = users.touch(userKey, now).failures;
    }
    if (banBegan) {
      LOG.warn("AUTH: client {} banned for {} after {} failed attempts (auth.banThreshold)", address,
          Durations.format(settings.banWindow()), byAddress);
    }
    metrics.authFailure(banBegan ? GatewayMetrics.AuthFailure.BANNED : GatewayMetrics.AuthFailure.REJECTED);
    int doublings = Math.min(Math.max(byAddress, byUser) - 1, MAX_DOUBLINGS);
    return new Penalty(settings.failureDelay().multipliedBy(1L << doublings), banBegan);
  }

  /** Addresses banned now, for the gauge; scans the table (at most its capacity), so read it at scrape time only. */
  public int bannedAddresses() {
    long now = nanos.getAsLong();
    synchronized (addresses) {
      addresses.expire(now);
      int n = 0;
      for (Entry e : addresses.values()) {
        if (e.banned) {
          n++;
        }
      }
      return n;
    }
  }

  /** Entries held, for tests of the bound. */
  int size() {
    synchronized (addresses) {
      synchronized (users) {
        return addresses.size() + users.size();
      }
    }
  }

  /**
   * Keyed entries in the order of their last failure (re-inserted on each), so the head is both the
   * oldest and the first to expire. Callers hold its monitor.
   */
  private final class Table extends LinkedHashMap<String, Entry> {
    private final int capacity;

    Table(int capacity) {
      super(16, 0.75f, false);
      this.capacity = capacity;
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
      return size() > capacity;
    }

    Entry live(String key, long now) {
      expire(now);
      return get(key);
    }

    /** Counts one failure: the entry moves to the tail. */
    Entry touch(String key, long now) {
      expire(now);
      Entry e = get(key);
      if (e != null && e.banned) {
        // A check that was in flight when the ban began: the ban runs from the failure that began it.
        e.failures++;
        return e;
      }
      e = e == null ? new Entry() : remove(key);
      e.failures++;
      e.lastNanos = now;
      put(key, e);
      return e;
    }

    void expire(long now) {
      Iterator<Entry> it = values().iterator();
      while (it.hasNext()) {
        Entry e = it.next();
        if (now - e.lastNanos < windowNanos) {
          break;
        }
        it.remove();
      }
    }
  }
}
