package dev.ledgerpost.relay.resubmission;

import dev.ledgerpost.ledger.LedgerMessages.Earlier;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownResubmission;

/**
 * What a resubmission gets, by the earlier row's state (docs/contract.md §1.13): the one place that decides it, as the
 * reply tables decide what a client hears. Each answer names its series of ledgerpost_resubmissions_total.
 */
public enum RetryAnswer {
  /** SENT or RESOLVED_DELIVERED: the smarthost has it. 250, nothing sent. */
  ALREADY_RELAYED("already_relayed"),
  /** PENDING and a live node holds it (in delivery, or its outcome kept by the retry part): 451 4.3.0, nothing sent. */
  IN_PROGRESS("in_progress"),
  /** Nobody knows whether it went out (UNKNOWN, or PENDING that nobody holds) and smtp.resubmission.unknown is hold. */
  HELD("held"),
  /** The earlier row failed (or nobody knows and smtp.resubmission.unknown is relay): relayed as new mail, naming it. */
  RELAYED("relayed");

  private final String metric;

  RetryAnswer(String metric) {
    this.metric = metric;
  }

  /** Its outcome label, as the metric, the ledger's resubmissions and the event name it. */
  public String metric() {
    return metric;
  }

  /** The table. */
  public static RetryAnswer of(Earlier earlier, UnknownResubmission unknown) {
    if (earlier.status() == null) {
      return RELAYED; // its row is gone: a claim that outlived its row protects nothing
    }
    return switch (earlier.status()) {
      case SENT, RESOLVED_DELIVERED, CAPTURED -> ALREADY_RELAYED; // a captured retry is answered from its capture, not kept twice
      case FAILED_TEMP, FAILED_PERM, RESOLVED_NOT_DELIVERED -> RELAYED;
      case PENDING -> earlier.held() ? IN_PROGRESS : whenUnknown(unknown);
      case UNKNOWN -> whenUnknown(unknown);
    };
  }

  private static RetryAnswer whenUnknown(UnknownResubmission unknown) {
    return unknown == UnknownResubmission.HOLD ? HELD : RELAYED;
  }
}
