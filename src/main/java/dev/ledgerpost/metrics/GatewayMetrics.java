package dev.ledgerpost.metrics;

import java.util.function.DoubleSupplier;

/**
 * The gateway's own measurements, behind an interface so parts do not depend on Micrometer and tests
 * can run without a registry. Tag values come from enums or bounded sets only: an unbounded tag
 * (an address, a message id, a free-text reply) would grow the registry without limit.
 */
public interface GatewayMetrics {

  enum Stage { COMMAND, DATA }

  enum TxKind { OPEN, SETTLE }

  enum Outcome { ACCEPTED, DEFERRED, REJECTED, LOST_BEFORE_DOT, UNKNOWN, NOT_RECORDED }

  /** A failed AUTH: answered 535 (or 421 on a connection's last try), the failure that began a ban, or refused while banned. */
  enum AuthFailure { REJECTED, BANNED, REFUSED }

  /** A MAIL of an authenticated user under auth.rateLimit: within the rate, or answered 451 4.7.1. */
  enum RateLimit { ALLOWED, LIMITED }

  /** A reconcile proposal's confidence and outcome (docs/design.md §8.4). */
  enum ProposalConfidence { EXACT, WEAK }

  enum ProposalOutcome { DELIVERED, NOT_DELIVERED }

  /** One SMTP reply written to a client, and how long its command took (stage DATA: after the final dot). */
  void smtpReply(int code, Stage stage, long nanos);

  void ledgerTransaction(TxKind kind, long nanos, boolean succeeded);

  void ledgerRetry(String cause);

  /** What the client waited for after its final dot: ledger open, downstream DATA, settle. */
  void delivery(Outcome outcome, long nanos);

  void authFailure(AuthFailure result);

  void userRateLimit(RateLimit outcome);

  /** A reconcile proposal written by this node. */
  void reconcileProposal(ProposalConfidence confidence, ProposalOutcome outcome);

  /** Registers a gauge whose value is read at scrape time; the supplier must be cheap and thread-safe. */
  void gauge(String name, String help, DoubleSupplier value);

  /** A gauge with one tag: one series of a family ({@code name{tagKey="tagValue"}}). */
  void gauge(String name, String help, String tagKey, String tagValue, DoubleSupplier value);

  GatewayMetrics NOOP = new GatewayMetrics() {
    @Override
    public void smtpReply(int code, Stage stage, long nanos) {}

    @Override
    public void ledgerTransaction(TxKind kind, long nanos, boolean succeeded) {}

    @Override
    public void ledgerRetry(String cause) {}

    @Override
    public void delivery(Outcome outcome, long nanos) {}

    @Override
    public void authFailure(AuthFailure result) {}

    @Override
    public void userRateLimit(RateLimit outcome) {}

    @Override
    public void reconcileProposal(ProposalConfidence confidence, ProposalOutcome outcome) {}

    @Override
    public void gauge(String name, String help, DoubleSupplier value) {}

    @Override
    public void gauge(String name, String help, String tagKey, String tagValue, DoubleSupplier value) {}
  };
}
