package dev.ledgerpost.ledger;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** The typed messages of the ledger's event-bus addresses, each address beside what it carries, and the views it answers with. */
public final class LedgerMessages {
  private LedgerMessages() {}

  /**
   * One recipient as the transaction knows it when the ledger is opened, with the RFC 3461 NOTIFY and ORCPT
   * its RCPT carried (verbatim; null when absent).
   */
  public record RecipientEntry(String address, RecipientStatus status, String rcptReply, String dsnNotify, String dsnOrcpt) {
    public RecipientEntry(String address, RecipientStatus status, String rcptReply) {
      this(address, status, rcptReply, null, null);
    }
  }

  /**
   * Opens a PENDING entry; must commit before the body may go downstream. {@code dsnRet} and {@code dsnEnvid}
   * are MAIL's RFC 3461 RET and ENVID (verbatim; null when absent); {@code tags} the message's tags and metadata
   * (docs/data-model.md §5.17; never null).
   */
  public record Open(
      UUID id,
      Intake intake,
      String authUser,
      String clientIp,
      String helo,
      String mailFrom,
      String messageIdHeader,
      long size,
      String sha256,
      String route,
      OffsetDateTime receivedAt,
      List<RecipientEntry> recipients,
      String dsnRet,
      String dsnEnvid,
      Claim claim,
      MessageTags tags,
      KeyClaim key) {

    public Open {
      tags = tags == null ? MessageTags.NONE : tags;
    }

    /** An open without an Idempotency-Key (SMTP, and HTTP sends without one). */
    public Open(UUID id, Intake intake, String authUser, String clientIp, String helo, String mailFrom,
        String messageIdHeader, long size, String sha256, String route, OffsetDateTime receivedAt,
        List<RecipientEntry> recipients, String dsnRet, String dsnEnvid, Claim claim, MessageTags tags) {
      this(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt, recipients,
          dsnRet, dsnEnvid, claim, tags, null);
    }

    /** The same open, claiming {@code key} in the statement that writes it (docs/design.md §7.2). */
    public Open keyed(KeyClaim key) {
      return new Open(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt,
          recipients, dsnRet, dsnEnvid, claim, tags, key);
    }

    public Open(UUID id, Intake intake, String authUser, String clientIp, String helo, String mailFrom,
        String messageIdHeader, long size, String sha256, String route, OffsetDateTime receivedAt,
        List<RecipientEntry> recipients, String dsnRet, String dsnEnvid, Claim claim) {
      this(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt, recipients,
          dsnRet, dsnEnvid, claim, MessageTags.NONE);
    }

    public Open(UUID id, Intake intake, String authUser, String clientIp, String helo, String mailFrom,
        String messageIdHeader, long size, String sha256, String route, OffsetDateTime receivedAt,
        List<RecipientEntry> recipients) {
      this(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt, recipients,
          null, null, null);
    }

    public Open(UUID id, Intake intake, String authUser, String clientIp, String helo, String mailFrom,
        String messageIdHeader, long size, String sha256, String route, OffsetDateTime receivedAt,
        List<RecipientEntry> recipients, String dsnRet, String dsnEnvid) {
      this(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt, recipients,
          dsnRet, dsnEnvid, null);
    }

    /** The same open, claiming its fingerprint over {@code replaces}'s (docs/contract.md §1.13). */
    public Open replacing(UUID replaces) {
      return new Open(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt,
          recipients, dsnRet, dsnEnvid, new Claim(claim.fingerprint(), claim.window(), replaces), tags, key);
    }

    public int pendingRecipients() {
      return (int) recipients.stream().filter(r -> r.status() == RecipientStatus.PENDING).count();
    }
  }

  /**
   * The resubmission fingerprint an open claims (docs/contract.md §1.13): it opens only if no other row holds the claim,
   * or the holder is {@code replaces} (null: none; an earlier row that failed, so this retry is new mail), or the
   * holder's claim is older than {@code window}.
   */
  public record Claim(UUID fingerprint, Duration window, UUID replaces) {}

  /**
   * An open's answer: the entry at {@code version}, or, when {@code earlier} is not null, nothing opened because an
   * earlier row holds the fingerprint's claim (the id is then the one this open would have had); or, when
   * {@code overQuota} is not null, nothing opened because the user's sending quota is used up (version 0).
   */
  public record Opened(UUID id, int version, Earlier earlier, OverQuota overQuota, boolean keyLost) {
    public Opened(UUID id, int version) {
      this(id, version, null, null, false);
    }

    public Opened(UUID id, int version, Earlier earlier, OverQuota overQuota) {
      this(id, version, earlier, overQuota, false);
    }

    /** Nothing opened: the open's Idempotency-Key is held by another request (docs/design.md §7.2); ask the key why. */
    public static Opened keyHeldElsewhere(UUID id) {
      return new Opened(id, 0, null, null, true);
    }

    public Opened(UUID id, int version, Earlier earlier) {
      this(id, version, earlier, null);
    }
  }

  /**
   * Nothing opened: the user's {@code quota} ({@code messagesPerHour} or {@code messagesPerDay}) of {@code limit} is
   * used up in the window that ends at {@code resetsAt} (docs/design.md §8.9 "Quotas"). The open's own count said so,
   * in the statement that would have written the row, so this holds across every node on the ledger.
   */
  public record OverQuota(String quota, long limit, java.time.Instant resetsAt) {}

  /**
   * The row that holds a fingerprint's claim, as the losing open read it: its status, and whether a live node holds it
   * (delivering it now, or its outcome kept by the retry part, or claimed so recently that the node's next heartbeat
   * has yet to list it). {@code status} is null when the claim's row is gone (dropped by retention): nothing to protect.
   */
  public record Earlier(UUID id, MessageStatus status, boolean held) {}

  /** A key as one request holds it: scoped by {@code owner} (the API key), claimed under {@code operationId}. */
  public record KeyRef(String owner, String key, UUID operationId) {}

  /**
   * The Idempotency-Key an open claims and binds in its own statement (docs/design.md §7.2): the key is written OPENED,
   * bound to the entry, leased for {@code lease}, in the commit that writes the entry, or not at all. {@code requestHash}
   * is the canonical body's; a key older than {@code retention} counts as absent.
   */
  public record KeyClaim(KeyRef ref, String requestHash, Duration lease, Duration retention) {}

  /** The answer a settle stores for its key, in the settle's own statement (COMPLETED): the response document. */
  public record KeyAnswer(KeyRef ref, String response) {}

  public static final String SETTLE = "ledger.settle";

  /**
   * Settles a PENDING entry to the downstream's verdict. {@code expectedVersion} makes a late or
   * repeated settle fail instead of overwriting a newer fact. {@code sentSha256} is the hex SHA-256 of the
   * message as the smarthost was sent it (the gateway's Received: line, then the client's bytes unstuffed),
   * null when no body was sent (docs/contract.md §1.6); reconciliation matches it (§8.4).
   */
  public record Settle(
      UUID id,
      int expectedVersion,
      MessageStatus target,
      int pendingRecipients,
      Integer replyCode,
      String enhancedCode,
      String replyText,
      String error,
      String sentSha256,
      KeyAnswer keyAnswer) {

    public Settle(UUID id, int expectedVersion, MessageStatus target, int pendingRecipients, Integer replyCode,
        String enhancedCode, String replyText, String error, String sentSha256) {
      this(id, expectedVersion, target, pendingRecipients, replyCode, enhancedCode, replyText, error, sentSha256, null);
    }

    /** The same settle, storing {@code answer} as its Idempotency-Key's answer if it commits. */
    public Settle answering(KeyAnswer answer) {
      return new Settle(id, expectedVersion, target, pendingRecipients, replyCode, enhancedCode, replyText, error, sentSha256,
          answer);
    }

    /** A settle that records no sent bytes (nothing was sent, or tests that do not care). */
    public Settle(UUID id, int expectedVersion, MessageStatus target, int pendingRecipients, Integer replyCode,
        String enhancedCode, String replyText, String error) {
      this(id, expectedVersion, target, pendingRecipients, replyCode, enhancedCode, replyText, error, null);
    }
  }

  public record Settled(UUID id, int version, MessageStatus status) {}

  /** A reply as one line, as the ledger records it: the code, the enhanced code and the text when there are. */
  public static String replyLine(int code, String enhancedCode, String text) {
    StringBuilder sb = new StringBuilder().append(code);
    if (enhancedCode != null) {
      sb.append(' ').append(enhancedCode);
    }
    if (text != null && !text.isEmpty()) {
      sb.append(' ').append(text);
    }
    return sb.toString();
  }

  public static final String LIST = "ledger.list";

  /**
   * Newest first; {@code cursor} is the opaque value of the previous page's {@code next}. Every filter is
   * optional: {@code recipient} matches any of the message's recipients, {@code until} is exclusive. {@code messageId}
   * matches the Message-ID header exactly (a reconciling upstream asks with it, docs/design.md §8.4); it has no index of
   * its own, so {@code since} should bound it.
   */
  /** {@code tag}: only messages carrying it (docs/data-model.md §5.17), null for any. */
  /**
   * {@code delivery} and {@code category}: only messages with a tracking fact of that state and/or bounce category
   * (docs/design.md §8.13); null: any.
   */
  public record ListQuery(MessageStatus status, String sender, String recipient, OffsetDateTime since, OffsetDateTime until,
      int limit, String cursor, String messageId, String tag, String delivery, String category) {
    public ListQuery(MessageStatus status, String sender, String recipient, OffsetDateTime since, OffsetDateTime until,
        int limit, String cursor, String messageId, String tag) {
      this(status, sender, recipient, since, until, limit, cursor, messageId, tag, null, null);
    }

    public ListQuery(MessageStatus status, String sender, String recipient, OffsetDateTime since, OffsetDateTime until,
        int limit, String cursor, String messageId) {
      this(status, sender, recipient, since, until, limit, cursor, messageId, null);
    }
  }

  public record MessageSummary(
      UUID id,
      MessageStatus status,
      int version,
      Intake intake,
      String mailFrom,
      String messageIdHeader,
      long size,
      int recipientCount,
      String firstRecipient,
      OffsetDateTime receivedAt,
      OffsetDateTime settledAt,
      MessageTags tags) {}

  public record MessagePage(List<MessageSummary> items, String next) {}

  public static final String GET = "ledger.get";

  public record Get(UUID id) {}

  public record RecipientView(
      String address, RecipientStatus status, String rcptReply, Integer replyCode, String enhancedCode, String replyText,
      String dsnNotify, String dsnOrcpt) {}

  /**
   * What an operator's resolution recorded (docs/design.md §8.2); null on a message nobody resolved. {@code proposalId}
   * is the reconcile proposal it accepted (§8.4; the reconcile part holds its evidence), or null.
   */
  public record ResolutionView(String outcome, String operator, String note, OffsetDateTime at, Long proposalId) {}

  public record MessageDetail(
      MessageSummary summary,
      String authUser,
      String clientIp,
      String helo,
      String sha256,
      String route,
      String node,
      String downstreamReply,
      String lastError,
      List<RecipientView> recipients,
      ResolutionView resolution,
      String dsnRet,
      String dsnEnvid,
      String sentSha256,
      UUID resubmissionOf,
      List<ResubmissionView> resubmissions) {}

  /**
   * A client's retry of this message answered without relaying it (docs/contract.md §1.13): when, from whom, what it
   * heard ({@code already_relayed}, {@code in_progress}, {@code held}) and the id its own row would have had.
   */
  public record ResubmissionView(OffsetDateTime at, String outcome, UUID attemptId, String node, String clientIp,
      String authUser, String helo) {}

  /** Deletes up to {@code batch} resubmission claims whose {@code window} (smtp.resubmission.window) ended (docs/contract.md §1.13): retention's job. */
  public static final String PRUNE_CLAIMS = "ledger.pruneClaims";

  public record PruneClaims(int batch, Duration window) {}

  public record PrunedClaims(int deleted) {}

  public static final String PING = "ledger.ping";

  public record Ping() {}
}
