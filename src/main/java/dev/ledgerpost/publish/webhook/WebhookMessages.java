package dev.ledgerpost.publish.webhook;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * Event-bus messages of the webhook part (docs/design.md §6.6): what the API asks of it. Each request stands with its
 * address and its answer; the views the answers carry come last.
 */
public final class WebhookMessages {
  private WebhookMessages() {}

  /** The configured endpoints with their state. */
  public static final String LIST = "webhook.list";

  public record ListEndpoints() {}

  /** The retry schedule as configured (e.g. "5s"), each attempt's timeout, the cluster-wide concurrency. */
  public record EndpointList(List<EndpointView> endpoints, List<String> retrySchedule, String timeout, int concurrency) {}

  /** Re-enables an endpoint a 410 disabled; answered by its {@link EndpointView}. */
  public static final String ENABLE = "webhook.enable";

  public record Enable(String endpoint) {}

  /** One endpoint's deliveries, newest first. */
  public static final String DELIVERIES = "webhook.deliveries";

  /** {@code state} null: every state; {@code before} null: the newest; else ids below it. */
  public record DeliveryQuery(String endpoint, String state, int limit, Long before) {}

  /** {@code next}: the {@code before} of the following page, null on the last. */
  public record DeliveryPage(List<DeliveryView> items, Long next) {}

  /** One delivery with its attempts. */
  public static final String DELIVERY = "webhook.delivery";

  public record DeliveryGet(String endpoint, long id) {}

  public record DeliveryDetail(DeliveryView delivery, List<AttemptView> attempts) {}

  /** Makes one delivery due now with a fresh schedule; answered by its {@link DeliveryView}. */
  public static final String RETRY = "webhook.retry";

  public record Retry(String endpoint, long id) {}

  /** Delivers a range of published events again. */
  public static final String REPLAY = "webhook.replay";

  /** Events with pub_seq in ({@code since}, {@code until}]; {@code until} null: as far as the endpoint has recorded. */
  public record Replay(String endpoint, long since, Long until) {}

  /** {@code recorded}: events that had no delivery row yet; {@code rearmed}: deliveries made due again. */
  public record Replayed(String endpoint, long since, long until, int recorded, int rearmed) {}

  /** Every endpoint's deliveries of one message, for the operation status. */
  public static final String FOR_MESSAGE = "webhook.message";

  public record ForMessage(UUID messageId) {}

  public record MessageDeliveries(List<DeliveryView> deliveries) {}

  /** Deletes up to {@code batch} deliveries that ended (DELIVERED, FAILED) longer than {@code retention} ago. */
  public static final String PRUNE = "webhook.prune";

  public record Prune(Duration retention, int batch) {}

  public record Pruned(int deleted) {}

  /**
   * One endpoint as the API shows it: never its secrets, only how many sign. {@code recordedThrough}: every
   * published event up to this pub_seq has its delivery row (when it matched the filter).
   */
  public record EndpointView(String name, String url, List<String> events, String user, int secrets, boolean enabled,
      OffsetDateTime disabledAt, String disabledReason, long recordedThrough, long pending, long attempted, long failed,
      long inFlight, OffsetDateTime oldestOpenAt) {}

  /** One delivery of one event to one endpoint; {@code eventId} is its webhook-id. */
  public record DeliveryView(long id, String endpoint, String eventId, long pubSeq, String type, UUID messageId, String state,
      int attempts, boolean inFlight, OffsetDateTime nextAttemptAt, OffsetDateTime lastAttemptAt, Integer lastStatus,
      String lastError, OffsetDateTime deliveredAt, OffsetDateTime createdAt) {}

  /** One attempt: its number, the node that made it, when, the HTTP status or the error, how long it took. */
  public record AttemptView(int n, String node, OffsetDateTime at, Integer status, String error, Double latencyMs) {}
}
