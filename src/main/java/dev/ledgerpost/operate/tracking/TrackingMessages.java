package dev.ledgerpost.operate.tracking;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/** Tracking's address (docs/design.md §8.13): one message's facts, for the message detail. */
public final class TrackingMessages {
  public static final String OF_MESSAGE = "tracking.ofMessage";
  /** A message that may be a returned DSN, from the SMTP intake ({@link ReturnedDsns}); answered once it is handled. */
  public static final String DSN = "tracking.dsn";

  private TrackingMessages() {}

  public record OfMessage(UUID messageId) {}

  /**
   * A message relayed with the empty envelope sender: {@code messageId} its own ledger row, {@code bytes} its first
   * bytes (DATA's wire form when {@code dotStuffed}).
   */
  public record Returned(UUID messageId, byte[] bytes, boolean dotStuffed) {}

  /** What was made of a {@link Returned}: {@code result} matched, unmatched, malformed or expired, and the facts added. */
  public record DsnResult(String result, String reason, int facts) {}

  /**
   * One fact about recipient {@code idx} of the message (docs/data-model.md §5.24); {@code position} is that
   * recipient's place in the ledger's list of them (RCPT order).
   */
  public record FactView(int idx, int position, String state, Instant at, String remoteHost, String dsn, String reply, String category,
      String rule, String source, String evidence, String queueId) {}

  /** A message's facts, in the order they were recorded. */
  public record Facts(List<FactView> items) {}
}
