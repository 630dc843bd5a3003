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
  private final ch.qos.logback.classic.Level before;

  private LogCapture(String name, ch.qos.logback.classic.Level level) {
    logger = (Logger) LoggerFactory.getLogger(name);
    before = logger.getLevel();
    if (level != null) {
      logger.setLevel(level);
    }
    appender.start();
    logger.addAppender(appender);
  }

  public static LogCapture of(String loggerName) {
    return new LogCapture(loggerName, null);
  }

  /** With the logger set to {@code level} while capturing (DEBUG lines are off by default); restored at close. */
  public static LogCapture at(String loggerName, ch.qos.logback.classic.Level level) {
    return new LogCapture(loggerName, level);
  }

  /** One captured line: its level, the thread that wrote it, and its formatted message. */
  public record Line(ch.qos.logback.classic.Level level, String thread, String message) {}

  /** Every captured line, at any level, that contains every given fragment. */
  public List<Line> linesContaining(String... fragments) {
    return snapshot().stream()
        .map(e -> new Line(e.getLevel(), e.getThreadName(), e.getFormattedMessage()))
        .filter(l -> java.util.Arrays.stream(fragments).allMatch(l.message()::contains))
        .toList();
  }

  /** Formatted messages at ERROR that contain every given fragment. */
  public List<String> errorsContaining(String... fragments) {
    return atLevel(ch.qos.logback.classic.Level.ERROR, fragments);
  }

  /** Formatted messages at WARN that contain every given fragment. */
  public List<String> warningsContaining(String... fragments) {
    return atLevel(ch.qos.logback.classic.Level.WARN, fragments);
  }

  private List<String> atLevel(ch.qos.logback.classic.Level level, String... fragments) {
    return linesContaining(fragments).stream().filter(l -> l.level() == level).map(Line::message).toList();
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
    logger.setLevel(before);
  }
}
