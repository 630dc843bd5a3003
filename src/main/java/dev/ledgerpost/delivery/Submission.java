package dev.ledgerpost.delivery;

import dev.ledgerpost.ledger.Intake;

/** Who submitted a transaction and how; recorded in the ledger and in the Received: header. */
public record Submission(Intake intake, String clientIp, String helo, String authUser, boolean tls, boolean esmtp) {

  /** RFC 3848 "with" protocol name for the Received: header. */
  public String protocol() {
    if (intake == Intake.HTTP) {
      return "HTTP";
    }
    if (!esmtp) {
      return "SMTP";
    }
    return "ESMTP" + (tls ? "S" : "") + (authUser != null ? "A" : "");
  }
}
