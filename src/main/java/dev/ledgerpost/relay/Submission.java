package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.Intake;

/**
 * Who submitted a transaction and how; recorded in the ledger and in the Received: header. {@code tls}
 * names the protocol and cipher of the client's TLS session when there is one and it is known
 * ("TLSv1.3 with cipher TLS_AES_256_GCM_SHA384"); {@code smtpUtf8}: the transaction's MAIL said SMTPUTF8.
 * {@code relayRule}: the relay network (smtp.relayNetworks) that let an unauthenticated SMTP client relay, null
 * otherwise; with the AUTH user it scopes the resubmission fingerprint (docs/contract.md §1.13).
 */
public record Submission(Intake intake, String clientIp, String helo, String authUser, boolean tls, boolean esmtp,
    String tlsCipher, boolean smtpUtf8, String relayRule) {

  public Submission(Intake intake, String clientIp, String helo, String authUser, boolean tls, boolean esmtp) {
    this(intake, clientIp, helo, authUser, tls, esmtp, null, false, null);
  }

  public Submission(Intake intake, String clientIp, String helo, String authUser, boolean tls, boolean esmtp,
      String tlsCipher, boolean smtpUtf8) {
    this(intake, clientIp, helo, authUser, tls, esmtp, tlsCipher, smtpUtf8, null);
  }

  /**
   * The "with" protocol name for the Received: header: RFC 3848's ESMTP, ESMTPS, ESMTPA and ESMTPSA (SMTP
   * after HELO), and RFC 6531 §3.7.3's UTF8SMTP, UTF8SMTPS, UTF8SMTPA and UTF8SMTPSA for an SMTPUTF8
   * transaction.
   */
  public String protocol() {
    if (intake == Intake.HTTP) {
      return "HTTP";
    }
    if (!esmtp) {
      return "SMTP";
    }
    return (smtpUtf8 ? "UTF8SMTP" : "ESMTP") + (tls ? "S" : "") + (authUser != null ? "A" : "");
  }
}
