package dev.ledgerpost.platform.observability;

import java.util.List;
import java.util.Locale;

/**
 * Every audit event the gateway writes, with its fields in the order they are written (docs/contract.md §1.8).
 * A CRITICAL event is a fact an operator must act on or know of; a NOTICE records how a fact was closed.
 */
public enum AuditEvent {
  DELIVERY_OUTCOME_UNKNOWN(Level.CRITICAL, null, "message_id", "msg_id", "reason"),
  DELIVERY_RESULT_PERSIST_FAILED(Level.CRITICAL, null,
      "message_id", "msg_id", "target_status", "downstream_accepted", "cause", "error"),
  OUTCOME_JOURNAL_FAILED(Level.CRITICAL, null,
      "message_id", "msg_id", "target_status", "downstream_accepted", "error", "action"),
  OUTCOME_JOURNAL_CORRUPT(Level.CRITICAL, "damaged record(s) skipped, the intact records after them are recovered; a "
      + "message whose outcome was lost here stays PENDING and is raised by the stale watch",
      "file", "offset", "bytes", "copy"),
  KNOWN_OUTCOME_NOT_JOURNALED(Level.CRITICAL, "held in memory only, lost if the process ends before the ledger takes it",
      "message_id", "target_status", "error"),
  KNOWN_OUTCOME_UNSETTLEABLE(Level.CRITICAL, null, "message_id", "msg_id", "target_status", "downstream_accepted", "error"),
  KNOWN_OUTCOME_LOST_AT_STOP(Level.CRITICAL, "not journaled; the message stays PENDING for an operator",
      "message_id", "msg_id", "target_status", "downstream_accepted"),
  LEDGER_PARTITION_KEPT(Level.CRITICAL, "the partition is past ledger.retention but is not dropped while it holds a row "
      + "nobody settled; settle or resolve those rows", "partition", "until", "pending", "unknown"),
  LEDGER_PARTITION_EXPORT_REFUSED(Level.CRITICAL, "the export is not a copy of this partition's rows as they are now, "
      + "so the partition is not dropped on it; move that export out of ledger.archiveDir and the next pass exports the "
      + "partition again", "partition", "until", "archive", "reason"),
  LEDGER_DEFAULT_PARTITION_ROWS(Level.CRITICAL, "rows outside every weekly partition (a clock far off, or weeks not made "
      + "ahead); retention never drops them", "table", "partition"),
  STALE_PENDING(Level.CRITICAL, null, "message_id", "msg_id", "age_seconds", "raise", "threshold_seconds",
      "clients_waiting"),
  RESUBMISSION_RECORD_FAILED(Level.CRITICAL, "the retry was answered and nothing was sent; the resubmission audit line is "
      + "its only record", "message_id", "attempt_id", "outcome", "error"),
  DELIVERY_RESULT_PERSISTED(Level.NOTICE, null, "message_id", "msg_id", "status", "version", "attempts", "held_ms", "via"),
  NOT_SENT_CLOSED(Level.NOTICE, null, "message_id", "msg_id", "row", "key_released", "attempts", "held_ms"),
  MANUAL_RESOLUTION(Level.NOTICE, null, "message_id", "previous_status", "status", "version", "operator", "note"),
  RECONCILED_RESOLUTION(Level.NOTICE, null, "message_id", "proposal", "confidence", "source", "evidence_ref", "previous_status",
      "status", "version", "operator"),
  LEDGER_PARTITION_DROPPED(Level.NOTICE, null, "partition", "until", "messages", "archive"),
  RECONCILE_REJECTED(Level.NOTICE, "the evidence is not proposed for this message again", "message_id", "proposal", "source",
      "evidence_ref", "operator"),
  RESUBMISSION(Level.NOTICE, "a client's retry of a message the ledger already holds was answered without relaying it",
      "message_id", "attempt_id", "outcome", "earlier_status", "client_ip", "user"),
  ERASURE(Level.NOTICE, "the address is replaced by the hash in every row that held it", "erasure", "address_hash", "key_id",
      "requested_by", "rows", "tables"),
  SUPPRESSION_ADDED(Level.NOTICE, "the recipient is refused at RCPT (and by the send API) in that scope until the entry "
      + "expires or is removed", "suppression", "scope", "source", "added_by", "renewed"),
  SUPPRESSION_REMOVED(Level.NOTICE, null, "suppression", "scope", "removed_by"),
  SUPPRESSION_IMPORTED(Level.NOTICE, "each entry has its suppression.added event", "added", "renewed", "added_by"),
  WEBHOOK_ENDPOINT_DISABLED(Level.NOTICE, "nothing is sent to the webhook endpoint until it is enabled again; its "
      + "endpoint.disabled event tells its owner", "endpoint", "kind", "delivery", "error"),
  QUOTA_REFUSED(Level.NOTICE, "nothing was recorded or sent; the quota.exceeded event is written once per window",
      "attempt_id", "user", "quota", "limit", "resets_at");

  /** CRITICAL: an ERROR line starting "CRITICAL"; NOTICE: an INFO line. */
  public enum Level { CRITICAL, NOTICE }

  private final Level level;
  private final String explanation;
  private final List<String> fields;

  AuditEvent(Level level, String explanation, String... fields) {
    this.level = level;
    this.explanation = explanation;
    this.fields = List.of(fields);
  }

  /** Its name in the log: {@code audit_event=<name>}. */
  public String eventName() {
    return name().toLowerCase(Locale.ROOT);
  }

  public Level level() {
    return level;
  }

  /** What the line says after its fields, for the person reading it; null if the fields say it all. */
  public String explanation() {
    return explanation;
  }

  public List<String> fields() {
    return fields;
  }
}
