package dev.ledgerpost.relay;

import io.vertx.core.Future;

/**
 * One mail transaction on a downstream SMTP connection, as the relay contract sees it: nothing but
 * SMTP. It knows no ledger, no journal and no reply table; {@link RelayContract} decides what its
 * results mean. MAIL FROM was sent when it was made ({@link SmarthostRelay#begin}).
 */
public interface WireTransaction {

  /** How DATA ended: the downstream's verdict, or where the connection was lost. */
  sealed interface DataResult {

    /** One method per kind of end; implement all of them, there is no default (as {@link DeliveryOutcome.Visitor}). */
    interface Visitor<R> {
      R verdict(Verdict v);

      R lostBeforeDot(LostBeforeDot l);

      R lostAfterDot(LostAfterDot l);
    }

    <R> R accept(Visitor<R> visitor);

    /** The downstream answered DATA (not 354: {@code bodySent} false) or the final dot ({@code bodySent} true). */
    record Verdict(DownstreamReply reply, boolean bodySent) implements DataResult {
      @Override
      public <R> R accept(Visitor<R> v) {
        return v.verdict(this);
      }
    }

    /** Lost or timed out before the final dot was written: nothing was delivered. */
    record LostBeforeDot(String reason) implements DataResult {
      @Override
      public <R> R accept(Visitor<R> v) {
        return v.lostBeforeDot(this);
      }
    }

    /** Lost or timed out after the final dot was written: the downstream may or may not have it. */
    record LostAfterDot(String reason) implements DataResult {
      @Override
      public <R> R accept(Visitor<R> v) {
        return v.lostAfterDot(this);
      }
    }
  }

  /** Forwards RCPT TO with its DSN parameters (verbatim); the reply is the downstream's verdict. */
  Future<DownstreamReply> rcpt(String address, RelayTransaction.RcptParameters parameters);

  default Future<DownstreamReply> rcpt(String address) {
    return rcpt(address, RelayTransaction.RcptParameters.NONE);
  }

  /** Whether the connection's EHLO offered a keyword (CHUNKING, BINARYMIME, DSN...). */
  boolean offers(String keyword);

  /** The command a body of this form goes down with on this connection: BDAT when it came with BDAT and CHUNKING is offered. */
  dev.ledgerpost.platform.observability.GatewayMetrics.BodyCommand command(MessageData.Form form);

  /**
   * The trace header and the message: DATA, the trace, the body (dot-stuffed) and the final dot; or for a body
   * that came with BDAT, to a smarthost that offers CHUNKING, one {@code BDAT <n> LAST} with the trace and the
   * body as they are. Never fails: every end is a {@link DataResult} ("the final dot" is the last byte of the
   * message either way). The connection goes back to its pool, or is closed, before this completes.
   */
  Future<DataResult> data(byte[] trace, MessageData message);

  /** Resets the transaction (RSET) and releases the connection. Never fails. */
  Future<Void> abort();

  /**
   * True for a capture's transaction (docs/design.md §8.10): no smarthost behind it, its positive verdict means "kept",
   * and the contract settles the message CAPTURED, never SENT.
   */
  default boolean captures() {
    return false;
  }
}
