package dev.ledgerpost.operate.stats;

import java.time.Instant;
import java.util.List;

/** The usage statistics' addresses (docs/design.md §8.12), served on {@link StatsVerticle}'s context. */
public final class StatsMessages {
  public static final String QUERY = "stats.query";
  /** One roll-up pass now (the job's, whether or not this node leads it): for tests and tools. */
  public static final String ROLLUP = "stats.rollup";

  private StatsMessages() {}

  /** What a count may be grouped by besides its bucket. */
  public enum Dimension {
    STATUS("status"), USER("user"), TAG("tag"),
    /** A recipient's tracking state (docs/design.md §8.13): delivered, deferred, bounced, expired. */
    DELIVERY("delivery"),
    /** The bounce category of a recipient's state (null for delivered). */
    CATEGORY("category");

    final String name;

    Dimension(String name) {
      this.name = name;
    }

    public String label() {
      return name;
    }
  }

  /**
   * Counts of [since, until) per bucket ({@code hours}: 1 or 24; both bounds on a bucket's edge), grouped by
   * {@code groupBy} (in this order in each row), of one user's messages only when {@code user} is not null.
   */
  public record StatsQuery(Instant since, Instant until, int hours, List<Dimension> groupBy, String user) {
    /** Whether it counts recipients by their tracking facts (groupBy delivery or category) rather than messages. */
    public boolean byDelivery() {
      return groupBy.contains(Dimension.DELIVERY) || groupBy.contains(Dimension.CATEGORY);
    }
  }

  /**
   * One bucket's counts; {@code keys} holds the values of the query's groupBy, in its order (null: no user). Grouped by
   * delivery or category, {@code messages} and {@code bytes} are null: a message's recipients may end in different
   * states, and the count is of recipients.
   */
  public record Row(Instant bucket, List<String> keys, Long messages, long recipients, Long bytes) {}

  /** The rows by bucket, then by the groupBy values. */
  public record Answer(List<Row> rows) {}

  /** A pass as of {@code now}: prune, fold closed rows, roll closed hours (at most {@code maxHours}). */
  public record Rollup(Instant now, int maxHours) {}

  /** {@code deliveryRolled}: hours rolled by delivery state (V114) in this pass. */
  public record RolledUp(int pruned, int folded, int rolled, int deliveryRolled) {}
}
