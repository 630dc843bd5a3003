package dev.ledgerpost.platform.config;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses durations as operators write them: {@code 250ms}, {@code 1s}, {@code 5m}, {@code 1h}, {@code 7d}, or plain milliseconds. */
public final class Durations {
  private static final Pattern FORM = Pattern.compile("(\\d{1,12})\\s*(ms|s|m|h|d)?");

  private Durations() {}

  /** @throws IllegalArgumentException with a message fit for an operator */
  public static Duration parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("a duration is required (e.g. 250ms, 1s, 5m, 7d)");
    }
    Matcher m = FORM.matcher(text.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a duration (use e.g. 250ms, 1s, 5m, 1h, 7d, or plain milliseconds)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "ms" : m.group(2);
    return switch (unit) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
  }

  public static String format(Duration d) {
    long ms = d.toMillis();
    if (ms % 1000 != 0) {
      return ms + "ms";
    }
    return (ms / 1000) + "s";
  }
}
