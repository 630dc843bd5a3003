package dev.ledgerpost.platform.config;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses sizes: plain bytes, or with a binary suffix {@code KB}, {@code MB}, {@code GB}. */
public final class ByteSizes {
  private static final Pattern FORM = Pattern.compile("(\\d{1,12})\\s*(b|kb|mb|gb|k|m|g)?");

  private ByteSizes() {}

  public static long parse(String text) {
    Matcher m = FORM.matcher(text == null ? "" : text.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a size (use e.g. 26214400, 512KB, 25MB)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "b" : m.group(2);
    long factor = switch (unit) {
      case "k", "kb" -> 1024L;
      case "m", "mb" -> 1024L * 1024;
      case "g", "gb" -> 1024L * 1024 * 1024;
      default -> 1L;
    };
    try {
      return Math.multiplyExact(n, factor);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("'" + text + "' is too large");
    }
  }
}
