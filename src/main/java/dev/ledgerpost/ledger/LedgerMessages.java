package dev.ledgerpost.ledger;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** The typed messages of the ledger's event-bus addresses, and the views it answers with. */
public final class LedgerMessages {
  public static final String OPEN = "ledger.open";
  public static final String SETTLE = "ledger.settle";
  public static final String LIST = "ledger.list";
  public static final String GET = "ledger.get";
  public static final String PING = "ledger.ping";

  private LedgerMessages() {}

  /** Every record type that crosses the bus to or from the ledger; registered as local codecs. */
  public static Class<?>[] types() {
    return new Class<?>[] {
      Open.class, Opened.class, Settle.class, Settled.class, ListQuery.class, MessagePage.class,
      Get.class, MessageDetail.class, Ping.class
    };
  }

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
   * are MAIL's RFC 3461 RET and ENVID (verbatim; null when absent).
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
      String dsnEnvid) {

    public Open(UUID id, Intake intake, String authUser, String clientIp, String helo, String mailFrom,
        String messageIdHeader, long size, String sha256, String route, OffsetDateTime receivedAt,
        List<RecipientEntry> recipients) {
      this(id, intake, authUser, clientIp, helo, mailFrom, messageIdHeader, size, sha256, route, receivedAt, recipients,
          null, null);
    }

    public int pendingRecipients() {
      return (int) recipients.stream().filter(r -> r.status() == RecipientStatus.PENDING).count();
    }
  }

  public record Opened(UUID id, int version) {}

  /**
   * Settles a PENDING entry to the downstream's verdict. {@code expectedVersion} makes a late or
   * repeated settle fail instead of overwriting a newer fact. {@code sentSha256} is the hex SHA-256 of the
   * message as the smarthost was sent it (the gateway's Received: line, then the client's bytes unstuffed),
   * null when no body was sent (docs/design.md §1.6); reconciliation matches it (§8.4).
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
      String sentSha256) {

    /** A settle that records no sent bytes (nothing was sent, or tests that do not care). */
    public Settle(UUID id, int expectedVersion, MessageStatus target, int pendingRecipients, Integer replyCode,
        String enhancedCode, String replyText, String error) {
      this(id, expectedVersion, target, pendingRecipients, replyCode, enhancedCode, replyText, error, null);
    }
  }

  public record Settled(UUID id, int version, MessageStatus status) {}

  /**
   * Newest first; {@code cursor} is the opaque value of the previous page's {@code next}. Every filter is
   * optional: {@code recipient} matches any of the message's recipients, {@code until} is exclusive. {@code messageId}
   * matches the Message-ID header exactly (a reconciling upstream asks with it, docs/design.md §8.4); it has no index of
   * its own, so {@code since} should bound it.
   */
  public record ListQuery(MessageStatus status, String sender, String recipient, OffsetDateTime since, OffsetDateTime until,
      int limit, String cursor, String messageId) {}

  public record MessageSummary(
      UUID id,
      MessageStatus status,
      int version,
      Intake intake,
      String mailFrom,
      String messageIdHeader,
      long size,
      int recipients,
      OffsetDateTime receivedAt,
      OffsetDateTime settledAt) {}

  public record MessagePage(List<MessageSummary> items, String next) {}

  public record Get(UUID id) {}

  public record RecipientView(
      String address, RecipientStatus status, String rcptReply, Integer replyCode, String enhancedCode, String replyText,
      String dsnNotify, String dsnOrcpt) {}

  /**
   * What an operator's resolution recorded (docs/design.md §8.2); null on a message nobody resolved. {@code proposal} is
   * the reconcile proposal it accepted, with its evidence (§8.4), or null.
   */
  public record ResolutionView(String outcome, String operator, String note, OffsetDateTime at,
      ReconcileMessages.ProposalView proposal) {}

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
      List<ReconcileMessages.ProposalView> proposals) {}

  public record Ping() {}
}
