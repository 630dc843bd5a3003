package dev.ledgerpost.delivery;

import io.vertx.core.Future;

/** The delivery part as intake sees it: one downstream transaction per client transaction. */
public interface Relay {

  /**
   * Opens a downstream transaction and sends {@code MAIL FROM}. Fails with {@link DownstreamUnavailable}
   * when the downstream cannot be reached; a downstream refusal is a successful future whose
   * {@link RelayTransaction#mailReply()} is negative (the transaction is then already released).
   */
  Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters);

  /** MAIL FROM parameters the client gave that matter downstream. */
  record MailParameters(long declaredSize, boolean eightBitMime, boolean smtpUtf8) {
    public static final MailParameters NONE = new MailParameters(0, false, false);
  }
}
