package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.idempotency.IdempotencyMessages;

import dev.ledgerpost.intake.http.SendEnd.Delivered;
import dev.ledgerpost.intake.http.SendEnd.RecipientsRefused;
import dev.ledgerpost.intake.http.SendEnd.SenderRefused;
import dev.ledgerpost.intake.http.SendEnd.Unavailable;
import dev.ledgerpost.intake.http.SendEnd.Verdict;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claimed;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.platform.tenants.FaultRule;
import dev.ledgerpost.platform.tenants.TenantPolicy;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The send API's reply table: the single place that decides what an HTTP client hears, the HTTP
 * counterpart of {@code smtp.Replies} for docs/contract.md §1.10, and what becomes of the request's Idempotency-Key.
 *
 * <pre>
 * what happened                                   status             body status / problem     key
 * downstream accepted, ledger settled             200                SENT                      stored
 * captured (no downstream), ledger settled        200                CAPTURED                  stored
 * downstream accepted, settle failed              202                ACCEPTED (do not resend)  stored
 * reply lost after the final dot                  202                UNKNOWN  (do not resend)  stored
 * downstream 5xx on DATA                          422                problem + its reply       stored
 * downstream 4xx on DATA                          503 + Retry-After  problem + its reply       released
 * connection lost before the final dot            503 + Retry-After  problem (4.4.2)           released
 * ledger could not be opened (451 4.3.0)          503 + Retry-After  problem (4.3.0)           released
 * downstream unreachable at MAIL/RCPT             503 + Retry-After  problem (4.4.1)           released
 * downstream refused MAIL or a RCPT               422 (any 5xx) / 503 + Retry-After (all 4xx) released
 * a captured user's fault rule replied (§8.11)    422 (5yz) / 503 + Retry-After: 1 (4yz)      never claimed
 *
 * a request with the same key is in flight        409 + Retry-After  problem + leaseExpiresAt   (the holder's)
 *   held by a request running in this process       Retry-After: 1 (it ends within its downstream timeouts)
 *   held, and no other process uses this ledger     Retry-After: the lease's remaining seconds (its holder died
 *     (the embedded one, locked to this gateway)      with an earlier process; nothing answers before the lease ends)
 *   held elsewhere (an external ledger: another     Retry-After: the lease's remaining seconds, at most 5 (a
 *     gateway, or one that died)                      live holder ends soon, a dead one at leaseExpiresAt)
 * </pre>
 *
 * Released means the key is free again: nothing was delivered, so the client retries with the same key.
 * A 409 asks the client to send the same request with the same key again after Retry-After, and again
 * while it hears 409: never with a new key, which would send a second message. leaseExpiresAt is when the
 * key stops answering 409 whatever became of its holder (a live holder renews the lease once, when it
 * opens the ledger): then the stored answer, one rebuilt from the ledger, or a new send if nothing was sent.
 * Every answer carries the operation id and a Location of its operation status; for an answer from
 * before the ledger was opened that operation answers 404: nothing was recorded, nothing was sent.
 */
final class SendAnswers {
  static final String OPERATIONS = "/api/v1/operations/";
  static final String JSON = "application/json";
  static final String PROBLEM = "application/problem+json";
  /** A lock or an outage of the ledger clears in seconds; a downstream's 4xx rarely does. */
  static final int RETRY_LEDGER = 5;
  static final int RETRY_DOWNSTREAM = 60;
  static final int RETRY_IN_FLIGHT = 1;
  /** An injected 4yz (§8.11): short, so that a test of the client's retry loop runs in seconds. */
  static final int RETRY_INJECTED = 1;
  /** A holder on another gateway is likely to end soon; one that died ends only with its lease. */
  static final int RETRY_IN_FLIGHT_ELSEWHERE = 5;

  /** Who holds an Idempotency-Key that answers 409, as far as this process can tell. */
  enum KeyHolder {
    /** A request running in this process. */
    HERE,
    /** Nobody alive: not this process, and no other process uses this ledger. */
    GONE,
    /** Not this process: another gateway on the same ledger, or one that died. */
    ELSEWHERE
  }

  enum KeyFate { STORE, RELEASE, LEAVE }

  record Decided(SendAnswer answer, KeyFate fate) {}

  private SendAnswers() {}

  /**
   * The answer with one more member in its JSON body (an allowPartial send's suppressed recipients), so that it is also
   * what an Idempotency-Key stores and replays; unchanged when {@code value} is empty.
   */
  static Decided noting(Decided d, String member, io.vertx.core.json.JsonArray value) {
    if (value == null || value.isEmpty()) {
      return d;
    }
    SendAnswer a = d.answer();
    return new Decided(new SendAnswer(a.status(), a.headers(), new JsonObject(a.body()).put(member, value).encode()), d.fate());
  }

  static Decided forEnd(SendEnd end, UUID op, String messageId) {
    return end.accept(new SendEnd.Visitor<Decided>() {
      @Override
      public Decided delivered(Delivered d) {
        return forOutcome(d.outcome(), op, messageId);
      }

      @Override
      public Decided unavailable(Unavailable u) {
        return new Decided(problem(503, "Service Unavailable", "downstream server unavailable (4.4.1): nothing was "
            + "recorded or sent; retry later with the same Idempotency-Key", op, RETRY_DOWNSTREAM, null), KeyFate.RELEASE);
      }

      @Override
      public Decided senderRefused(SenderRefused s) {
        boolean permanent = s.reply().permanentFailure();
        JsonObject extra = new JsonObject().put("downstreamReply", s.reply().toString());
        return new Decided(permanent
            ? problem(422, "Unprocessable Content", "the downstream refused the sender: nothing was sent", op, null, extra)
            : problem(503, "Service Unavailable", "the downstream deferred the sender: nothing was sent; retry later", op,
                RETRY_DOWNSTREAM, extra), KeyFate.RELEASE);
      }

      @Override
      public Decided recipientsRefused(RecipientsRefused r) {
        return new Decided(SendAnswers.recipientsRefused(r, op), KeyFate.RELEASE);
      }

      @Override
      public Decided broken(SendEnd.Broken b) {
        // deliver() failed, which its contract rules out; what happened downstream is not known here.
        return new Decided(problem(500, "Internal Server Error", "the send failed in an unexpected way (see the gateway "
            + "log); query the operation before resending", op, null, null), KeyFate.LEAVE);
      }
    });
  }

  /** docs/contract.md §1.10's table for what happened once the ledger was (or could not be) opened. */
  static Decided forOutcome(DeliveryOutcome outcome, UUID op, String messageId) {
    return outcome.accept(new DeliveryOutcome.Visitor<Decided>() {
      @Override
      public Decided notRecorded(DeliveryOutcome.NotRecorded o) {
        return new Decided(problem(503, "Service Unavailable", "temporary local persistence failure (4.3.0): the message "
            + "was not recorded and not sent; retry with the same Idempotency-Key", op, RETRY_LEDGER, null), KeyFate.RELEASE);
      }

      @Override
      public Decided accepted(DeliveryOutcome.Accepted a) {
        // The downstream has it: even when the settle failed, anything but success would cause a resend.
        return new Decided(a.settled()
            ? success(200, a.captured() ? "CAPTURED" : "SENT", op, messageId, a.reply().toString(), true, null)
            : success(202, "ACCEPTED", op, messageId, a.reply().toString(), false, "the downstream accepted the message; "
                + "the ledger records it later. Do not resend."), KeyFate.STORE);
      }

      @Override
      public Decided deferred(DeliveryOutcome.Deferred d) {
        return new Decided(problem(503, "Service Unavailable", "the downstream deferred the message: nothing was delivered; "
            + "retry later with the same Idempotency-Key", op, RETRY_DOWNSTREAM, replyOf(d.reply())), KeyFate.RELEASE);
      }

      @Override
      public Decided rejected(DeliveryOutcome.Rejected r) {
        return new Decided(problem(422, "Unprocessable Content", "the downstream rejected the message", op, null,
            replyOf(r.reply())), KeyFate.STORE);
      }

      @Override
      public Decided lostBeforeDot(DeliveryOutcome.LostBeforeDot o) {
        return new Decided(problem(503, "Service Unavailable", "the downstream connection was lost before the message was "
            + "complete (4.4.2): nothing was delivered; retry later with the same Idempotency-Key", op, RETRY_DOWNSTREAM,
            null), KeyFate.RELEASE);
      }

      @Override
      public Decided unknown(DeliveryOutcome.Unknown u) {
        return new Decided(success(202, "UNKNOWN", op, messageId, null, u.settled(), "the downstream's reply was lost after "
            + "the message was sent: it may have been delivered. Do not resend; the operation shows what becomes known."),
            KeyFate.STORE);
      }

      @Override
      public Decided overQuota(DeliveryOutcome.OverQuota o) {
        // Nothing recorded, nothing sent: the key is free for the same request once the window resets.
        return new Decided(SendAnswers.overQuota(op, o.user(), o.quota(), Instant.now()), KeyFate.RELEASE);
      }

      @Override
      public Decided resubmitted(DeliveryOutcome.Resubmitted r) {
        // The send API never claims a fingerprint (its Idempotency-Key does that job), so no send ends here.
        throw new IllegalStateException("a send was answered as an SMTP resubmission of " + r.earlierId());
      }

      @Override
      public Decided keyHeld(DeliveryOutcome.KeyHeld k) {
        // SendApi answers these from the key itself (IdempotencyStore's decision), before it asks this table.
        throw new IllegalStateException("a send whose key another request holds reached the outcome table: " + k.attemptId());
      }
    });
  }

  /**
   * The user's hourly or daily quota is used up (docs/design.md §8.9 "Quotas"): {@code 429} with Retry-After the
   * seconds until its window resets, and the quota named in the problem ({@code quota}, {@code limit}, {@code resetsAt}).
   * {@code op} null: refused before a request body was read, by this node's copy of the counters.
   */
  static SendAnswer overQuota(UUID op, String user, LedgerMessages.OverQuota q, Instant now) {
    long wait = Math.max(1, (Duration.between(now, q.resetsAt()).toMillis() + 999) / 1000);
    return problem(429, "Too Many Requests", "quota " + q.quota() + " of " + q.limit() + " used up for " + user
        + "; nothing was recorded or sent; retry after " + q.resetsAt().truncatedTo(ChronoUnit.SECONDS), op,
        (int) Math.min(Integer.MAX_VALUE, wait), new JsonObject().put("quota", q.quota()).put("limit", q.limit())
        .put("resetsAt", q.resetsAt().truncatedTo(ChronoUnit.SECONDS).toString()));
  }

  /**
   * A message beyond the user's recipientsPerMessage ({@code 422}) or messageSize ({@code 413}) quota, before anything
   * is claimed or sent: permanent for this request. Null when within both.
   */
  static SendAnswer overLimits(PreparedSend p, String user, TenantPolicy policy) {
    if (policy.recipientsPerMessage() > 0 && p.recipients().size() > policy.recipientsPerMessage()) {
      return problem(422, "Unprocessable Content", p.recipients().size() + " recipients: quota recipientsPerMessage of "
          + policy.recipientsPerMessage() + " for " + user + "; nothing was sent", null, null,
          new JsonObject().put("quota", "recipientsPerMessage").put("limit", policy.recipientsPerMessage()));
    }
    if (policy.messageSize() > 0 && p.message().size() > policy.messageSize()) {
      return problem(413, "Content Too Large", "message of " + p.message().size() + " octets: quota messageSize of "
          + policy.messageSize() + " for " + user + "; nothing was sent", null, null,
          new JsonObject().put("quota", "messageSize").put("limit", policy.messageSize()));
    }
    return null;
  }

  /** A 4xx and a 5xx among the verdicts: 5xx wins, a resend of the same request would be refused again. */
  private static SendAnswer recipientsRefused(RecipientsRefused r, UUID op) {
    JsonArray list = new JsonArray();
    boolean permanent = false;
    int refused = 0;
    for (Verdict v : r.verdicts()) {
      boolean ok = v.reply().positive();
      refused += ok ? 0 : 1;
      permanent |= v.reply().permanentFailure();
      // The RCPT verdict, named as everywhere else: nothing was sent, so no recipient has a final reply.
      list.add(new JsonObject().put("address", v.address()).put("accepted", ok).put("rcptReply", v.reply().toString()));
    }
    String detail = "the downstream refused " + refused + " of " + r.verdicts().size()
        + " recipient(s): nothing was sent; correct the recipients and send again";
    JsonObject extra = new JsonObject().put("recipients", list);
    return permanent
        ? problem(422, "Unprocessable Content", detail, op, null, extra)
        : problem(503, "Service Unavailable", detail, op, RETRY_DOWNSTREAM, extra);
  }

  /** {@code leaseLeft}: how long the holder's lease still runs; {@code now}: this answer's time. */
  static SendAnswer inFlight(UUID op, KeyHolder holder, Duration leaseLeft, Instant now) {
    long lease = Math.max(1, (leaseLeft.toMillis() + 999) / 1000);
    int retryAfter = switch (holder) {
      case HERE -> RETRY_IN_FLIGHT;
      case GONE -> (int) Math.min(Integer.MAX_VALUE, lease);
      case ELSEWHERE -> (int) Math.min(RETRY_IN_FLIGHT_ELSEWHERE, lease);
    };
    String detail = switch (holder) {
      case HERE -> "a request with this Idempotency-Key is still in flight; retry the same request with the same key "
          + "after Retry-After to get its answer";
      case GONE -> "the request holding this Idempotency-Key was cut off by a stop of the gateway before it answered; the "
          + "key is held until leaseExpiresAt, then the same request with the same key gets the answer (rebuilt from the "
          + "ledger, or a send if nothing was sent)";
      case ELSEWHERE -> "a request with this Idempotency-Key is in flight on another gateway, or was cut off by a stop; "
          + "retry the same request with the same key after Retry-After; from leaseExpiresAt on the key answers in any case";
    };
    Instant expires = now.plus(leaseLeft);
    expires = expires.getNano() == 0 ? expires : expires.truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
    JsonObject extra = new JsonObject().put("leaseExpiresAt", expires.toString());
    return problem(409, "Conflict", detail, op, retryAfter, extra);
  }

  /**
   * A captured user's fault rule fired with a reply (docs/design.md §8.11), before the key was claimed: nothing was
   * claimed, recorded or sent. Its 5yz is a 422 and its 4yz a 503, as the downstream's verdicts are; Retry-After is 1 s,
   * not the downstream's 60, so that a test of the client's retries runs in seconds. {@code injectedFault} names the
   * rule's stage and its reply, so that nobody takes it for the smarthost's.
   */
  static SendAnswer injected(FaultRule rule, UUID op) {
    JsonObject extra = new JsonObject().put("injectedFault", new JsonObject().put("at", rule.at().name())
        .put("reply", rule.replyLine()));
    String detail = "fault injected by the gateway (a tenants file rule at " + rule.at() + " for this captured user): "
        + rule.replyLine() + "; nothing was sent";
    return rule.code() >= 500
        ? problem(422, "Unprocessable Content", detail, op, null, extra)
        : problem(503, "Service Unavailable", detail, op, RETRY_INJECTED, extra);
  }

  static SendAnswer keyReused(UUID op) {
    return problem(422, "Unprocessable Content", "this Idempotency-Key was used for a different request body; use a new "
        + "key for a new message", op, null, null);
  }

  static SendAnswer keyUnavailable(UUID op) {
    return problem(503, "Service Unavailable", "temporary local persistence failure (4.3.0): the Idempotency-Key could "
        + "not be recorded, nothing was sent; retry with the same key", op, RETRY_LEDGER, null);
  }

  static SendAnswer shuttingDown() {
    return problem(503, "Service Unavailable", "the gateway is shutting down: nothing was sent", null, RETRY_LEDGER, null);
  }

  /**
   * The answer for a key bound to a ledger entry whose answer was never stored (the gateway stopped, or
   * storing it failed): what the ledger knows now, never a resend.
   */
  static SendAnswer derived(Claimed c) {
    UUID op = c.operationId();
    MessageStatus status = c.messageStatus();
    if (status == MessageStatus.SENT || status == MessageStatus.RESOLVED_DELIVERED) {
      return success(200, "SENT", op, c.messageIdHeader(), c.downstreamReply(), true, null);
    }
    if (status == MessageStatus.CAPTURED) {
      return success(200, "CAPTURED", op, c.messageIdHeader(), c.downstreamReply(), true, null);
    }
    if (status == MessageStatus.FAILED_PERM) {
      JsonObject extra = new JsonObject().put("downstreamReply", c.downstreamReply());
      return problem(422, "Unprocessable Content", "the downstream rejected the message", op, null, extra);
    }
    return success(202, status.name(), op, c.messageIdHeader(), c.downstreamReply(), status != MessageStatus.PENDING,
        "the answer to the first request with this key was not kept; this is what the ledger knows now. Do not resend; "
            + "the operation shows what becomes known.");
  }

  private static JsonObject replyOf(DownstreamReply reply) {
    return new JsonObject().put("downstreamReply", reply.toString());
  }

  private static SendAnswer success(int status, String what, UUID op, String messageId, String reply, boolean settled,
      String detail) {
    JsonObject body = new JsonObject()
        .put("operationId", op.toString())
        .put("status", what)
        .put("messageId", messageId)
        .put("downstreamReply", reply)
        .put("ledger", new JsonObject().put("settled", settled));
    if (detail != null) {
      body.put("detail", detail);
    }
    return SendAnswer.of(status, body, JSON, location(op, null));
  }

  /** RFC 9457 problem details, with the operation id and the downstream's reply as extension members. */
  static SendAnswer problem(int status, String title, String detail, UUID op, Integer retryAfter, JsonObject extra) {
    JsonObject body = new JsonObject()
        .put("type", "about:blank")
        .put("title", title)
        .put("status", status)
        .put("detail", detail)
        .put("instance", "/api/v1/messages");
    if (op != null) {
      body.put("operationId", op.toString());
    }
    if (extra != null) {
      extra.forEach(e -> body.put(e.getKey(), e.getValue()));
    }
    return SendAnswer.of(status, body, PROBLEM, location(op, retryAfter));
  }

  private static Map<String, String> location(UUID op, Integer retryAfter) {
    Map<String, String> h = new LinkedHashMap<>();
    if (op != null) {
      h.put("Location", OPERATIONS + op);
    }
    if (retryAfter != null) {
      h.put("Retry-After", String.valueOf(retryAfter));
    }
    return h;
  }
}
