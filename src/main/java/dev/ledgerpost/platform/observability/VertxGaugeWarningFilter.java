package dev.ledgerpost.platform.observability;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import org.slf4j.Marker;

/**
 * Drops one known false alarm from every start's log: vertx-micrometer registers the gauge
 * {@code vertx.eventbus.handlers} again for each event-bus consumer, and Micrometer warns that "this Gauge has
 * been already registered". The registration is meant to return the existing gauge (vertx-micrometer keeps
 * its own counter per id), so nothing is lost. Only that gauge's warning is dropped: the same warning about
 * any other gauge (one of ours registered twice would keep its first supplier) still shows.
 * Installed as a turbo filter by logback.xml and logback-json.xml.
 */
public final class VertxGaugeWarningFilter extends TurboFilter {
  private static final String MICROMETER_REGISTRY = "io.micrometer.core.instrument.MeterRegistry";
  private static final String GAUGE = "vertx.eventbus.handlers";

  @Override
  public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
    if (level != Level.WARN || logger == null || !MICROMETER_REGISTRY.equals(logger.getName()) || format == null
        || !format.contains("already registered")) {
      return FilterReply.NEUTRAL;
    }
    // Micrometer formats the message itself (the meter id is in the text); a parameter is checked as well.
    String id = "name='" + GAUGE + "'";
    if (format.contains(id)) {
      return FilterReply.DENY;
    }
    if (params != null) {
      for (Object p : params) {
        if (p != null && String.valueOf(p).contains(id)) {
          return FilterReply.DENY;
        }
      }
    }
    return FilterReply.NEUTRAL;
  }
}
