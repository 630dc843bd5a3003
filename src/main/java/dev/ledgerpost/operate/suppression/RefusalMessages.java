package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.platform.observability.GatewayMetrics.RefusalSource;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/** Refused recipients (docs/design.md §8.8, data-model.md §5.23): what is recorded, and the addresses that read it. */
public final class RefusalMessages {
  public static final String LIST = "suppression.refusals.list";
  public static final String PRUNE = "suppression.refusals.prune";

  private RefusalMessages() {}

  /** Where in the transaction the recipient was refused. */
  public enum Stage { RCPT, DATA }

  /** Which intake refused it: an SMTP session, or the send API (its 422, or a recipient {@code allowPartial} left out). */
  public enum Door { SMTP, HTTP }

  /**
   * One refused recipient, as the session saw it. {@code user} is the SMTP AUTH user (null: an unauthenticated relay
   * client); {@code code} and {@code status} the reply's code and enhanced status (null when it had none);
   * {@code suppression} the entry that refused it, {@code messageId} the ledger row a DATA refusal belongs to;
   * {@code door} the intake that refused it (the send API's refusals are at {@link Stage#RCPT}: before anything is sent).
   */
  public record Refusal(OffsetDateTime at, String user, String client, String sender, String recipient, Stage stage,
      RefusalSource source, int code, String status, String reply, UUID suppression, UUID messageId, Door door) {
    /** A smarthost's 5.1.x (bad destination mailbox address, RFC 3463 §3.2): what feeds the suppression list. */
    public boolean badMailbox() {
      return source == RefusalSource.SMARTHOST && status != null && status.startsWith("5.1.");
    }
  }

  /** A recorded refusal, as the API shows it. */
  public record Recorded(UUID id, OffsetDateTime at, String node, String user, String client, String sender, String recipient,
      String stage, String source, int code, String status, String reply, UUID suppression, UUID messageId, String door) {}

  /** A page of refusals, newest first; {@code user} null: every user's (the admin token). Filters may be null. */
  public record ListQuery(String recipient, OffsetDateTime since, String user, int limit, int offset) {}

  public record Page(List<Recorded> refusals, int offset, boolean more) {}

  /** Delete up to {@code limit} refusals older than suppression.refusalRetention. */
  public record Prune(int limit) {}

  public record Pruned(int deleted) {}

  static String label(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }
}
