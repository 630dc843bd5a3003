package dev.ledgerpost.platform.observability;

import java.util.function.DoubleSupplier;

/**
 * The gateway's own measurements, behind an interface so parts do not depend on Micrometer and tests
 * can run without a registry. Every event is a no-op by default, so a sink names only what it measures
 * ({@link MicrometerGatewayMetrics} measures every one). Tag values come from enums or bounded sets only: an unbounded tag
 * (an address, a message id, a free-text reply) would grow the registry without limit. The one exception, the user of
 * the opt-in per-user counters, is capped ({@link PerUserMeters}).
 */
public interface GatewayMetrics {

  enum Stage { COMMAND, DATA }

  enum TxKind { OPEN, SETTLE }

  enum Outcome { ACCEPTED, DEFERRED, REJECTED, LOST_BEFORE_DOT, UNKNOWN, NOT_RECORDED, RESUBMISSION, CAPTURED, OVER_QUOTA }

  /** What a recognised resubmission got (docs/contract.md §1.13). */
  enum Resubmission { ALREADY_RELAYED, IN_PROGRESS, HELD, RELAYED }

  /** A failed AUTH: answered 535 (or 421 on a connection's last try), the failure that began a ban, or refused while banned. */
  enum AuthFailure { REJECTED, BANNED, REFUSED }

  /** A MAIL of an authenticated user under auth.rateLimit: within the rate, or answered 451 4.7.1. */
  enum RateLimit { ALLOWED, LIMITED }

  /** A reconcile proposal's confidence and outcome (docs/design.md §8.4). */
  enum ProposalConfidence { EXACT, WEAK }

  enum ProposalOutcome { DELIVERED, NOT_DELIVERED }
  /** The command that carried an SMTP message body: DATA, or BDAT chunks (RFC 3030). */
  enum BodyCommand { DATA, BDAT }

  /**
   * How one webhook attempt ended: delivered (2xx), retrying (another attempt follows), failed (the schedule's
   * last attempt failed: the delivery is FAILED), gone (410: the endpoint is disabled).
   */
  enum WebhookResult { DELIVERED, RETRYING, FAILED, GONE }

  /** The door a recipient was refused at because the suppression list holds it (docs/design.md §8.8). */
  enum Channel { SMTP, HTTP }

  /** Why a refused recipient was refused (docs/design.md §8.8): the suppression list, or the smarthost's own reply. */
  enum RefusalSource { SUPPRESSED, SMARTHOST }

  /** Where a fault rule of a captured user fired (docs/design.md §8.11), and what it did. */
  enum FaultStage { MAIL, RCPT, DATA }

  enum FaultKind { REPLY, DELAY }

  /** One SMTP reply written to a client, and how long its command took (stage DATA: after the final dot). */
  default void smtpReply(int code, Stage stage, long nanos) {}

  default void ledgerTransaction(TxKind kind, long nanos, boolean succeeded) {}

  default void ledgerRetry(String cause) {}

  /** What the client waited for after its final dot: ledger open, downstream DATA, settle. */
  default void delivery(Outcome outcome, long nanos) {}

  /**
   * The same message's outcome, by its user (SMTP AUTH name or send API key's user; null for none): counted only with
   * metrics.perUser, under a capped set of user labels (docs: README "Metrics").
   */
  default void userMessage(String user, Outcome outcome) {}

  /** A user refused for a used-up hourly or daily quota, at any door (metrics.perUser only). */
  default void userQuotaRefusal(String user) {}

  default void authFailure(AuthFailure result) {}

  /** A client's retry recognised by its fingerprint, by what it got. */
  default void resubmission(Resubmission outcome) {}

  default void userRateLimit(RateLimit outcome) {}

  /** A reconcile proposal written by this node. */
  default void reconcileProposal(ProposalConfidence confidence, ProposalOutcome outcome) {}

  /** An SMTP message body was received whole (DATA's final dot, BDAT LAST), whatever became of it. */
  default void smtpTransaction(BodyCommand command) {}

  /** A message body went to the smarthost, as DATA or as BDAT (a smarthost's own log may not say which). */
  default void downstreamTransaction(BodyCommand command) {}

  /** One webhook attempt's end; {@code endpoint} is a configured endpoint's name (a bounded set). */
  default void webhookAttempt(String endpoint, WebhookResult result) {}

  /** A configured webhook endpoint: its counters exist (at zero) from the start. */
  default void webhookEndpoint(String endpoint) {}

  /** A recipient refused because the suppression list holds it: a RCPT answered 550, or a send answered 422. */
  default void suppressed(Channel channel) {}

  /** A refused recipient handed to the refusal log (recorded in recipient_refusals, or else counted lost). */
  default void recipientRefused(RefusalSource source) {}

  /** Refused recipients not recorded: the log's queue was full, or their batch's INSERT failed. */
  default void refusalsLost(int count) {}

  /**
   * A tracking fact recorded (docs/design.md §8.13): its state ({@code delivered}, {@code deferred}, {@code bounced},
   * {@code expired}) and category (null for a delivery). Both come from closed lists: the series are bounded.
   */
  default void trackingFact(String state, String category) {}

  /** A returned DSN was handled (docs/design.md §8.13): {@code result} matched, unmatched, malformed or expired. */
  default void trackingDsn(String result) {}

  /**
   * Asking the downstream Ledgerpost for its facts failed (docs/design.md §8.13): {@code kind} unreachable,
   * unauthorized, not-found, status or malformed.
   */
  default void trackingDownstreamError(String kind) {}

  /** A fault rule fired: its reply was given instead of the gateway's own, or its delay was waited. */
  default void faultInjected(FaultStage stage, FaultKind kind) {}

  /** Registers a gauge whose value is read at scrape time; the supplier must be cheap and thread-safe. */
  default void gauge(String name, String help, DoubleSupplier value) {}

  /** A gauge with one tag: one series of a family ({@code name{tagKey="tagValue"}}). */
  default void gauge(String name, String help, String tagKey, String tagValue, DoubleSupplier value) {}

  /** Measures nothing (tests, tools): every event is a default no-op. */
  GatewayMetrics NOOP = new GatewayMetrics() {};
}
