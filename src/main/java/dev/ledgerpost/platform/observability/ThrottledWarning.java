package dev.ledgerpost.platform.observability;

import org.slf4j.Logger;

/**
 * A warning about a problem that repeats on every tick while it lasts (a heartbeat, a poll): written at most once a
 * minute, so the log says the problem is there without filling up with it. One per verticle: not thread-safe.
 */
public final class ThrottledWarning {
  private static final long INTERVAL_MILLIS = 60_000;

  private final Logger log;
  private long last;

  public ThrottledWarning(Logger log) {
    this.log = log;
  }

  public void warn(String format, Object... args) {
    long now = System.currentTimeMillis();
    if (now - last > INTERVAL_MILLIS) {
      last = now;
      log.warn(format, args);
    }
  }
}
