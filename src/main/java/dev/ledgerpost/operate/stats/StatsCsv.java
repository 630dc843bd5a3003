package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Answer;
import dev.ledgerpost.operate.stats.StatsMessages.StatsQuery;

/**
 * The statistics as CSV (RFC 4180, CRLF lines): {@code bucket}, the groupBy columns in the request's order, then
 * {@code messages,recipients,bytes} (messages and bytes empty in rows by delivery or category). A value a spreadsheet would run as a formula (it starts with = + - @) gets a
 * leading apostrophe: user names and tags come from clients.
 */
final class StatsCsv {
  private StatsCsv() {}

  static String of(StatsQuery q, Answer a) {
    StringBuilder out = new StringBuilder("bucket");
    q.groupBy().forEach(d -> out.append(',').append(d.label()));
    out.append(",messages,recipients,bytes\r\n");
    for (StatsMessages.Row r : a.rows()) {
      out.append(r.bucket());
      r.keys().forEach(k -> out.append(',').append(field(k)));
      out.append(',').append(count(r.messages())).append(',').append(r.recipients()).append(',').append(count(r.bytes())).append("\r\n");
    }
    return out.toString();
  }

  /** A count, or an empty field where there is none (messages and bytes of a row by delivery state). */
  private static String count(Long n) {
    return n == null ? "" : n.toString();
  }

  static String field(String value) {
    if (value == null) {
      return "";
    }
    String v = !value.isEmpty() && "=+-@".indexOf(value.charAt(0)) >= 0 ? "'" + value : value;
    return v.contains(",") || v.contains("\"") || v.contains("\r") || v.contains("\n") ? '"' + v.replace("\"", "\"\"") + '"' : v;
  }
}
