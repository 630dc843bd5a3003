package dev.ledgerpost.publish.webhook;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * Event-bus messages of the webhook part (docs/design.md §6.6): what the API asks of it. Each request stands with its
 * address and its answer; the views the answers carry come last. A {@code scope} is the user of the send key that
 * asks (it reaches only the endpoints it made through the API; another's is not found), or null for the admin token
 * (every endpoint).
 */
public final class WebhookMessages {
  private WebhookMessages() {}

  /** The endpoints (configured and made through the API) with their state; the admin's. */
  public static final String LIST = "webhook.list";

  public record ListEndpoints() {}

  /** The retry schedule as configured (e.g. "5s"), each attempt's timeout, the cluster-wide concurrency. */
  public record EndpointList(List<EndpointView> endpoints, List<String> retrySchedule, String timeout, int concurrency) {}

  /**
   * Enables an endpoint again (a 410, its failures or its owner disabled it); answered by {@link Enabled}. Nothing of
   * what happened while it was disabled is sent unless a replay asks for it (but a 410's waiting deliveries).
   */
  public static final String ENABLE = "webhook.enable";

  public record Enable(String endpoint, String scope) {}

  /** The endpoint, and the published events not recorded for it while disabled (null: none). */
  public record Enabled(EndpointView endpoint, Skipped skipped) {}

  /** Events with pub_seq in ({@code since}, {@code until}] were not recorded for the endpoint: a replay brings them. */
  public record Skipped(long since, long until) {}

  /** One endpoint's deliveries, newest first. */
  public static final String DELIVERIES = "webhook.deliveries";

  /** {@code state} null: every state; {@code before} null: the newest; else ids below it. */
  public record DeliveryQuery(String endpoint, String scope, String state, int limit, Long before) {}

  /** {@code next}: the {@code before} of the following page, null on the last. */
  public record DeliveryPage(List<DeliveryView> items, Long next) {}

  /** One delivery with its attempts. */
  public static final String DELIVERY = "webhook.delivery";

  public record DeliveryGet(String endpoint, String scope, long id) {}

  public record DeliveryDetail(DeliveryView delivery, List<AttemptView> attempts) {}

  /** Makes one delivery due now with a fresh schedule; answered by its {@link DeliveryView}. */
  public static final String RETRY = "webhook.retry";

  public record Retry(String endpoint, String scope, long id) {}

  /** Delivers a range of published events again. */
  public static final String REPLAY = "webhook.replay";

  /** Events with pub_seq in ({@code since}, {@code until}]; {@code until} null: as far as the endpoint has recorded. */
  public record Replay(String endpoint, String scope, long since, Long until) {}

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

  /** The endpoints a scope manages: the admin's are every one (the configured ones marked so), a user's its own. */
  public static final String ENDPOINTS = "webhook.endpoints";

  public record EndpointsQuery(String scope) {}

  public record ManagedList(List<Managed> endpoints) {}

  /** One endpoint the scope may see; answered by its {@link Managed}. */
  public static final String ENDPOINT = "webhook.endpoint";

  public record EndpointGet(String id, String scope) {}

  /**
   * Makes an endpoint for {@code owner} (the send key's user, or the one the admin names), its URL checked against
   * the rules; answered by {@link Created}, the only answer that holds its secret.
   */
  public static final String CREATE = "webhook.create";

  /**
   * {@code tags}: only messages carrying one of them (null or empty: every message of the owner); {@code rateLimit}:
   * requests per second (0: none; null: webhooks.rateLimit).
   */
  public record Create(String owner, String url, List<String> events, List<String> tags, Integer rateLimit) {}

  /** The endpoint and its secret ({@code whsec_}), shown this once. */
  public record Created(Managed endpoint, String secret) {
    @Override
    public String toString() {
      return "Created[" + endpoint.id() + "]";
    }
  }

  /**
   * Changes an endpoint's URL (checked again), events, tags (empty: no tag filter), rate limit ({@code resetRateLimit}:
   * back to webhooks.rateLimit) or whether it is enabled; null: unchanged. Answered by {@link Changed}.
   */
  public static final String UPDATE = "webhook.update";

  public record Update(String id, String scope, String url, List<String> events, List<String> tags, Integer rateLimit,
      boolean resetRateLimit, Boolean enabled) {}

  /** The endpoint as changed; {@code skipped} when the change enabled it (null otherwise, or nothing skipped). */
  public record Changed(Managed endpoint, Skipped skipped) {}

  /** Deletes an endpoint with its deliveries; answered by {@link Removed}. */
  public static final String REMOVE = "webhook.remove";

  public record Remove(String id, String scope) {}

  public record Removed(String id) {}

  /** A new secret; the old one still signs for webhooks.rotationGrace. Answered by {@link Created}. */
  public static final String ROTATE = "webhook.rotate";

  public record Rotate(String id, String scope) {}

  /**
   * An endpoint as its manager sees it: {@code source} "api" or "config" (the configuration file's, read-only here),
   * {@code user} whose messages it takes (null: every user's), how many secrets sign now and until when the replaced
   * one still does; never a secret.
   */
  public record Managed(String id, String source, String user, String url, List<String> events, List<String> tags, int secrets,
      OffsetDateTime previousSecretUntil, boolean enabled, String disabledReason, OffsetDateTime createdAt,
      OffsetDateTime updatedAt, Health health) {}

  /**
   * An endpoint's health (docs/design.md §6.6): why it is disabled ({@code gone}, {@code failing}, {@code manual}; null
   * while enabled), its failed attempts in a row and since when, the last of them (newest first), its rate limit in
   * requests per second (0: none) and whether that is its own ({@code ownRateLimit}) or webhooks.rateLimit.
   */
  public record Health(String disabledKind, int consecutiveFailures, OffsetDateTime failingSince, List<LastError> lastErrors,
      int rateLimit, boolean ownRateLimit) {}

  /** One failed attempt as an endpoint's health keeps it. */
  public record LastError(OffsetDateTime at, long deliveryId, String eventId, Integer status, String error) {}

  /**
   * One endpoint as the API shows it: never its secrets, only how many sign. {@code recordedThrough}: every
   * published event up to this pub_seq has its delivery row (when it matched the filter).
   */
  public record EndpointView(String name, String url, List<String> events, List<String> tags, String user, int secrets, boolean enabled,
      OffsetDateTime disabledAt, String disabledReason, long recordedThrough, long pending, long attempted, long failed,
      long inFlight, OffsetDateTime oldestOpenAt, Health health) {}

  /** One delivery of one event to one endpoint; {@code eventId} is its webhook-id. */
  public record DeliveryView(long id, String endpoint, String eventId, long pubSeq, String type, UUID messageId, String state,
      int attempts, boolean inFlight, OffsetDateTime nextAttemptAt, OffsetDateTime lastAttemptAt, Integer lastStatus,
      String lastError, OffsetDateTime deliveredAt, OffsetDateTime createdAt) {}

  /** One attempt: its number, the node that made it, when, the HTTP status or the error, how long it took. */
  public record AttemptView(int n, String node, OffsetDateTime at, Integer status, String error, Double latencyMs) {}
}
