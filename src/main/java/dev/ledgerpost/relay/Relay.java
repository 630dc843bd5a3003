package dev.ledgerpost.relay;

import io.vertx.core.Future;

/** The delivery part as intake sees it: one downstream transaction per client transaction. */
public interface Relay {

  /**
   * Opens a downstream transaction and sends {@code MAIL FROM}. Fails with {@link DownstreamUnavailable}
   * when the downstream cannot be reached; a downstream refusal is a successful future whose
   * {@link RelayTransaction#mailReply()} is negative (the transaction is then already released).
   */
  Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters);

  /**
   * Whether the smarthost that new connections go to first offers an EHLO keyword (DSN, CHUNKING,
   * BINARYMIME...), as its last EHLO said: probed at start, refreshed by every connection opened to it.
   * False while nothing is known. Intake offers what depends on the smarthost only while this is true.
   */
  default boolean downstreamOffers(String keyword) {
    return false;
  }

  /**
   * MAIL FROM parameters the client gave that matter downstream. {@code ret} and {@code envid} are RFC 3461's
   * RET and ENVID as the client wrote them (null when absent): they are passed on verbatim.
   */
  record MailParameters(long declaredSize, boolean eightBitMime, boolean smtpUtf8, boolean binaryMime, String ret,
      String envid) {
    public static final MailParameters NONE = new MailParameters(0, false, false);

    public MailParameters(long declaredSize, boolean eightBitMime, boolean smtpUtf8) {
      this(declaredSize, eightBitMime, smtpUtf8, false, null, null);
    }

    /** The client asked for delivery status notifications on MAIL. */
    public boolean dsn() {
      return ret != null || envid != null;
    }
  }
}
