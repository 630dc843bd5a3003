package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.time.Duration;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the SMTP intake hands a message with the empty envelope sender, which may be a returned DSN (docs/design.md §8.13,
 * "Returned DSNs"): asked before the body goes downstream whether it is relayed at all ({@link #verdict}), and handed over
 * once its outcome is known ({@link #returned}). Neither can fail the intake: a tracking part that is not there, is slow
 * or fails makes the message relayed and recorded as any message, as it was before tracking could keep one.
 */
public interface ReturnedDsns {
  /** How long the client's final dot waits for tracking's verdict; past it the DSN is relayed (the safe default). */
  Duration VERDICT_TIMEOUT = Duration.ofSeconds(2);

  /** Nowhere: tests of the session alone. Everything is relayed. */
  ReturnedDsns NONE = new ReturnedDsns() {
    @Override
    public Future<TrackingMessages.Verdict> verdict(Buffer wire, boolean dotStuffed) {
      return Future.succeededFuture(TrackingMessages.Verdict.RELAY);
    }

    @Override
    public void returned(UUID messageId, Buffer wire, boolean dotStuffed, boolean relayed, TrackingMessages.Verdict verdict) {}

    @Override
    public void unrelayed(TrackingMessages.Verdict verdict) {}
  };

  /**
   * Whether the message is relayed, or kept (it matched one of our rows and tracking.relayDsns is false, or the gateway
   * relayed the same report before: a loop). Never fails: {@link TrackingMessages.Verdict#RELAY} for a message whose
   * headers do not say it is a delivery-status report (tracking is then not asked), and when tracking does not answer.
   */
  Future<TrackingMessages.Verdict> verdict(Buffer wire, boolean dotStuffed);

  /**
   * @param messageId  the ledger row of the DSN itself (relayed or kept, recorded as any message)
   * @param wire       its bytes; at most {@link DsnReport#MAX_BYTES} are read
   * @param dotStuffed whether {@code wire} is DATA's wire form (lines still dot-stuffed)
   * @param relayed    whether the smarthost took it (false: the gateway kept it, as {@code verdict} said)
   * @param verdict    what {@link #verdict} answered for it
   */
  void returned(UUID messageId, Buffer wire, boolean dotStuffed, boolean relayed, TrackingMessages.Verdict verdict);

  /**
   * A DSN {@link #verdict} let through whose relay surely did not happen (the smarthost refused or deferred it, or the
   * body never reached it): tracking stops counting it as under way. Not called for an unknown outcome: the smarthost may
   * have it, and a second arrival is then a loop's, or a retry that must not be relayed twice either.
   */
  void unrelayed(TrackingMessages.Verdict verdict);

  /**
   * Over the event bus to {@link TrackingMessages#DSN_VERDICT} and {@link TrackingMessages#DSN} (tracking's verticle): the
   * bytes read are copied, so the intake's buffer is not held.
   */
  static ReturnedDsns over(Vertx vertx) {
    Logger log = LoggerFactory.getLogger(ReturnedDsns.class);
    Bus bus = Bus.of(vertx);
    return new ReturnedDsns() {
      @Override
      public Future<TrackingMessages.Verdict> verdict(Buffer wire, boolean dotStuffed) {
        if (!DsnReport.saysReport(wire.getBytes(0, Math.min(wire.length(), DsnReport.HEAD_BYTES)))) {
          return Future.succeededFuture(TrackingMessages.Verdict.RELAY);
        }
        byte[] bytes = wire.getBytes(0, Math.min(wire.length(), DsnReport.MAX_BYTES));
        return bus.request(TrackingMessages.DSN_VERDICT, new TrackingMessages.Ask(bytes, dotStuffed), TrackingMessages.Verdict.class,
                VERDICT_TIMEOUT)
            .otherwise(e -> {
              log.info("tracking: no verdict on a returned DSN ({}); relayed as any message", e.getMessage());
              return TrackingMessages.Verdict.RELAY;
            });
      }

      @Override
      public void returned(UUID messageId, Buffer wire, boolean dotStuffed, boolean relayed, TrackingMessages.Verdict verdict) {
        byte[] bytes = wire.getBytes(0, Math.min(wire.length(), DsnReport.MAX_BYTES));
        bus.request(TrackingMessages.DSN, new TrackingMessages.Returned(messageId, bytes, dotStuffed, relayed, verdict), Object.class)
            .onFailure(e -> log.debug("tracking: DSN {} not handed to tracking: {}", messageId, e.getMessage()));
      }

      @Override
      public void unrelayed(TrackingMessages.Verdict verdict) {
        if (verdict.key() != null) {
          bus.request(TrackingMessages.DSN_UNRELAYED, new TrackingMessages.Unrelayed(verdict.key()), Object.class)
              .onFailure(e -> log.debug("tracking: an unrelayed DSN not handed to tracking: {}", e.getMessage()));
        }
      }
    };
  }
}
