package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.core.spi.FilterReply;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Only vertx-micrometer's known double registration is dropped; the same warning about any other gauge stays. */
class VertxGaugeWarningFilterTest {
  static final String FORMAT = "This Gauge has been already registered ({}), the registration will be ignored.";

  @Test
  void dropsTheEventBusHandlersWarningOnly() {
    VertxGaugeWarningFilter filter = new VertxGaugeWarningFilter();
    Logger micrometer = (Logger) LoggerFactory.getLogger("io.micrometer.core.instrument.MeterRegistry");
    Meter.Id handlers = new Meter.Id("vertx.eventbus.handlers", Tags.empty(), null, null, Meter.Type.GAUGE);
    Meter.Id ours = new Meter.Id("ledgerpost.pending.messages", Tags.empty(), null, null, Meter.Type.GAUGE);

    assertThat(filter.decide(null, micrometer, Level.WARN, FORMAT, new Object[] {handlers}, null)).isEqualTo(FilterReply.DENY);
    assertThat(filter.decide(null, micrometer, Level.WARN, FORMAT, new Object[] {ours}, null)).isEqualTo(FilterReply.NEUTRAL);
    // As Micrometer's WarnThenDebugLogger writes it: the message already formatted, no parameters.
    String formatted = FORMAT.replace("{}", handlers.toString());
    assertThat(filter.decide(null, micrometer, Level.WARN, formatted, null, null)).isEqualTo(FilterReply.DENY);
    assertThat(filter.decide(null, micrometer, Level.WARN, FORMAT.replace("{}", ours.toString()), null, null))
        .isEqualTo(FilterReply.NEUTRAL);
    Logger other = (Logger) LoggerFactory.getLogger("dev.ledgerpost.Gateway");
    assertThat(filter.decide(null, other, Level.WARN, FORMAT, new Object[] {handlers}, null)).isEqualTo(FilterReply.NEUTRAL);
  }
}
