package dev.ledgerpost.relay;

import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.LedgerWriter;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.ledger.RecipientStatus;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.retry.KnownOutcome;
import dev.ledgerpost.relay.retry.OutcomeKeeper;
import dev.ledgerpost.relay.resubmission.Resubmissions;
import dev.ledgerpost.relay.resubmission.RetryAnswer;
import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.Future;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay contract (docs/contract.md §1), in one place for SMTP and HTTP intake alike: open the ledger, and only
 * then send the body; journal the outcome and settle the ledger (together: whichever is durable first
 * holds the fact); hand a failed settle to the retry part; write the audit lines; and turn every end into
 * a {@link DeliveryOutcome}. It speaks to the downstream only through a {@link WireTransaction}, and
 * never decides what a client hears (that is each intake's reply table). One per process, thread-safe:
 * it keeps no state of its own.
 */
public final class RelayContract {
  private static final Logger LOG = LoggerFactory.getLogger(RelayContract.class);
  /** A journal slower than this is a sick disk: a failed settle is handed over without waiting longer. */
  private static final Duration JOURNAL_TIMEOUT = Duration.ofSeconds(10);

  /** What the contract works with; built once by the gateway. */
  public record Services(LedgerWriter ledger, Bus bus, OutcomeKeeper outcomes, GatewayMetrics metrics, AtomicLong handovers,
      String hostname, Resubmissions resubmissions) {
    public Services(LedgerWriter ledger, Bus bus, OutcomeKeeper outcomes, GatewayMetrics metrics, AtomicLong handovers,
        String hostname) {
      this(ledger, bus, outcomes, metrics, handovers, hostname, Resubmissions.off());
    }
  }

  /**
   * How many times one message may take over the claim of a failed earlier row (docs/contract.md §1.13): once is the rule;
   * a second time only when another retry took it over and failed in between. Past that it waits like one in progress.
   */
  private static final int MAX_TAKEOVERS = 2;

  /**
   * A client transaction's envelope as the ledger records it: who, from whom (with MAIL's RFC 3461 RET and
   * ENVID, null when absent), where, and each RCPT's verdict.
   */
  record Envelope(Submission submission, String mailFrom, String dsnRet, String dsnEnvid, String route,
      List<Verdict> recipients) {
    Envelope(Submission submission, String mailFrom, String route, List<Verdict> recipients) {
      this(submission, mailFrom, null, null, route, recipients);
    }
  }

  /** One RCPT (with its RFC 3461 NOTIFY and ORCPT) and the downstream's verdict on it. */
  record Verdict(String address, DownstreamReply reply, RelayTransaction.RcptParameters dsn) {
    Verdict(String address, DownstreamReply reply) {
      this(address, reply, RelayTransaction.RcptParameters.NONE);
    }
  }

  private final Services services;

  public RelayContract(Services services) {
    this.services = services;
  }

  /** The whole contract for one message whose envelope the downstream has accepted. Never fails. */
  Future<DeliveryOutcome> deliver(WireTransaction wire, Envelope envelope, MessageData message, Opening opening) {
    long started = System.nanoTime();
    Open open = open(opening, envelope, message, services.resubmissions());
    // In delivery from before its row can exist until it is settled or handed over: no stale raise, no reconcile (§8.1).
    services.outcomes().delivering(open.id());
    return openClaimed(open, opening, 0)
        .transform(ar -> {
          if (ar.failed()) {
            LOG.error("ledger open failed for {} (Message-ID {}); answering 451 4.3.0, nothing sent downstream: {}",
                open.id(), message.messageIdHeader(), ar.cause().getMessage());
            return notSent(open, message, opening).compose(v -> wire.abort())
                .map(v -> (DeliveryOutcome) new DeliveryOutcome.NotRecorded());
          }
          Claimed c = ar.result();
          if (c.opened().overQuota() != null) {
            return overQuota(wire, c.open(), c.opened().overQuota());
          }
          if (c.opened().keyLost()) {
            return keyHeld(wire, c.open());
          }
          if (c.opened().earlier() != null) {
            return resubmitted(wire, c.open(), c.opened().earlier(), envelope.submission());
          }
          if (c.open().claim() != null && c.open().claim().replaces() != null) {
            services.metrics().resubmission(GatewayMetrics.Resubmission.RELAYED);
            LOG.info("{} is a client's retry of {}, which did not deliver it: relayed as new mail", open.id(),
                c.open().claim().replaces());
          }
          return send(wire, c.opened(), c.open(), envelope, message, opening);
        })
        .recover(e -> {
          // Every step above maps its failures to an outcome; reaching here is a bug. Nothing is known.
          LOG.error("relay contract for {} failed unexpectedly", open.id(), e);
          services.outcomes().deliveryAbandoned(open.id()); // its row, if any, is the stale watch's to raise
          return Future.failedFuture(e);
        })
        .onSuccess(outcome -> {
          if (outcome.metric() == null) {
            return; // not a delivery (a key held by another request): counted by nothing
          }
          services.metrics().delivery(outcome.metric(), System.nanoTime() - started);
          services.metrics().userMessage(open.authUser(), outcome.metric());
        });
  }

  /** The open that was made, and its answer. */
  private record Claimed(Open open, Opened opened) {}

  /**
   * Opens the entry; when an earlier row holds the fingerprint's claim and failed (or nobody knows and
   * smtp.resubmission.unknown is relay), opens again replacing it: that claim moves only if it is still the failed
   * row's (docs/contract.md §1.13), so two retries cannot both relay.
   */
  private Future<Claimed> openClaimed(Open open, Opening opening, int takeovers) {
    return openLedger(open, opening).compose(opened -> {
      LedgerMessages.Earlier earlier = opened.earlier();
      if (earlier != null && takeovers < MAX_TAKEOVERS
          && RetryAnswer.of(earlier, services.resubmissions().unknown()) == RetryAnswer.RELAYED) {
        return openClaimed(open.replacing(earlier.id()), opening, takeovers + 1);
      }
      return Future.succeededFuture(new Claimed(open, opened));
    });
  }

  /**
   * A resubmission answered from the earlier row (§1.13): nothing was opened, so nothing goes downstream; the
   * smarthost's transaction is reset, and the retry is recorded against the earlier row. Never fails.
   */
  private Future<DeliveryOutcome> resubmitted(WireTransaction wire, Open open, LedgerMessages.Earlier earlier, Submission s) {
    services.outcomes().deliveryAbandoned(open.id());
    RetryAnswer answer = services.resubmissions().answer(earlier);
    LOG.info("{} is a client's retry of {} ({}): {}, nothing sent downstream", open.id(), earlier.id(), earlier.status(),
        answer.metric());
    return services.resubmissions().record(earlier, answer, open.id(), s).compose(v -> wire.abort())
        .map(v -> (DeliveryOutcome) new DeliveryOutcome.Resubmitted(open.id(), earlier.id(), answer));
  }

  /**
   * The open's count refused it (docs/design.md §8.9): nothing was opened, so nothing goes downstream; the smarthost's
   * transaction is abandoned before DATA. Never fails.
   */
  private Future<DeliveryOutcome> overQuota(WireTransaction wire, Open open, LedgerMessages.OverQuota quota) {
    services.outcomes().deliveryAbandoned(open.id());
    services.metrics().userQuotaRefusal(open.authUser());
    AuditLog.of(AuditEvent.QUOTA_REFUSED).with("attempt_id", open.id()).with("user", open.authUser())
        .with("quota", quota.quota()).with("limit", quota.limit()).with("resets_at", quota.resetsAt()).log();
    return wire.abort().map(v -> (DeliveryOutcome) new DeliveryOutcome.OverQuota(open.id(), open.authUser(), quota));
  }

  /**
   * Another request holds the open's Idempotency-Key (docs/design.md §7.2): the open wrote nothing, so nothing goes
   * downstream; the smarthost's transaction is abandoned before DATA and the intake answers from the key. Never fails.
   */
  private Future<DeliveryOutcome> keyHeld(WireTransaction wire, Open open) {
    services.outcomes().deliveryAbandoned(open.id());
    LOG.info("{}: its Idempotency-Key is held by another request; nothing opened, nothing sent downstream", open.id());
    return wire.abort().map(v -> (DeliveryOutcome) new DeliveryOutcome.KeyHeld(open.id()));
  }

  /** Keyed or not, one group-committed open: a keyed open claims and binds its key in the same statement (§7.2). */
  private Future<Opened> openLedger(Open open, Opening opening) {
    return services.ledger().open(open);
  }

  /**
   * The settle with its key's answer when the send has a key: the response the intake will give if this settle
   * commits (whose outcome is {@code ifSettled}), stored in the settle's own statement; a settle that fails stores
   * nothing and the intake stores its answer itself, as before (docs/design.md §7.2).
   */
  private static Settle answering(Settle settle, Opening opening, DeliveryOutcome ifSettled) {
    if (opening.key() == null || opening.answer() == null) {
      return settle;
    }
    return settle.answering(new LedgerMessages.KeyAnswer(opening.key().ref(), opening.answer().apply(ifSettled)));
  }

  /** The last UTC day an open was received on, by its epoch day. Replaced whole, so a reader sees a consistent one. */
  private record Day(long epochDay, java.time.LocalDate date) {}

  private static volatile Day lastDay = new Day(Long.MIN_VALUE, null);

  /**
   * {@code at} in UTC, as OffsetDateTime.ofInstant(at, UTC) has it, with the date kept for its day: a message's
   * received_at needs its own instant but not a date worked out from the epoch day for each (issue 33).
   */
  static OffsetDateTime utc(java.time.Instant at) {
    long second = at.getEpochSecond();
    long epochDay = Math.floorDiv(second, 86_400);
    Day d = lastDay;
    if (d.epochDay() != epochDay) {
      d = new Day(epochDay, java.time.LocalDate.ofEpochDay(epochDay));
      lastDay = d;
    }
    java.time.LocalTime time = java.time.LocalTime.ofNanoOfDay((second - epochDay * 86_400) * 1_000_000_000L + at.getNano());
    return OffsetDateTime.of(java.time.LocalDateTime.of(d.date(), time), ZoneOffset.UTC);
  }

  private static Open open(Opening opening, Envelope envelope, MessageData message, Resubmissions resubmissions) {
    List<RecipientEntry> entries = new ArrayList<>(envelope.recipients().size());
    List<String> accepted = new ArrayList<>(envelope.recipients().size());
    for (Verdict v : envelope.recipients()) {
      entries.add(new RecipientEntry(v.address(), v.reply().positive() ? RecipientStatus.PENDING : RecipientStatus.REJECTED,
          v.reply().toString(), v.dsn().dsnNotify(), v.dsn().dsnOrcpt()));
      if (v.reply().positive()) {
        accepted.add(v.address());
      }
    }
    Submission s = envelope.submission();
    Open open = new Open(opening.id(), s.intake(), s.authUser(), s.clientIp(), s.helo(), envelope.mailFrom(),
        message.messageIdHeader(), message.size(), message.sha256(), envelope.route(), utc(java.time.Instant.now()),
        List.copyOf(entries), envelope.dsnRet(), envelope.dsnEnvid(),
        resubmissions.claim(s, envelope.mailFrom(), accepted, message), message.tags());
    return opening.key() == null ? open : open.keyed(opening.key());
  }

  /**
   * The open failed, but its commit may have landed (PostgreSQL died during it): a PENDING row would then
   * look like a message that may have been delivered, although nothing was sent. That is a known fact:
   * journal it and hand it to the retry part, which closes the row as FAILED_TEMP 4.3.0 once the ledger is
   * back (or finds none) and releases the send's Idempotency-Key (§1.3.1). Never fails.
   */
  private Future<Void> notSent(Open open, MessageData message, Opening opening) {
    Settle settle = new Settle(open.id(), 1, MessageStatus.FAILED_TEMP, open.pendingRecipients(), null,
        KnownOutcome.NOT_SENT_CODE, null, KnownOutcome.NOT_SENT_REASON);
    KnownOutcome outcome = KnownOutcome.notSent(settle, message.messageIdHeader(),
        opening.key() == null ? null : opening.key().ref());
    return bounded(journal(outcome)).map(journaled -> {
      services.outcomes().handOver(outcome, journaled);
      return (Void) null;
    });
  }

  /** The ledger entry is open: now, and only now, may the body go downstream. */
  private Future<DeliveryOutcome> send(WireTransaction wire, Opened opened, Open open, Envelope envelope, MessageData message,
      Opening opening) {
    List<String> accepted = new ArrayList<>(open.recipients().size());
    for (RecipientEntry r : open.recipients()) {
      if (r.status() == RecipientStatus.PENDING) {
        accepted.add(r.address());
      }
    }
    byte[] trace = ReceivedHeader.build(envelope.submission(), services.hostname(), opened.id(), accepted,
        ZonedDateTime.now(ZoneOffset.UTC));
    int pending = open.pendingRecipients();
    if (!wire.captures()) { // a capture is no downstream transaction
      services.metrics().downstreamTransaction(wire.command(message.form()));
    }
    // Hashed while the body goes downstream; recorded only for a body that was sent whole (§1.6).
    Future<String> sent = SentDigest.of(trace, message);
    return wire.data(trace, message).compose(result -> result.accept(new WireTransaction.DataResult.Visitor<>() {
      @Override
      public Future<DeliveryOutcome> verdict(WireTransaction.DataResult.Verdict v) {
        // A capture sent nothing anywhere: no sent hash, and its positive verdict settles CAPTURED.
        return sentHash(sent, v.bodySent() && !wire.captures())
            .compose(hash -> settleReply(opened, pending, message, v.reply(), hash, wire.captures(), opening));
      }

      @Override
      public Future<DeliveryOutcome> lostBeforeDot(WireTransaction.DataResult.LostBeforeDot l) {
        return settleLost(opened, pending, message, l.reason(), opening);
      }

      @Override
      public Future<DeliveryOutcome> lostAfterDot(WireTransaction.DataResult.LostAfterDot l) {
        return sentHash(sent, true).compose(hash -> settleUnknown(opened, pending, message, l.reason(), hash, opening));
      }
    }));
  }

  /** The sent bytes' hash when the whole body left the gateway, else null. Never fails: a hash is not worth a lost fact. */
  private static Future<String> sentHash(Future<String> sent, boolean bodySent) {
    if (!bodySent) {
      return Future.succeededFuture(null);
    }
    return sent.otherwise(e -> {
      LOG.warn("hashing the sent message failed; its sent_sha256 stays empty: {}", e.toString());
      return null;
    });
  }

  private Future<DeliveryOutcome> settleReply(Opened opened, int pending, MessageData message, DownstreamReply reply,
      String sentSha256, boolean captured, Opening opening) {
    MessageStatus target = reply.positive() ? (captured ? MessageStatus.CAPTURED : MessageStatus.SENT)
        : reply.transientFailure() ? MessageStatus.FAILED_TEMP : MessageStatus.FAILED_PERM;
    Settle settle = new Settle(opened.id(), opened.version(), target, pending, reply.code(), reply.enhancedCode(),
        reply.text(), null, sentSha256);
    java.util.function.Function<Boolean, DeliveryOutcome> outcome = settled -> switch (target) {
      case SENT -> new DeliveryOutcome.Accepted(opened.id(), reply, settled);
      case CAPTURED -> new DeliveryOutcome.Accepted(opened.id(), reply, settled, true);
      case FAILED_TEMP -> new DeliveryOutcome.Deferred(opened.id(), reply, settled);
      default -> new DeliveryOutcome.Rejected(opened.id(), reply, settled);
    };
    return settle(answering(settle, opening, outcome.apply(true)), message, reply.positive() && !captured).map(outcome::apply);
  }

  private Future<DeliveryOutcome> settleLost(Opened opened, int pending, MessageData message, String reason, Opening opening) {
    Settle settle = new Settle(opened.id(), opened.version(), MessageStatus.FAILED_TEMP, pending, null, "4.4.2", null, reason);
    return settle(answering(settle, opening, new DeliveryOutcome.LostBeforeDot(opened.id(), reason, true)), message, false)
        .map(settled -> new DeliveryOutcome.LostBeforeDot(opened.id(), reason, settled));
  }

  private Future<DeliveryOutcome> settleUnknown(Opened opened, int pending, MessageData message, String reason,
      String sentSha256, Opening opening) {
    AuditLog.of(AuditEvent.DELIVERY_OUTCOME_UNKNOWN).with("message_id", opened.id())
        .with("msg_id", message.messageIdHeader()).with("reason", reason).log();
    Settle settle = new Settle(opened.id(), opened.version(), MessageStatus.UNKNOWN, pending, null, "4.4.2", null,
        "lost after the final dot: " + reason, sentSha256);
    return settle(answering(settle, opening, new DeliveryOutcome.Unknown(opened.id(), reason, true)), message, false)
        .map(settled -> new DeliveryOutcome.Unknown(opened.id(), reason, settled));
  }

  /**
   * Journals the outcome and settles the ledger at the same time: once either is durable, a crash cannot
   * lose the fact (the journal is replayed at the next start; a committed settle needs nothing more). A
   * failed settle is logged as CRITICAL and, once the journal has had its say, handed to the retry part.
   * Neither ever changes the reply (docs/contract.md §1). True when the settle committed.
   */
  private Future<Boolean> settle(Settle settle, MessageData message, boolean downstreamAccepted) {
    KnownOutcome outcome = new KnownOutcome(settle, message.messageIdHeader(), downstreamAccepted);
    Future<Boolean> journaled = journal(outcome);
    return services.ledger().settle(settle).transform(ar -> {
      if (ar.succeeded()) {
        services.outcomes().settled(settle.id());
        // The client hears back once the journal has had its say too: both ran at once, so this costs the
        // slower of the two, not their sum, and a journal failure is logged before the reply, never after.
        return bounded(journaled).map(j -> true);
      }
      Throwable e = ar.cause();
      String cause = e instanceof StoreException le ? le.kind().name() : e.getClass().getSimpleName();
      AuditLog.of(AuditEvent.DELIVERY_RESULT_PERSIST_FAILED).with("message_id", settle.id())
          .with("msg_id", message.messageIdHeader()).with("target_status", settle.target())
          .with("downstream_accepted", downstreamAccepted).with("cause", cause).with("error", e.getMessage()).log();
      return bounded(journaled).map(j -> {
        services.outcomes().handOver(outcome, j);
        services.handovers().incrementAndGet();
        return false;
      });
    });
  }

  /**
   * The journal's answer: true when the outcome is on disk, false when it is not (its settle committed
   * first, so it was not needed; or the journal failed, which is logged as CRITICAL). Never fails.
   */
  private Future<Boolean> journal(KnownOutcome outcome) {
    return services.outcomes().journal(outcome).otherwise(e -> {
      AuditLog.of(AuditEvent.OUTCOME_JOURNAL_FAILED).with("message_id", outcome.settle().id())
          .with("msg_id", outcome.messageIdHeader()).with("target_status", outcome.settle().target())
          .with("downstream_accepted", outcome.downstreamAccepted()).with("error", e.getMessage())
          .with("action", "settling without the journal").log();
      return false;
    });
  }

  /** Waiting for the journal is bounded: an fsync slower than this is a sick disk, and the fact goes on in memory. */
  private static Future<Boolean> bounded(Future<Boolean> journaled) {
    return journaled.timeout(JOURNAL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).otherwise(e -> {
      if (e instanceof java.util.concurrent.TimeoutException) {
        LOG.error("the outcome journal did not answer within {} s; going on without waiting for it", JOURNAL_TIMEOUT.toSeconds());
      }
      return false;
    });
  }
}
