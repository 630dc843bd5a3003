package dev.ledgerpost.operate.suppression;

import java.util.ArrayList;
import java.util.List;

/**
 * The lines of an import (docs/design.md §8.8): {@code address,scope,reason}, one entry a line. The scope may be empty
 * (the default scope); the reason is the rest of the line after the second comma, so it may hold commas, and one pair of
 * surrounding double quotes is taken off. Blank lines, lines starting with '#', and a first line starting with
 * {@code address,} (a header) are skipped.
 */
record SuppressionCsv(String address, String scope, String reason, int line) {
  /** The entries, or an {@link IllegalArgumentException} naming the first line that is not one. */
  static List<SuppressionCsv> parse(String text) {
    List<SuppressionCsv> rows = new ArrayList<>();
    String[] lines = text.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#") || (i == 0 && line.toLowerCase(java.util.Locale.ROOT).startsWith("address,"))) {
        continue;
      }
      int first = line.indexOf(',');
      int second = first < 0 ? -1 : line.indexOf(',', first + 1);
      if (second < 0) {
        throw new IllegalArgumentException("line " + (i + 1) + " is not address,scope,reason");
      }
      String reason = line.substring(second + 1).strip();
      if (reason.length() >= 2 && reason.startsWith("\"") && reason.endsWith("\"")) {
        reason = reason.substring(1, reason.length() - 1).replace("\"\"", "\"");
      }
      rows.add(new SuppressionCsv(line.substring(0, first).strip(), line.substring(first + 1, second).strip(), reason, i + 1));
    }
    if (rows.isEmpty()) {
      throw new IllegalArgumentException("no entries: one line per entry, address,scope,reason");
    }
    return rows;
  }
}
