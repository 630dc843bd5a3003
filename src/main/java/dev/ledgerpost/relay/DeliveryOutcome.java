package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.resubmission.RetryAnswer;
import java.util.UUID;

/**
 * What happened to one message after its ledger entry was (or could not be) opened. The SMTP reply
 * table and the HTTP API each map these to what their client hears; nothing else decides it.
 *
 * <p>Every consumer goes through {@link #accept(Visitor)}: a new outcome is then a compile error in
 * every place that has to decide what it means (Java 17 has no exhaustive switch over a sealed type).
 */
public sealed interface DeliveryOutcome {

  /** One method per outcome; implement all of them, there is no default. */
  interface Visitor<R> {
    R notRecorded(NotRecorded o);

    R accepted(Accepted o);

    R deferred(Deferred o);

    R rejected(Rejected o);

    R lostBeforeDot(LostBeforeDot o);

    R unknown(Unknown o);

    R resubmitted(Resubmitted o);

    R overQuota(OverQuota o);

    R keyHeld(KeyHeld o);
  }

  <R> R accept(Visitor<R> visitor);

  /** Its series of the outcome counter; every outcome names one (no default), so a new one cannot go uncounted. */
  GatewayMetrics.Outcome metric();

  /**
   * The ledger could not be opened (or its open was not confirmed); the downstream never received
   * DATA. Nothing was sent, and the gateway says so: the "not sent" fact is journaled and the retry
   * part closes a row the open may have left behind (docs/contract.md §1).
   */
  record NotRecorded() implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.notRecorded(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.NOT_RECORDED;
    }
  }

  /**
   * The downstream accepted. {@code settled} is false when the settle failed after its retries. {@code captured}: there
   * was no downstream, the message was captured (docs/design.md §8.10) and {@code reply} is the capture's own.
   */
  record Accepted(UUID ledgerId, DownstreamReply reply, boolean settled, boolean captured) implements DeliveryOutcome {
    public Accepted(UUID ledgerId, DownstreamReply reply, boolean settled) {
      this(ledgerId, reply, settled, false);
    }

    @Override
    public <R> R accept(Visitor<R> v) {
      return v.accepted(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return captured ? GatewayMetrics.Outcome.CAPTURED : GatewayMetrics.Outcome.ACCEPTED;
    }
  }

  /** The downstream answered the message with 4xx. */
  record Deferred(UUID ledgerId, DownstreamReply reply, boolean settled) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.deferred(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.DEFERRED;
    }
  }

  /** The downstream answered the message with 5xx. */
  record Rejected(UUID ledgerId, DownstreamReply reply, boolean settled) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.rejected(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.REJECTED;
    }
  }

  /** The connection was lost or timed out before the final dot was written: nothing was delivered. */
  record LostBeforeDot(UUID ledgerId, String reason, boolean settled) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.lostBeforeDot(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.LOST_BEFORE_DOT;
    }
  }

  /** The connection was lost or timed out after the final dot: the downstream may or may not have it. */
  record Unknown(UUID ledgerId, String reason, boolean settled) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.unknown(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.UNKNOWN;
    }
  }

  /**
   * The message is a resubmission of {@code earlierId} (docs/contract.md §1.13): its fingerprint's claim is the earlier
   * row's, so nothing was opened and nothing sent. {@code answer} is what the earlier row's state gives: already
   * relayed, still in progress, or held until its outcome is known (never {@link RetryAnswer#RELAYED}: that one is
   * relayed and ends as any other message). {@code attemptId}: the id this attempt's row would have had.
   */
  record Resubmitted(UUID attemptId, UUID earlierId, RetryAnswer answer) implements DeliveryOutcome {
    public Resubmitted {
      if (answer == RetryAnswer.RELAYED) {
        throw new IllegalArgumentException("a resubmission relayed as new mail ends as any other message");
      }
    }

    @Override
    public <R> R accept(Visitor<R> v) {
      return v.resubmitted(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.RESUBMISSION;
    }
  }

  /**
   * The open's own count found the user's hourly or daily quota used up (docs/design.md §8.9 "Quotas"): nothing was
   * opened and nothing sent; the downstream transaction was abandoned before DATA. {@code attemptId}: the id its row
   * would have had.
   */
  record OverQuota(UUID attemptId, String user, LedgerMessages.OverQuota quota) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.overQuota(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return GatewayMetrics.Outcome.OVER_QUOTA;
    }
  }

  /**
   * A send API open whose Idempotency-Key another request holds (docs/design.md §7.2): the open's statement did not take
   * the key, so it wrote nothing and nothing was sent; the downstream transaction was abandoned before DATA. The intake
   * answers from the key, as for a duplicate it meets before any downstream transaction. Not a delivery: no metric.
   */
  record KeyHeld(UUID attemptId) implements DeliveryOutcome {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.keyHeld(this);
    }

    @Override
    public GatewayMetrics.Outcome metric() {
      return null;
    }
  }
}
