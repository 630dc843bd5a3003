package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Dimension;
import dev.ledgerpost.operate.stats.StatsMessages.StatsQuery;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The statistics request's parameters checked and made a {@link StatsQuery} (docs/design.md §8.12). A value that cannot
 * be read is a {@link Refused} 400 (unknown bucket or groupBy, a time that is not one), a readable request that cannot be
 * answered a 422 (since not before until, a range too long for its bucket, a bound inside a bucket, status or tag with
 * delivery or category). Each says what was given and what would do.
 */
final class StatsParameters {
  /** An hourly answer covers at most 31 days (744 buckets); a daily one 400 days (the default ledger.retention). */
  static final Duration MAX_HOURLY = Duration.ofDays(31);
  static final Duration MAX_DAILY = Duration.ofDays(400);

  private StatsParameters() {}

  /** A request the API answers with a problem: {@code status} 400 or 422. */
  static final class Refused extends RuntimeException {
    final int status;

    Refused(int status, String detail) {
      super(detail);
      this.status = status;
    }
  }

  static StatsQuery parse(String since, String until, String bucket, String groupBy, String user, Clock clock) {
    int hours = switch (bucket == null || bucket.isEmpty() ? "1d" : bucket) {
      case "1h" -> 1;
      case "1d" -> 24;
      default -> throw new Refused(400, "bucket must be 1h or 1d, not " + cut(bucket));
    };
    List<Dimension> dimensions = dimensions(groupBy);
    Duration max = hours == 1 ? MAX_HOURLY : MAX_DAILY;
    Instant to = time("until", until);
    Instant from = time("since", since);
    if (to == null) { // the end of the current bucket: what has come in so far
      to = edge(clock.instant(), hours).plus(hours, ChronoUnit.HOURS);
    }
    if (from == null) {
      from = to.minus(hours == 1 ? Duration.ofDays(1) : Duration.ofDays(30));
    }
    if (!from.isBefore(to)) {
      throw new Refused(422, "since (" + from + ") must be before until (" + to + ")");
    }
    for (Instant t : List.of(from, to)) {
      if (!edge(t, hours).equals(t)) {
        throw new Refused(422, (t == from ? "since" : "until") + " must be on a bucket's edge: " + (hours == 1
            ? "a whole hour (UTC), e.g. " + edge(t, hours) : "midnight UTC, e.g. " + edge(t, hours)) + ", not " + t);
      }
    }
    if (Duration.between(from, to).compareTo(max) > 0) {
      throw new Refused(422, "the range is too long for bucket=" + (hours == 1 ? "1h" : "1d") + ": " + Duration.between(from, to)
          .toDays() + " days asked, at most " + max.toDays() + (hours == 1 ? " (ask for bucket=1d for longer ranges)" : ""));
    }
    return new StatsQuery(from, to, hours, dimensions, user == null || user.isEmpty() ? null : user);
  }

  static List<Dimension> dimensions(String groupBy) {
    List<Dimension> out = new ArrayList<>();
    if (groupBy == null || groupBy.isBlank()) {
      return out;
    }
    for (String part : groupBy.split(",", -1)) {
      String name = part.trim().toLowerCase(Locale.ROOT);
      Dimension d = switch (name) {
        case "status" -> Dimension.STATUS;
        case "user" -> Dimension.USER;
        case "tag" -> Dimension.TAG;
        case "delivery" -> Dimension.DELIVERY;
        case "category" -> Dimension.CATEGORY;
        default -> throw new Refused(400, "unknown groupBy '" + cut(part.trim())
            + "': a comma-separated list of status, user, tag, delivery, category");
      };
      if (out.contains(d)) {
        throw new Refused(400, "groupBy names " + d.label() + " twice");
      }
      out.add(d);
    }
    boolean byDelivery = out.contains(Dimension.DELIVERY) || out.contains(Dimension.CATEGORY);
    for (Dimension message : List.of(Dimension.STATUS, Dimension.TAG)) {
      if (byDelivery && out.contains(message)) {
        // The delivery counts are of recipients by their tracking facts, rolled up per user only (docs/design.md §8.12).
        throw new Refused(422, "groupBy=" + message.label() + " cannot be combined with delivery or category: those count "
            + "recipients by their tracking facts, per user only; ask for groupBy=" + message.label() + " and for "
            + "groupBy=delivery,category separately");
      }
    }
    return out;
  }

  private static Instant time(String name, String text) {
    if (text == null || text.isEmpty()) {
      return null;
    }
    try {
      return OffsetDateTime.parse(text).toInstant();
    } catch (DateTimeParseException e) {
      throw new Refused(400, name + " must be an ISO-8601 timestamp with offset, e.g. 2026-11-01T00:00:00Z, not " + cut(text));
    }
  }

  /** The start of the UTC bucket holding {@code t}. */
  static Instant edge(Instant t, int hours) {
    return hours == 1 ? t.truncatedTo(ChronoUnit.HOURS) : t.truncatedTo(ChronoUnit.DAYS);
  }

  private static String cut(String s) {
    return s.length() > 40 ? s.substring(0, 40) + "…" : s;
  }
}
