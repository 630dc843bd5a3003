package dev.ledgerpost.relay.resubmission;

import dev.ledgerpost.ledger.LedgerMessages.Claim;
import dev.ledgerpost.ledger.LedgerMessages.Earlier;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Submission;
import io.vertx.core.Future;
import io.vertx.sqlclient.Tuple;
import java.util.Collection;
import java.util.UUID;

/**
 * Resubmissions (docs/contract.md §1.13) as the relay contract meets them: the claim an open makes (its fingerprint,
 * or none), the answer an earlier row's state gives ({@link RetryAnswer}), and the record of a retry answered without
 * relaying (a {@code resubmissions} row and its {@code message.resubmitted} event, one statement). Thread-safe.
 */
public final class Resubmissions {
  /** The record and its event, one statement: the event commits with the fact it reports (§6.1). */
  private static final String RECORD = """
      WITH r AS (
        INSERT INTO resubmissions (message_id, outcome, attempt_id, node_id, client_ip, auth_user, helo)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        RETURNING seq, at)
      INSERT INTO outbox (event_id, message_id, type, payload)
      SELECT $1::text || ':resubmission:' || r.seq, $1, 'message.resubmitted',
             jsonb_build_object('id', $1::text, 'status', $8::text, 'outcome', $2::text, 'attemptId', $3::text,
                                'clientIp', $5::text, 'authUser', $6::text, 'at', r.at)
        FROM r""";

  private final GatewayConfig.Resubmission config;
  private final Database db;
  private final String nodeId;
  private final GatewayMetrics metrics;

  public Resubmissions(GatewayConfig.Resubmission config, Database db, String nodeId, GatewayMetrics metrics) {
    this.config = config;
    this.db = db;
    this.nodeId = nodeId;
    this.metrics = metrics;
  }

  /** Off: no claim is ever made, every submission is new mail (as before issue 28). */
  public static Resubmissions off() {
    return new Resubmissions(new GatewayConfig.Resubmission(GatewayConfig.ResubmissionMode.OFF, java.time.Duration.ofDays(5),
        GatewayConfig.UnknownResubmission.HOLD), null, null, new GatewayMetrics() {});
  }

  /** The claim an SMTP submission's open makes, or null (detection off, another intake, no single Message-ID, no scope). */
  public Claim claim(Submission s, String mailFrom, Collection<String> recipients, MessageData message) {
    if (!config.detects() || s.intake() != dev.ledgerpost.ledger.Intake.SMTP) {
      return null;
    }
    java.util.UUID fingerprint = Fingerprint.of(Fingerprint.scope(s.authUser(), s.relayRule()), message, mailFrom, recipients);
    return fingerprint == null ? null : new Claim(fingerprint, config.window(), null);
  }

  /** smtp.resubmission.unknown. */
  public GatewayConfig.UnknownResubmission unknown() {
    return config.unknown();
  }

  /**
   * What a retry that was not relayed gets from the row that holds its claim; counted. A row that would be relayed over
   * (it failed) but whose claim moved on again and again is answered as one in progress: a retry is racing for it.
   */
  public RetryAnswer answer(Earlier earlier) {
    RetryAnswer a = RetryAnswer.of(earlier, config.unknown());
    if (a == RetryAnswer.RELAYED) {
      a = RetryAnswer.IN_PROGRESS;
    }
    metrics.resubmission(GatewayMetrics.Resubmission.valueOf(a.name()));
    return a;
  }

  /**
   * Records a retry answered without relaying, against the earlier row, with its event. Never fails: the client's
   * answer does not depend on it (nothing was sent either way), so a failure is logged and the reply goes out.
   */
  public Future<Void> record(Earlier earlier, RetryAnswer answer, UUID attemptId, Submission s) {
    AuditLog.of(AuditEvent.RESUBMISSION).with("message_id", earlier.id()).with("attempt_id", attemptId)
        .with("outcome", answer.metric()).with("earlier_status", earlier.status()).with("client_ip", s.clientIp())
        .with("user", s.authUser()).log();
    Tuple t = Tuple.of(earlier.id(), answer.metric(), attemptId, nodeId, s.clientIp(), s.authUser(), s.helo(),
        earlier.status() == null ? null : earlier.status().name());
    return db.policy().run("resubmission", () -> db.pool().preparedQuery(RECORD).execute(t))
        .<Void>map(rows -> {
          db.outboxWritten();
          return null;
        })
        .otherwise(e -> {
          AuditLog.of(AuditEvent.RESUBMISSION_RECORD_FAILED).with("message_id", earlier.id()).with("attempt_id", attemptId)
              .with("outcome", answer.metric()).with("error", e.getMessage()).log();
          return null;
        });
  }
}
