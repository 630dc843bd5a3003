package dev.ledgerpost.operate.tracking;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/** Tracking's address (docs/design.md §8.13): one message's facts, for the message detail. */
public final class TrackingMessages {
  public static final String OF_MESSAGE = "tracking.ofMessage";
  /** A message that may be a returned DSN, from the SMTP intake ({@link ReturnedDsns}); answered once it is handled. */
  public static final String DSN = "tracking.dsn";
  /**
   * Whether a message with the empty sender that says it is a delivery-status report is relayed, asked by the SMTP intake
   * before it is ({@link ReturnedDsns#verdict}): answered {@link Verdict}.
   */
  public static final String DSN_VERDICT = "tracking.dsnVerdict";
  /**
   * A DSN the verdict let through that the smarthost did not take (refused, deferred, or the connection lost before the
   * dot): no longer under way, so the reporting MTA's retry of it is not taken for a loop ({@link ReturnedDsns#unrelayed}).
   */
  public static final String DSN_UNRELAYED = "tracking.dsnUnrelayed";

  private TrackingMessages() {}

  public record OfMessage(UUID messageId) {}

  /**
   * A message with the empty envelope sender, relayed ({@code relayed}) or kept as {@code verdict} said: {@code messageId}
   * its own ledger row, {@code bytes} its first bytes (DATA's wire form when {@code dotStuffed}).
   */
  public record Returned(UUID messageId, byte[] bytes, boolean dotStuffed, boolean relayed, Verdict verdict) {}

  /** The identity ({@link Verdict#key}) of a DSN that was to be relayed and was not. */
  public record Unrelayed(byte[] key) {}

  /** A message with the empty sender, before it is relayed: its first bytes (DATA's wire form when {@code dotStuffed}). */
  public record Ask(byte[] bytes, boolean dotStuffed) {}

  /**
   * What the intake does with a returned DSN (docs/design.md §8.13, "Returned DSNs"). {@code key}: the report's identity
   * ({@link DsnReport#identity}), null when it could not be read; {@code matched}: the row it reports on, when one is;
   * {@code reason}: what the client hears beside its 250 when the DSN is kept.
   */
  public record Verdict(Action action, byte[] key, UUID matched, String reason) {
    /** Relayed as any message: no answer, a slow or failed one, unmatched, malformed, or tracking.relayDsns true. */
    public static final Verdict RELAY = new Verdict(Action.RELAY, null, null, null);

    public boolean keeps() {
      return action != Action.RELAY;
    }
  }

  /**
   * RELAY: relayed as today; KEEP: matched one of our rows and tracking.relayDsns is false; LOOPED: the same report was
   * relayed by the gateway before (a mail loop): kept, never relayed twice.
   */
  public enum Action { RELAY, KEEP, LOOPED }

  /**
   * What was made of a {@link Returned}: {@code result} matched, unmatched, malformed, expired or looped, and the facts
   * added.
   */
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
