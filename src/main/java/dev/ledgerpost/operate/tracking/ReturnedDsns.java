package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the SMTP intake hands a message that may be a returned DSN (docs/design.md §8.13, "Returned DSNs"): one with the
 * empty envelope sender that the smarthost accepted. Never waited for: the client's reply was decided before, and a
 * tracking part that is not there, or fails, changes nothing of the message's own record.
 */
@FunctionalInterface
public interface ReturnedDsns {
  /** Nowhere: tests of the session alone. */
  ReturnedDsns NONE = (messageId, wire, dotStuffed) -> {};

  /**
   * @param messageId  the ledger row of the DSN itself (it is relayed and recorded as any message)
   * @param wire       its bytes; at most {@link DsnReport#MAX_BYTES} are read
   * @param dotStuffed whether {@code wire} is DATA's wire form (lines still dot-stuffed)
   */
  void returned(UUID messageId, Buffer wire, boolean dotStuffed);

  /**
   * Over the event bus to {@link TrackingMessages#DSN} (tracking's verticle): the bytes read are copied, so the intake's
   * buffer is not held.
   */
  static ReturnedDsns over(Vertx vertx) {
    Logger log = LoggerFactory.getLogger(ReturnedDsns.class);
    Bus bus = Bus.of(vertx);
    return (messageId, wire, dotStuffed) -> {
      byte[] bytes = wire.getBytes(0, Math.min(wire.length(), DsnReport.MAX_BYTES));
      bus.request(TrackingMessages.DSN, new TrackingMessages.Returned(messageId, bytes, dotStuffed), Object.class)
          .onFailure(e -> log.debug("tracking: DSN {} not handed to tracking: {}", messageId, e.getMessage()));
    };
  }
}
