package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.operate.suppression.RefusalMessages;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.operate.suppression.Suppressions;
import dev.ledgerpost.operate.tracking.ReturnedDsns;
import dev.ledgerpost.operate.tracking.TrackingMessages;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.platform.observability.GatewayMetrics.RefusalSource;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import dev.ledgerpost.relay.capture.Capture;
import dev.ledgerpost.relay.smarthost.DownstreamSlots;
import dev.ledgerpost.relay.smarthost.DownstreamUnavailable;
import io.vertx.core.Future;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One mail transaction of a session, from MAIL to the end of its body: the relay's transaction, what MAIL
 * declared, the recipients so far, and what the relay's answers mean to the client ({@link Replies}). Which
 * command may come when is the session's to decide; this class only talks to the relay.
 */
final class MailTransaction {
  /** The session's logger: its lines are the session's, under the name operators filter and tests capture. */
  private static final Logger LOG = LoggerFactory.getLogger(SmtpSession.class);

  private final RelayTransaction relay;
  private final EsmtpParameters.Mail declared;
  /** What a refused recipient's record names (docs/design.md §8.8): who sent, from where, and where it goes. */
  private final Witness witness;
  private int recipients;
  /** The recipients the smarthost accepted: each gets a refusal record if it refuses the whole message at DATA. */
  private final List<String> accepted = new ArrayList<>();

  /** Where a message with the empty envelope sender goes once the smarthost took it: it may be a returned DSN. */
  private final ReturnedDsns dsns;

  private MailTransaction(RelayTransaction relay, EsmtpParameters.Mail declared, Witness witness, ReturnedDsns dsns) {
    this.relay = relay;
    this.declared = declared;
    this.witness = witness;
    this.dsns = dsns;
  }

  /**
   * The transaction's sender, user and client, and where its refused recipients are handed
   * ({@link Suppressions#refusals()}): queued there, written off this event loop, never waited for.
   */
  record Witness(Suppressions list, String user, String client, String sender) {
    void refused(String to, RefusalMessages.Stage stage, RefusalSource source, int code, String status, Reply reply,
        UUID suppression, UUID messageId) {
      list.refusals().refused(new RefusalMessages.Refusal(OffsetDateTime.now(list.clock()), user, client, sender, to, stage,
          source, code, status, line(reply), suppression, messageId, RefusalMessages.Door.SMTP));
    }

    /** The reply as one line (a multi-line reply's lines joined by a space): what the record and the API show. */
    private static String line(Reply r) {
      return r.code() + (r.enhanced() == null ? "" : " " + r.enhanced()) + " " + String.join(" ", r.lines());
    }
  }

  /** MAIL's answer: the transaction begun downstream (and {@code refusal} null), or the reply that refuses it. */
  record Begun(MailTransaction transaction, Reply refusal) {}

  /** MAIL FROM, downstream. A transaction the smarthost refused holds no connection: nothing to release. */
  static Future<Begun> begin(Relay relay, Submission submission, String from, EsmtpParameters.Mail p, String clientIp,
      Suppressions list, ReturnedDsns dsns) {
    Witness witness = new Witness(list, submission.authUser(), clientIp, from);
    return relay.begin(submission, from,
            new Relay.MailParameters(p.declaredSize(), p.eightBit(), p.smtpUtf8(), p.binaryMime(), p.ret(), p.envid()))
        .map(t -> t.mailReply().positive()
            ? new Begun(new MailTransaction(t, p, witness, dsns), null)
            : new Begun(null, Replies.mirror(t.mailReply(), "1.0")))
        .recover(e -> {
          if (e instanceof DownstreamSlots.Exhausted) {
            return Future.succeededFuture(new Begun(null, Replies.DOWNSTREAM_BUSY));
          }
          if (!(e instanceof DownstreamUnavailable)) {
            LOG.error("MAIL from {} failed", clientIp, e);
          }
          return Future.succeededFuture(new Begun(null, Replies.DOWNSTREAM_UNAVAILABLE));
        });
  }

  /** MAIL's SIZE=, if any: the body's buffer starts that large instead of growing to it. */
  long declaredSize() {
    return declared.declaredSize();
  }

  boolean smtpUtf8() {
    return declared.smtpUtf8();
  }

  boolean binaryMime() {
    return declared.binaryMime();
  }

  RelayTransaction relay() {
    return relay;
  }

  /** A recipient refused before it goes downstream (too many, or another route); null when it may go. */
  /** RCPTs given so far (those refused here included), for the user's recipientsPerMessage quota. */
  int recipients() {
    return recipients;
  }

  Reply refusal(String to, int maxRecipients) {
    if (recipients >= maxRecipients) {
      return Replies.TOO_MANY_RECIPIENTS;
    }
    return relay.route().equals(relay.routeFor(to)) ? null : Replies.OTHER_ROUTE;
  }

  /**
   * A recipient refused here and never asked downstream (the suppression list): it counts as given, so that DATA after
   * only such recipients hears 554 "No valid recipients", not 503 "Send RCPT TO first".
   */
  void refusedHere() {
    recipients++;
  }

  /** A recipient the suppression list refused: it counts as given ({@link #refusedHere()}) and is recorded. */
  void suppressed(String to, SuppressionMessages.Entry entry, Reply reply) {
    refusedHere();
    witness.refused(to, RefusalMessages.Stage.RCPT, RefusalSource.SUPPRESSED, reply.code(), reply.enhanced(), reply,
        entry.id(), null);
  }

  /** RCPT TO, downstream: its verdict mirrored. Fails when the downstream could not be asked. */
  Future<Reply> rcpt(String to, RelayTransaction.RcptParameters parameters) {
    recipients++;
    return relay.rcpt(to, parameters).map(verdict -> {
      Reply mirrored = Replies.mirror(verdict, verdict.positive() ? "1.5" : "1.0");
      if (verdict.positive()) {
        accepted.add(to);
      } else { // the smarthost's own refusal, as the client hears it
        witness.refused(to, RefusalMessages.Stage.RCPT, RefusalSource.SMARTHOST, verdict.code(), verdict.enhancedCode(),
            mirrored, null, null);
      }
      return mirrored;
    });
  }

  /** Why no body may come yet (no recipient given, or none accepted); null once one was accepted. */
  Reply recipientsMissing() {
    if (!accepted.isEmpty()) {
      return null;
    }
    return recipients == 0 ? Replies.NEED_RCPT : Replies.NO_VALID_RECIPIENTS;
  }

  /** The body is complete (DATA's dot, BDAT LAST): refused (the downstream is reset), or delivered. */
  Future<Reply> finish(Reply refusal, Supplier<MessageData> body, UnknownOutcomeReply unknown, String clientIp) {
    if (refusal != null) {
      relay.abort();
      return Future.succeededFuture(refusal);
    }
    MessageData message = body.get();
    boolean stuffed = message.form() == MessageData.Form.DOT_STUFFED;
    // RFC 3464 §2 and RFC 5321 §4.5.5: a DSN has the empty sender. Tracking says first whether it goes on at all
    // (docs/design.md §8.13, "Returned DSNs"); any other message, or no answer in time, is relayed as before.
    // A captured user's transaction is kept whatever it is (design.md §8.10): tracking is not asked, nor handed it.
    boolean returned = witness.sender().isEmpty() && !Capture.ROUTE.equals(relay.route());
    Future<TrackingMessages.Verdict> verdict = returned ? dsns.verdict(message.wire(), stuffed)
        : Future.succeededFuture(TrackingMessages.Verdict.RELAY);
    return verdict
        .compose(v -> (v.keeps() ? relay.keep(message, kept(v)) : relay.deliver(message)).map(outcome -> {
          Reply reply = Replies.forOutcome(outcome, unknown);
          if (returned && outcome instanceof DeliveryOutcome.Accepted a && a.captured()) { // kept, as tracking said
            reply = Replies.dsnKept(a.ledgerId(), v.reason());
            dsns.returned(a.ledgerId(), message.wire(), stuffed, false, v);
          } else if (returned && outcome instanceof DeliveryOutcome.Accepted a) {
            // Handed to tracking after the outcome is known, never waited for: the client's reply and the row's record
            // are what they would have been.
            dsns.returned(a.ledgerId(), message.wire(), stuffed, true, v);
          } else if (returned && !v.keeps() && (outcome instanceof DeliveryOutcome.Rejected || outcome instanceof DeliveryOutcome.Deferred
              || outcome instanceof DeliveryOutcome.LostBeforeDot || outcome instanceof DeliveryOutcome.NotRecorded
              || outcome instanceof DeliveryOutcome.OverQuota)) {
            dsns.unrelayed(v); // surely not relayed: the reporting MTA's retry is not a loop
          }
          if (outcome instanceof DeliveryOutcome.Rejected r) { // the whole message refused: a fact for each recipient
            for (String to : accepted) {
              witness.refused(to, RefusalMessages.Stage.DATA, RefusalSource.SMARTHOST, r.reply().code(),
                  r.reply().enhancedCode(), reply, null, r.ledgerId());
            }
          }
          return reply;
        }))
        .recover(e -> {
          // deliver() maps every end to an outcome; reaching here is a bug, and the safe answer is 451.
          LOG.error("delivery for {} failed unexpectedly", clientIp, e);
          return Future.succeededFuture(Replies.LOCAL_ERROR);
        });
  }

  /** What the ledger row of a DSN tracking kept says as its reply (its downstream_reply): why it was not relayed. */
  private static DownstreamReply kept(TrackingMessages.Verdict v) {
    return new DownstreamReply(250, "2.0.0", (v.action() == TrackingMessages.Action.LOOPED
        ? "DSN kept by tracking, not relayed again: " : "DSN kept by tracking, not relayed: ") + v.reason());
  }

  /** Resets the transaction downstream and releases its connection. */
  void abort() {
    relay.abort();
  }
}
