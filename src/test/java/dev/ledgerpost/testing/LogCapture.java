package dev.ledgerpost.testing;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Collects what one logger writes while a test runs, so the test can count audit lines. */
public final class LogCapture implements AutoCloseable {
  private final Logger logger;
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  private LogCapture(String name) {
    logger = (Logger) LoggerFactory.getLogger(name);
    appender.start();
    logger.addAppender(appender);
  }

  public static LogCapture of(String loggerName) {
    return new LogCapture(loggerName);
  }

  /** Formatted messages at ERROR that contain every given fragment. */
  public List<String> errorsContaining(String... fragments) {
    return snapshot().stream()
        .filter(e -> e.getLevel() == ch.qos.logback.classic.Level.ERROR)
        .map(ILoggingEvent::getFormattedMessage)
        .filter(m -> java.util.Arrays.stream(fragments).allMatch(m::contains))
        .toList();
  }

  /** Formatted messages at WARN that contain every given fragment. */
  public List<String> warningsContaining(String... fragments) {
    return snapshot().stream()
        .filter(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .filter(m -> java.util.Arrays.stream(fragments).allMatch(m::contains))
        .toList();
  }

  /** AppenderBase.doAppend holds the appender's lock while adding: copy under it, so polling while logging is safe. */
  private List<ILoggingEvent> snapshot() {
    synchronized (appender) {
      return new java.util.ArrayList<>(appender.list);
    }
  }

  @Override
  public void close() {
    logger.detachAppender(appender);
    appender.stop();
  }
}
