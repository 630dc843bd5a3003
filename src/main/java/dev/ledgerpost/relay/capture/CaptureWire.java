package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.WireTransaction;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.ByteArrayOutputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A capture's side of the relay contract (docs/design.md §8.10): where a smarthost transaction would send the body, it
 * keeps it in {@code captures}; nothing leaves the gateway. Its verdicts are its own: every RCPT is taken, a kept body is
 * {@code 250 2.0.0}, a body over {@code capture.maxMessageSize} {@code 552 5.3.4} (the ledger records it FAILED_PERM),
 * and a body that could not be stored is lost before the dot (FAILED_TEMP: the client tries again). It runs after the
 * ledger's open, like DATA downstream, so no kept message is without its ledger row.
 */
final class CaptureWire implements WireTransaction {
  private static final Logger LOG = LoggerFactory.getLogger(CaptureWire.class);
  static final DownstreamReply RCPT_OK = new DownstreamReply(250, "2.1.5", "Recipient ok (captured, not relayed)");
  static final DownstreamReply KEPT = new DownstreamReply(250, "2.0.0", "Captured, not relayed");
  /** Bodies up to this size are unstuffed on the event loop; larger ones on a worker (the hash does the same). */
  private static final int INLINE_LIMIT = 64 * 1024;

  private final CaptureStore store;
  private final long maxSize;
  private final Duration retention;
  private final Clock clock;
  private final String user;
  /** What a kept body is answered: {@link #KEPT}, or why tracking kept a returned DSN. */
  private final DownstreamReply kept;
  /** The ledger id the contract opens the message under: set by {@link CapturedTransaction#deliver} before the body comes. */
  private UUID id;

  CaptureWire(CaptureStore store, long maxSize, Duration retention, Clock clock, String user) {
    this(store, maxSize, retention, clock, user, KEPT);
  }

  CaptureWire(CaptureStore store, long maxSize, Duration retention, Clock clock, String user, DownstreamReply kept) {
    this.kept = kept;
    this.store = store;
    this.maxSize = maxSize;
    this.retention = retention;
    this.clock = clock;
    this.user = user;
  }

  void id(UUID ledgerId) {
    this.id = ledgerId;
  }

  @Override
  public boolean captures() {
    return true;
  }

  @Override
  public Future<DownstreamReply> rcpt(String address, RelayTransaction.RcptParameters parameters) {
    return Future.succeededFuture(RCPT_OK);
  }

  /** A capture takes any body as it is: BDAT's, BINARYMIME, a last line without CRLF. */
  @Override
  public boolean offers(String keyword) {
    return true;
  }

  @Override
  public GatewayMetrics.BodyCommand command(MessageData.Form form) {
    return form == MessageData.Form.DOT_STUFFED ? GatewayMetrics.BodyCommand.DATA : GatewayMetrics.BodyCommand.BDAT;
  }

  @Override
  public Future<DataResult> data(byte[] trace, MessageData message) {
    if (message.size() > maxSize) {
      return Future.succeededFuture(new DataResult.Verdict(new DownstreamReply(552, "5.3.4",
          "Message too big to capture (capture.maxMessageSize " + maxSize + " bytes), not relayed"), false));
    }
    OffsetDateTime now = OffsetDateTime.now(clock);
    return unstuffed(message)
        .compose(body -> store.keep(id, user, body, now, now.plus(retention)))
        .<DataResult>map(v -> new DataResult.Verdict(kept, true))
        .otherwise(e -> {
          LOG.error("captured message {} could not be kept: {}", id, e.getMessage());
          return new DataResult.LostBeforeDot("capture not stored: " + e.getMessage());
        });
  }

  /** Nothing was begun anywhere: there is nothing to reset. */
  @Override
  public Future<Void> abort() {
    return Future.succeededFuture();
  }

  private static Future<byte[]> unstuffed(MessageData message) {
    boolean stuffed = message.form() == MessageData.Form.DOT_STUFFED;
    Context context = Vertx.currentContext();
    if (message.wire().length() <= INLINE_LIMIT || context == null) {
      return Future.succeededFuture(unstuff(message.wire(), stuffed));
    }
    return context.executeBlocking(() -> unstuff(message.wire(), stuffed), false);
  }

  /** The message itself: DATA's wire form with each line's stuffed leading dot dropped (RFC 5321 §4.5.2). */
  static byte[] unstuff(Buffer wire, boolean stuffed) {
    byte[] bytes = wire.getBytes();
    if (!stuffed) {
      return bytes;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length);
    boolean lineStart = true;
    for (byte b : bytes) {
      if (!(lineStart && b == '.')) {
        out.write(b);
      }
      lineStart = b == '\n';
    }
    return out.toByteArray();
  }
}
