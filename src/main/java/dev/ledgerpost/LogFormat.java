package dev.ledgerpost;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import org.slf4j.LoggerFactory;

/** Switches Logback to JSON lines once the configuration says so (it is read after logging started). */
final class LogFormat {
  private LogFormat() {}

  static void json() {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(context);
    context.reset();
    try {
      configurator.doConfigure(LogFormat.class.getResource("/logback-json.xml"));
    } catch (JoranException e) {
      throw new IllegalStateException("cannot switch to JSON logs", e);
    }
  }
}
