package dev.ledgerpost.delivery;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.util.function.Function;

/**
 * One mail transaction on a downstream SMTP connection, as the relay contract sees it: nothing but
 * SMTP. It knows no ledger, no journal and no reply table; {@link RelayContract} decides what its
 * results mean. MAIL FROM was sent when it was made ({@link SmarthostRelay#begin}).
 */
interface WireTransaction {

  /** How DATA ended: the downstream's verdict, or where the connection was lost. */
  sealed interface DataResult {
    /** One function per kind of end, all required: a new kind is a compile error where it is not handled. */
    <R> R fold(Function<Verdict, R> verdict, Function<LostBeforeDot, R> lostBefore, Function<LostAfterDot, R> lostAfter);

    /** The downstream answered DATA (not 354: {@code bodySent} false) or the final dot ({@code bodySent} true). */
    record Verdict(DownstreamReply reply, boolean bodySent) implements DataResult {
      @Override
      public <R> R fold(Function<Verdict, R> verdict, Function<LostBeforeDot, R> lostBefore, Function<LostAfterDot, R> lostAfter) {
        return verdict.apply(this);
      }
    }

    /** Lost or timed out before the final dot was written: nothing was delivered. */
    record LostBeforeDot(String reason) implements DataResult {
      @Override
      public <R> R fold(Function<Verdict, R> verdict, Function<LostBeforeDot, R> lostBefore, Function<LostAfterDot, R> lostAfter) {
        return lostBefore.apply(this);
      }
    }

    /** Lost or timed out after the final dot was written: the downstream may or may not have it. */
    record LostAfterDot(String reason) implements DataResult {
      @Override
      public <R> R fold(Function<Verdict, R> verdict, Function<LostBeforeDot, R> lostBefore, Function<LostAfterDot, R> lostAfter) {
        return lostAfter.apply(this);
      }
    }
  }

  /** Forwards RCPT TO; the reply is the downstream's verdict. */
  Future<DownstreamReply> rcpt(String address);

  /**
   * DATA, then the trace header and the body (dot-stuffed wire form) and the final dot. Never fails: every
   * end is a {@link DataResult}. The connection goes back to its pool, or is closed, before this completes.
   */
  Future<DataResult> data(byte[] trace, Buffer body);

  /** Resets the transaction (RSET) and releases the connection. Never fails. */
  Future<Void> abort();
}
