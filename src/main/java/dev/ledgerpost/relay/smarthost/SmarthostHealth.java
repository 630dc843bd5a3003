package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.GatewayConfig.Smarthost;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which smarthosts to try, in which order: the configured ones ({@code downstream.host:port}, then
 * {@code downstream.fallback}), a host whose connection could not be opened moved behind the others for a
 * back-off ({@code downstream.hostBackoff}, doubling per failed round up to {@code downstream.hostMaxBackoff}).
 * One per process, thread-safe: every event loop's {@link DownstreamPool} reads and reports to the same
 * instance, so a host one pool found down is skipped by all of them.
 *
 * <p>A host in back-off is not excluded, only tried last: when every host before it fails too, the one
 * whose back-off ends first gets one attempt, so a gateway whose smarthosts are all down notices the first
 * one back as soon as a client tries, as it does with a single smarthost, and pays one connection attempt
 * per client for it, not one per host.
 *
 * <p>It also keeps what each smarthost's last EHLO offered ({@link #learned}), so that SMTP intake offers a
 * client what depends on the smarthost (DSN, BINARYMIME) only while the host new connections go to first
 * offers it too ({@link #offers}): probed at start, refreshed with every connection a pool opens.
 */
public final class SmarthostHealth {
  private static final Logger LOG = LoggerFactory.getLogger(SmarthostHealth.class);

  /** A host in back-off: how many rounds in a row failed, and when it is in the running again (clock millis). */
  private record Down(int failures, long until) {}

  private final List<Smarthost> hosts;
  private final long firstBackoffMillis;
  private final long maxBackoffMillis;
  private final Clock clock;
  private final Map<Smarthost, Down> down = new ConcurrentHashMap<>();
  private final Map<Smarthost, java.util.Set<String>> extensions = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicBoolean probeClaimed = new java.util.concurrent.atomic.AtomicBoolean();

  public SmarthostHealth(GatewayConfig.Downstream config, Clock clock) {
    this(config.hosts(), config.hostBackoff(), config.hostMaxBackoff(), clock);
  }

  SmarthostHealth(List<Smarthost> hosts, Duration firstBackoff, Duration maxBackoff, Clock clock) {
    if (hosts.isEmpty()) {
      throw new IllegalArgumentException("no smarthost");
    }
    this.hosts = List.copyOf(hosts);
    this.firstBackoffMillis = firstBackoff.toMillis();
    this.maxBackoffMillis = Math.max(maxBackoff.toMillis(), firstBackoff.toMillis());
    this.clock = clock;
  }

  public List<Smarthost> hosts() {
    return hosts;
  }

  /**
   * The hosts to try for a new connection, in order: those not in back-off as configured, then the one
   * whose back-off ends first (if any is in back-off).
   */
  List<Smarthost> order() {
    if (down.isEmpty()) {
      return hosts;
    }
    long now = clock.millis();
    List<Smarthost> order = new ArrayList<>(hosts.size());
    Smarthost soonest = null;
    long soonestUntil = Long.MAX_VALUE;
    for (Smarthost h : hosts) {
      Down d = down.get(h);
      if (d == null || !backingOff(d, now)) {
        order.add(h);
      } else if (d.until() < soonestUntil) {
        soonest = h;
        soonestUntil = d.until();
      }
    }
    if (soonest != null) {
      order.add(soonest);
    }
    return order;
  }

  /** The host a new connection goes to first: a pooled connection to any other is not reused. */
  Smarthost preferred() {
    if (down.isEmpty()) {
      return hosts.get(0);
    }
    return order().get(0);
  }

  /** True while {@code host} is in back-off. */
  public boolean backingOff(Smarthost host) {
    Down d = down.get(host);
    return d != null && backingOff(d, clock.millis());
  }

  /**
   * A wall clock that stepped back must not keep a host out for longer than the longest back-off: a
   * back-off that ends further away than that has ended.
   */
  private boolean backingOff(Down d, long now) {
    return now < d.until() && d.until() - now <= maxBackoffMillis;
  }

  /**
   * A connection to {@code host} could not be opened. Failures while the host is already in back-off (the
   * other attempts of a burst that started before the first failure was known, or a last-resort attempt)
   * do not lengthen it: the back-off doubles per failed round, not per client.
   */
  void failed(Smarthost host, String reason) {
    long now = clock.millis();
    boolean[] newRound = new boolean[1];
    Down after = down.compute(host, (h, d) -> {
      if (d != null && backingOff(d, now)) {
        return d;
      }
      newRound[0] = true;
      int failures = d == null ? 1 : d.failures() + 1;
      long backoff = firstBackoffMillis << Math.min(failures - 1, 20);
      return new Down(failures, now + Math.min(backoff, maxBackoffMillis));
    });
    if (newRound[0] && hosts.size() > 1) {
      // Once per round, not per client; with one smarthost DownstreamSlots.unreachable says it all.
      LOG.warn("smarthost {} cannot be reached ({}); the other smarthosts are tried first for {} s (failed round {} in a row)",
          host, reason, (after.until() - now + 999) / 1000, after.failures());
    }
  }

  /** A connection to {@code host} was opened: it is in the running again at once. */
  void answered(Smarthost host) {
    if (down.isEmpty()) {
      return;
    }
    Down was = down.remove(host);
    if (was != null && hosts.size() > 1) {
      LOG.info("smarthost {} answers again (after {} failed round(s))", host, was.failures());
    }
  }

  /** A connection to {@code host} was opened and its EHLO (the last one, after STARTTLS) offered these keywords. */
  void learned(Smarthost host, java.util.Set<String> keywords) {
    java.util.Set<String> now = java.util.Set.copyOf(keywords);
    java.util.Set<String> before = extensions.put(host, now);
    if (!now.equals(before)) {
      LOG.info("smarthost {} offers {}", host, new java.util.TreeSet<>(now));
    }
  }

  /** Whether the host new connections go to first offered {@code keyword} at its last EHLO; false while unknown. */
  public boolean offers(String keyword) {
    java.util.Set<String> known = extensions.get(preferred());
    return known != null && known.contains(keyword);
  }

  /** True for the first caller only: the one intake instance that probes the smarthosts at start. */
  public boolean claimProbe() {
    return probeClaimed.compareAndSet(false, true);
  }
}
