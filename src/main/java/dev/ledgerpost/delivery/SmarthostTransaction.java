package dev.ledgerpost.delivery;

import dev.ledgerpost.ledger.IdempotencyMessages;
import dev.ledgerpost.ledger.LedgerException;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.ledger.LedgerMessages.RecipientEntry;
import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.LedgerMessages.Settled;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.ledger.RecipientStatus;
import dev.ledgerpost.metrics.AuditLog;
import dev.ledgerpost.metrics.GatewayMetrics;
import dev.ledgerpost.retry.KnownOutcome;
import dev.ledgerpost.retry.RetryMessages;
import dev.ledgerpost.retry.RetryMessages.Journaled;
import dev.ledgerpost.retry.RetryMessages.OutcomeDone;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client transaction mirrored on a smarthost connection, and the relay contract of docs/design.md §1
 * for its DATA: open the ledger, send, settle, and turn whatever happened into an outcome.
 */
final class SmarthostTransaction implements RelayTransaction {
  private static final Logger LOG = LoggerFactory.getLogger(SmarthostTransaction.class);
  private static final Buffer FINAL_DOT = Buffer.buffer(".\r\n");
  /** An fsync that takes longer than this is a sick disk: the settle goes ahead without waiting for it. */
  private static final java.time.Duration JOURNAL_TIMEOUT = java.time.Duration.ofSeconds(10);

  private record Recipient(String address, DownstreamReply reply) {}

  private final SmarthostRelay relay;
  private final DownstreamConnection connection;
  private final Submission submission;
  private final String mailFrom;
  private final DownstreamReply mailReply;
  private final String route;
  private final List<Recipient> recipients = new ArrayList<>();
  private boolean finished;

  SmarthostTransaction(SmarthostRelay relay, DownstreamConnection connection, Submission submission, String mailFrom,
      DownstreamReply mailReply) {
    this.relay = relay;
    this.connection = connection;
    this.submission = submission;
    this.mailFrom = mailFrom;
    this.mailReply = mailReply;
    this.route = relay == null ? null : relay.route();
  }

  /** A transaction the downstream refused at MAIL: it holds no connection. */
  static RelayTransaction refused(DownstreamReply reply, String route) {
    return new RelayTransaction() {
      @Override
      public DownstreamReply mailReply() {
        return reply;
      }

      @Override
      public String route() {
        return route;
      }

      @Override
      public String routeFor(String recipient) {
        return route;
      }

      @Override
      public Future<DownstreamReply> rcpt(String recipient) {
        return Future.failedFuture(new IllegalStateException("transaction was refused at MAIL"));
      }

      @Override
      public Future<DeliveryOutcome> deliver(MessageData message) {
        return Future.failedFuture(new IllegalStateException("transaction was refused at MAIL"));
      }

      @Override
      public Future<Void> abort() {
        return Future.succeededFuture();
      }
    };
  }

  @Override
  public DownstreamReply mailReply() {
    return mailReply;
  }

  @Override
  public String route() {
    return route;
  }

  @Override
  public String routeFor(String recipient) {
    return relay.route();
  }

  @Override
  public Future<DownstreamReply> rcpt(String address) {
    return connection.command("RCPT TO:<" + address + ">", relay.config().replyTimeout()).map(reply -> {
      recipients.add(new Recipient(address, reply));
      if (reply.code() == 421) {
        connection.close(); // the downstream hangs up: the rest of this transaction fails as unavailable
      }
      return reply;
    });
  }

  @Override
  public Future<Void> abort() {
    if (finished) {
      return Future.succeededFuture();
    }
    finished = true;
    return connection.command("RSET", relay.config().replyTimeout())
        .map(r -> {
          if (r.code() == 250) {
            relay.pool().release(connection);
          } else {
            connection.close();
          }
          return (Void) null;
        })
        .otherwise(e -> {
          connection.close();
          return null;
        });
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message) {
    return deliver(message, LedgerIds.next(), null, null);
  }

  @Override
  public Future<DeliveryOutcome> deliver(MessageData message, UUID id, IdempotencyMessages.KeyRef key, Duration keyLease) {
    long started = System.nanoTime();
    return relayContract(message, id, key, keyLease)
        .onSuccess(outcome -> relay.metrics().delivery(outcome.accept(TAG), System.nanoTime() - started));
  }

  /** The metric tag of each outcome. */
  private static final DeliveryOutcome.Visitor<GatewayMetrics.Outcome> TAG = new DeliveryOutcome.Visitor<>() {
    @Override
    public GatewayMetrics.Outcome notRecorded(DeliveryOutcome.NotRecorded o) {
      return GatewayMetrics.Outcome.NOT_RECORDED;
    }

    @Override
    public GatewayMetrics.Outcome accepted(DeliveryOutcome.Accepted o) {
      return GatewayMetrics.Outcome.ACCEPTED;
    }

    @Override
    public GatewayMetrics.Outcome deferred(DeliveryOutcome.Deferred o) {
      return GatewayMetrics.Outcome.DEFERRED;
    }

    @Override
    public GatewayMetrics.Outcome rejected(DeliveryOutcome.Rejected o) {
      return GatewayMetrics.Outcome.REJECTED;
    }

    @Override
    public GatewayMetrics.Outcome lostBeforeDot(DeliveryOutcome.LostBeforeDot o) {
      return GatewayMetrics.Outcome.LOST_BEFORE_DOT;
    }

    @Override
    public GatewayMetrics.Outcome unknown(DeliveryOutcome.Unknown o) {
      return GatewayMetrics.Outcome.UNKNOWN;
    }
  };

  private Future<DeliveryOutcome> relayContract(MessageData message, UUID id, IdempotencyMessages.KeyRef key,
      Duration keyLease) {
    finished = true;
    Open open = open(id, message);
    Future<Opened> opening = key == null
        ? relay.bus().request(LedgerMessages.OPEN, open, Opened.class)
        : relay.bus().request(IdempotencyMessages.OPEN, new IdempotencyMessages.OpenKeyed(open, key, keyLease), Opened.class);
    return opening
        .transform(ar -> {
          if (ar.failed()) {
            LOG.error("ledger open failed for {} (Message-ID {}); answering 451 4.3.0, nothing sent downstream: {}",
                id, message.messageIdHeader(), ar.cause().getMessage());
            finished = false;
            return notSent(open, message, key).compose(v -> abort()).map(v -> (DeliveryOutcome) new DeliveryOutcome.NotRecorded());
          }
          return send(ar.result(), open, message);
        });
  }

  /**
   * The open failed, but its commit may have landed (PostgreSQL died during it): a PENDING row would
   * then look like a message that may have been delivered, although nothing was sent. That is a known
   * fact: journal it and hand it to the retry part, which closes the row as FAILED_TEMP 4.3.0 once the
   * ledger is back (or finds none) and releases the send's Idempotency-Key. Never fails.
   */
  private Future<Void> notSent(Open open, MessageData message, IdempotencyMessages.KeyRef key) {
    Settle settle = new Settle(open.id(), 1, MessageStatus.FAILED_TEMP, open.pendingRecipients(), null,
        KnownOutcome.NOT_SENT_CODE, null, KnownOutcome.NOT_SENT_REASON);
    KnownOutcome outcome = KnownOutcome.notSent(settle, message.messageIdHeader(), key);
    return journal(outcome).map(journaled -> {
      relay.bus().publish(KnownOutcome.ADDRESS, outcome);
      return (Void) null;
    });
  }

  private Open open(UUID id, MessageData message) {
    List<RecipientEntry> entries = new ArrayList<>();
    for (Recipient r : recipients) {
      entries.add(new RecipientEntry(r.address(), r.reply().positive() ? RecipientStatus.PENDING : RecipientStatus.REJECTED,
          r.reply().toString()));
    }
    return new Open(id, submission.intake(), submission.authUser(), submission.clientIp(), submission.helo(), mailFrom,
        message.messageIdHeader(), message.size(), message.sha256(), route, OffsetDateTime.now(ZoneOffset.UTC),
        List.copyOf(entries));
  }

  /** The ledger entry is open: now, and only now, may the body go downstream. */
  private Future<DeliveryOutcome> send(Opened opened, Open open, MessageData message) {
    return connection.command("DATA", relay.config().replyTimeout()).transform(ar -> {
      if (ar.failed()) {
        connection.close();
        return settleLost(opened, open, message, "lost before DATA was accepted: " + ar.cause().getMessage());
      }
      DownstreamReply go = ar.result();
      if (go.code() != 354) {
        // No body was sent: the downstream's verdict on DATA is the message's verdict.
        releaseAfterReset();
        return settleReply(opened, open, message, go);
      }
      List<String> accepted = open.recipients().stream()
          .filter(r -> r.status() == RecipientStatus.PENDING).map(RecipientEntry::address).toList();
      byte[] trace = ReceivedHeader.build(submission, relay.hostname(), opened.id(), accepted,
          java.time.ZonedDateTime.now(ZoneOffset.UTC));
      connection.write(Buffer.buffer(trace));
      connection.write(message.wire());
      Future<Void> dotWritten = connection.write(FINAL_DOT.copy());
      Future<DownstreamReply> verdict = connection.expect(relay.config().dataTimeout());
      return verdict.transform(vr -> {
        if (vr.succeeded()) {
          DownstreamReply reply = vr.result();
          if (reply.code() == 421) {
            connection.close();
          } else {
            relay.pool().release(connection);
          }
          return settleReply(opened, open, message, reply);
        }
        connection.close();
        // Whether the final dot left us decides between "nothing delivered" and "outcome unknown".
        return dotWritten.transform(dw -> dw.succeeded()
            ? settleUnknown(opened, open, message, vr.cause().getMessage())
            : settleLost(opened, open, message, "lost before the final dot: " + vr.cause().getMessage()));
      });
    });
  }

  private void releaseAfterReset() {
    connection.command("RSET", relay.config().replyTimeout()).onComplete(ar -> {
      if (ar.succeeded() && ar.result().code() == 250) {
        relay.pool().release(connection);
      } else {
        connection.close();
      }
    });
  }

  private Future<DeliveryOutcome> settleReply(Opened opened, Open open, MessageData message, DownstreamReply reply) {
    MessageStatus target = reply.positive() ? MessageStatus.SENT
        : reply.transientFailure() ? MessageStatus.FAILED_TEMP : MessageStatus.FAILED_PERM;
    Settle settle = new Settle(opened.id(), opened.version(), target, open.pendingRecipients(), reply.code(),
        reply.enhancedCode(), reply.text(), null);
    return settle(settle, message, reply.positive()).map(settled -> switch (target) {
      case SENT -> new DeliveryOutcome.Accepted(opened.id(), reply, settled);
      case FAILED_TEMP -> new DeliveryOutcome.Deferred(opened.id(), reply, settled);
      default -> new DeliveryOutcome.Rejected(opened.id(), reply, settled);
    });
  }

  private Future<DeliveryOutcome> settleLost(Opened opened, Open open, MessageData message, String reason) {
    Settle settle = new Settle(opened.id(), opened.version(), MessageStatus.FAILED_TEMP, open.pendingRecipients(),
        null, "4.4.2", null, reason);
    return settle(settle, message, false).map(settled -> new DeliveryOutcome.LostBeforeDot(opened.id(), reason, settled));
  }

  private Future<DeliveryOutcome> settleUnknown(Opened opened, Open open, MessageData message, String reason) {
    AuditLog.critical("delivery_outcome_unknown").with("message_id", opened.id())
        .with("msg_id", message.messageIdHeader()).with("reason", reason).log();
    Settle settle = new Settle(opened.id(), opened.version(), MessageStatus.UNKNOWN, open.pendingRecipients(),
        null, "4.4.2", null, "lost after the final dot: " + reason);
    return settle(settle, message, false).map(settled -> new DeliveryOutcome.Unknown(opened.id(), reason, settled));
  }

  /**
   * Journals the outcome, then settles; a failure is logged as CRITICAL and handed to the retry part.
   * Neither the journal nor the settle ever changes the reply (docs/design.md §1.6).
   */
  private Future<Boolean> settle(Settle settle, MessageData message, boolean downstreamAccepted) {
    KnownOutcome outcome = new KnownOutcome(settle, message.messageIdHeader(), downstreamAccepted);
    return journal(outcome).compose(journaled -> relay.bus().request(LedgerMessages.SETTLE, settle, Settled.class)
        .map(s -> {
          relay.bus().publish(RetryMessages.DONE, new OutcomeDone(settle.id(), s.version()));
          return true;
        })
        .otherwise(e -> {
          String cause = e instanceof LedgerException le ? le.kind().name() : e.getClass().getSimpleName();
          AuditLog.critical("delivery_result_persist_failed").with("message_id", settle.id())
              .with("msg_id", message.messageIdHeader()).with("target_status", settle.target())
              .with("downstream_accepted", downstreamAccepted).with("cause", cause).with("error", e.getMessage()).log();
          relay.bus().publish(KnownOutcome.ADDRESS, outcome);
          relay.handedOver();
          return false;
        }));
  }

  /**
   * Write-ahead: the retry part fsyncs the outcome to its journal before the first settle is tried, so
   * a crash from here on cannot lose it. If the journal fails (a full disk), the outcome is not given
   * up: this is logged as CRITICAL and the settle goes ahead directly, as it did before the journal.
   */
  private Future<Boolean> journal(KnownOutcome outcome) {
    return relay.bus().request(RetryMessages.JOURNAL, outcome, Journaled.class, JOURNAL_TIMEOUT)
        .map(j -> true)
        .otherwise(e -> {
          AuditLog.critical("outcome_journal_failed").with("message_id", outcome.settle().id())
              .with("msg_id", outcome.messageIdHeader()).with("target_status", outcome.settle().target())
              .with("downstream_accepted", outcome.downstreamAccepted()).with("error", e.getMessage())
              .with("action", "settling without the journal").log();
          return false;
        });
  }

}
