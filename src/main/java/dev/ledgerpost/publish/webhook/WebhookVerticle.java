package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Reloadable;
import dev.ledgerpost.platform.auth.WebhookSecrets;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.publish.outbox.OutboxMessages;
import dev.ledgerpost.platform.observability.ThrottledWarning;
import dev.ledgerpost.publish.outbox.OutboxVerticle;
import dev.ledgerpost.publish.outbox.PacedPass;
import dev.ledgerpost.publish.webhook.WebhookMessages.DeliveryDetail;
import dev.ledgerpost.publish.webhook.WebhookMessages.DeliveryPage;
import dev.ledgerpost.publish.webhook.WebhookMessages.DeliveryView;
import dev.ledgerpost.publish.webhook.WebhookMessages.EndpointList;
import dev.ledgerpost.publish.webhook.WebhookMessages.EndpointView;
import dev.ledgerpost.publish.webhook.WebhookMessages.MessageDeliveries;
import dev.ledgerpost.publish.webhook.WebhookMessages.Replayed;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Webhooks (docs/design.md §6.6): a second consumer of the published outbox events, on its own verticle, its own
 * database pool (on a node with endpoints) and one HTTP client per endpoint, so that nothing it waits for reaches SMTP
 * intake, the send API or the ledger's writer. Every node runs it; they share the work through PostgreSQL only:
 *
 * <ul>
 *   <li>recording: for each endpoint, the deliveries of the events after its cursor, one transaction per batch
 *       that locks the cursor row with SKIP LOCKED (one node records at a time, the others skip);
 *   <li>delivering: each node claims due rows with FOR UPDATE SKIP LOCKED under a per-endpoint transaction lock
 *       that counts every node's leases, so no attempt is sent twice at once and never more than
 *       {@code webhooks.concurrency} per endpoint are in flight in the cluster.
 * </ul>
 *
 * Woken by published events (this node's publisher, and every node's through the ledger's NOTIFY), and by a poll
 * every {@code webhooks.pollInterval}, which is what makes retries come due.
 *
 * <p>Endpoints come from the configuration file (fixed until a restart) and from the API (rows of
 * {@code webhook_api_endpoints}, made by a user's send key). The same poll reads those rows' change stamp, one cheap
 * statement, and only when it moved reads the rows again, starting, replacing or stopping their workers: an endpoint
 * made, changed or deleted through any node is delivered by every node within a poll, without a restart.
 */
public final class WebhookVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookVerticle.class);
  /** A lease outlives the attempt it covers (bounded by webhooks.timeout) by this much. */
  static final Duration LEASE_MARGIN = Duration.ofSeconds(15);
  /** Recording passes start at most this often under load: one pass then takes what several publish passes numbered. */
  private static final long MIN_RECORD_MILLIS = 20;
  private static final int POOL_SIZE = 4;

  private final NodeServices node;
  private final GatewayConfig.Webhooks config;
  private final DatabaseTarget target;
  /** The gateway's pool, used instead of one of its own while this node has no endpoint to deliver to. */
  private final Pool shared;
  private final Map<String, Supplier<List<byte[]>>> keys = new LinkedHashMap<>();
  private final List<Reloadable<?>> reloadable = new ArrayList<>();
  private final Map<String, EndpointWorker> workers = new LinkedHashMap<>();
  private final Map<String, Long> recordedThrough = new HashMap<>();
  /** The endpoints made through the API as this node last read them, by id, and each one's keys. */
  private final Map<String, ApiEndpointStore.Endpoint> api = new LinkedHashMap<>();
  private final Map<String, RotatingKeys> apiKeys = new HashMap<>();
  private ApiEndpointStore.Stamp seen;
  /** The read of the API endpoints under way (or the last): reads run one after the other, never two at once. */
  private Future<Void> syncing;
  private Destinations destinations;
  private EndpointRules rules;
  private EndpointWorker.Setup setup;
  private Schedule schedule;
  private Pool pool;
  private WebhookStore store;
  private ApiEndpointStore apiStore;
  private PacedPass recording;
  private boolean stopped;
  /** A problem that repeats every tick while it lasts: one line a minute. */
  private final ThrottledWarning problems = new ThrottledWarning(LOG);
  private volatile double open;
  private volatile double oldestSeconds;
  private long lastCount;

  /**
   * Reads every endpoint's secrets now (blocking: call on a worker, at start): a bad secret file stops the start like
   * any credential file.
   */
  public WebhookVerticle(NodeServices node, DatabaseTarget target, Pool shared) {
    this.node = node;
    this.config = node.config().webhooks();
    this.target = target;
    this.shared = shared;
    for (GatewayConfig.WebhookEndpoint e : config.endpoints()) {
      if (e.secretFile().isEmpty()) {
        List<byte[]> inline = e.secrets().stream().map(WebhookSecrets::decode).toList();
        keys.put(e.name(), () -> inline);
      } else {
        String source = "webhooks.endpoints " + e.name() + " secretFile";
        Reloadable<List<byte[]>> r = new Reloadable<>(source + " " + e.secretFile(),
            () -> WebhookSecrets.read(source, java.nio.file.Path.of(e.secretFile())), k -> k.size() + " webhook secret(s)");
        reloadable.add(r);
        keys.put(e.name(), r);
      }
    }
  }

  /** The secret files, read again on SIGHUP with the other credential files. */
  public List<Reloadable<?>> reloadable() {
    return List.copyOf(reloadable);
  }

  @Override
  public Future<?> start() {
    schedule = new Schedule(config.retrySchedule());
    destinations = new Destinations(config.allowHttp(), config.allowPrivateNetworks());
    rules = new EndpointRules(vertx, destinations);
    store = new WebhookStore(shared);
    apiStore = new ApiEndpointStore(shared);
    recording = new PacedPass(vertx, MIN_RECORD_MILLIS, false, () -> !stopped && !workers.isEmpty(), this::recordAll);
    for (GatewayConfig.WebhookEndpoint e : config.endpoints()) {
      addWorker(e, new Signer(keys.get(e.name())), new Sender(vertx, e.name(), e.url(), config.timeout(), config.concurrency()));
    }
    node.metrics().gauge("ledgerpost.webhook.pending", "Webhook deliveries not yet DELIVERED or FAILED (ledger-wide)", () -> open);
    node.metrics().gauge("ledgerpost.webhook.oldest.pending.age.seconds",
        "Age of the oldest webhook delivery not yet DELIVERED or FAILED (ledger-wide)", () -> oldestSeconds);
    serve(Bus.of(vertx));
    return store.register(List.copyOf(workers.keySet()), node.nodeId()).compose(x -> sync()).onSuccess(x -> {
      vertx.eventBus().localConsumer(OutboxVerticle.EVENTS, m -> record());
      vertx.eventBus().<OutboxMessages.PublishedUpTo>localConsumer(OutboxMessages.PUBLISHED, m -> {
        if (behind(m.body().lastPubSeq())) {
          record();
        }
      });
      vertx.setPeriodic(config.pollInterval().toMillis(), t -> tick());
      tick();
      if (!workers.isEmpty()) {
        LOG.info("webhooks: {} endpoint(s) ({}), schedule {}, timeout {} ms, {} in flight per endpoint", workers.size(),
            String.join(", ", workers.keySet()),
            config.retrySchedule().stream().map(dev.ledgerpost.platform.config.Durations::format).toList(), config.timeout().toMillis(),
            config.concurrency());
      }
    });
  }

  /** Whether some endpoint has not recorded up to {@code published} yet. */
  private boolean behind(long published) {
    for (String name : workers.keySet()) {
      if (recordedThrough.getOrDefault(name, -1L) < published) {
        return true;
      }
    }
    return false;
  }

  private void tick() {
    if (stopped) {
      return;
    }
    if (syncing == null || syncing.isComplete()) {
      sync();
    }
    record();
    workers.values().forEach(EndpointWorker::pump);
    long now = System.nanoTime();
    if (now - lastCount >= Math.min(config.pollInterval().toNanos(), 5_000_000_000L) || lastCount == 0) {
      lastCount = now;
      store.openCounts().onSuccess(c -> {
        open = c.open();
        oldestSeconds = c.oldestSeconds();
      });
    }
  }

  /** One recording pass over every endpoint, paced, never overlapping itself; again while an endpoint is behind. */
  private void record() {
    recording.run();
  }

  private Future<Boolean> recordAll() {
    List<Future<Boolean>> passes = new ArrayList<>();
    for (EndpointWorker w : workers.values()) {
      passes.add(recordOne(w));
    }
    return Future.join(passes).transform(ar -> Future.succeededFuture(passes.stream().anyMatch(f -> f.succeeded() && f.result())));
  }

  /** Answers whether the endpoint is still behind the ledger after this batch. */
  private Future<Boolean> recordOne(EndpointWorker w) {
    GatewayConfig.WebhookEndpoint e = w.endpoint();
    WebhookStore.Filter filter = new WebhookStore.Filter(e.name(), e.events(), e.user(), e.tags());
    return store.record(filter, schedule.firstDue(node.clock().instant())).map(r -> {
      if (r.through() < 0) {
        return false; // another node is recording this endpoint now
      }
      if (r.paused()) {
        // Disabled by its owner or its failures: nothing to record until it is enabled (it is never "behind" meanwhile).
        recordedThrough.put(e.name(), Long.MAX_VALUE);
        return false;
      }
      if (r.before() < r.prunedThrough() && r.through() > r.before()) {
        LOG.warn("webhook endpoint {}: events {}..{} were deleted by retention (notify.retention) before they were recorded "
            + "for it; they are not delivered", e.name(), r.before() + 1, r.prunedThrough());
      }
      recordedThrough.put(e.name(), r.through());
      if (r.inserted() > 0) {
        w.pump();
      }
      return r.through() < r.published();
    }).otherwise(x -> {
      problems.warn("webhook endpoint {}: cannot record deliveries yet: {}", e.name(), x.getMessage());
      return false;
    });
  }

  private void serve(Bus bus) {
    bus.serve(WebhookMessages.LIST, WebhookMessages.ListEndpoints.class, q -> list());
    bus.serve(WebhookMessages.ENABLE, WebhookMessages.Enable.class, q -> worker(q.endpoint(), q.scope())
        .compose(w -> enable(w).compose(skipped -> list()
            .map(l -> new WebhookMessages.Enabled(l.endpoints().stream().filter(v -> v.name().equals(w.name())).findFirst()
                .orElseThrow(), skipped)))));
    bus.serve(WebhookMessages.DELIVERIES, WebhookMessages.DeliveryQuery.class, q -> worker(q.endpoint(), q.scope())
        .compose(w -> store.page(w.name(), q.state(), q.before(), q.limit()))
        .map(items -> new DeliveryPage(items, items.size() < q.limit() ? null : items.get(items.size() - 1).id())));
    bus.serve(WebhookMessages.DELIVERY, WebhookMessages.DeliveryGet.class, q -> worker(q.endpoint(), q.scope())
        .compose(w -> delivery(w.name(), q.id()))
        .compose(d -> store.attempts(d.id()).map(a -> new DeliveryDetail(d, a))));
    bus.serve(WebhookMessages.RETRY, WebhookMessages.Retry.class, q -> worker(q.endpoint(), q.scope())
        .compose(w -> store.retry(w.name(), q.id(), node.clock().instant())
            .compose(found -> found
                ? delivery(q.endpoint(), q.id())
                : Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND,
                    "endpoint " + q.endpoint() + " has no delivery " + q.id())))
            .onSuccess(d -> w.pump())));
    bus.serve(WebhookMessages.REPLAY, WebhookMessages.Replay.class, q -> worker(q.endpoint(), q.scope()).compose(w -> {
      GatewayConfig.WebhookEndpoint e = w.endpoint();
      return store.replay(new WebhookStore.Filter(e.name(), e.events(), e.user(), e.tags()), q.since(), q.until(), node.clock().instant())
          .map(c -> {
            LOG.info("webhook endpoint {}: replay of pub_seq {}..{}: {} delivery(ies) recorded, {} re-armed", e.name(),
                q.since() + 1, c[2], c[0], c[1]);
            w.pump();
            return new Replayed(e.name(), q.since(), c[2], (int) c[0], (int) c[1]);
          });
    }));
    bus.serve(WebhookMessages.FOR_MESSAGE, WebhookMessages.ForMessage.class,
        q -> store.forMessage(q.messageId()).map(MessageDeliveries::new));
    bus.serve(WebhookMessages.PRUNE, WebhookMessages.Prune.class,
        q -> store.prune(node.clock().instant().minus(q.retention()), q.batch()).map(WebhookMessages.Pruned::new));
    serveManaged(bus);
  }

  /**
   * Enabled again (its failing streak starts again); answers the events it did not record while disabled (a replay of
   * that range brings them), or null. A 410's deliveries waited: they go now.
   */
  private Future<WebhookMessages.Skipped> enable(EndpointWorker w) {
    return store.enable(w.name()).map(r -> {
      recordedThrough.remove(w.name());
      record();
      w.pump();
      if (r == null || r.after() <= r.before()) {
        return null;
      }
      LOG.info("webhook endpoint {} enabled again (it was disabled: {}); events after pub_seq {} up to {} were not recorded "
          + "for it: a replay sends them", w.name(), r.kind(), r.before(), r.after());
      return new WebhookMessages.Skipped(r.before(), r.after());
    });
  }

  /** Its owner's PATCH: enabled again, or disabled (no event: the owner asked), or unchanged. */
  private Future<WebhookMessages.Skipped> enabled(String id, String scope, Boolean enabled) {
    if (enabled == null) {
      return Future.succeededFuture();
    }
    EndpointWorker w = workers.get(id);
    if (w == null) {
      return Future.failedFuture(ApiEndpointStore.notFound(id));
    }
    if (enabled) {
      return enable(w);
    }
    return store.disableManually(id, scope == null ? "the admin" : scope, node.clock().instant()).map(x -> null);
  }

  /** The endpoints' management through the API (docs/design.md §6.6). */
  private void serveManaged(Bus bus) {
    bus.serve(WebhookMessages.ENDPOINTS, WebhookMessages.EndpointsQuery.class,
        q -> sync().compose(x -> managed(q.scope(), null)).map(WebhookMessages.ManagedList::new));
    bus.serve(WebhookMessages.ENDPOINT, WebhookMessages.EndpointGet.class, q -> sync().compose(x -> managedOne(q.id(), q.scope())));
    bus.serve(WebhookMessages.CREATE, WebhookMessages.Create.class, this::create);
    bus.serve(WebhookMessages.UPDATE, WebhookMessages.Update.class, q -> changeable(q.id(), q.scope())
        .compose(x -> worker(q.id(), q.scope())) // another user's endpoint is not found, whatever the body says
        .compose(x -> q.url() == null ? Future.<Void>succeededFuture() : rules.checkUrl(q.url()))
        .compose(x -> q.tags() == null ? Future.<List<String>>succeededFuture(null) : EndpointRules.tags(q.tags()))
        .compose(tags -> (q.events() == null ? Future.<List<String>>succeededFuture(null) : EndpointRules.events(q.events()))
            .compose(events -> apiStore.update(q.id(), q.scope(), q.url(), events, tags, q.rateLimit() != null || q.resetRateLimit(),
                q.rateLimit())))
        .compose(row -> row == null ? Future.failedFuture(ApiEndpointStore.notFound(q.id()))
            : sync().compose(x -> enabled(row.id(), q.scope(), q.enabled()))
                .compose(skipped -> managedOne(row.id(), q.scope()).map(m -> new WebhookMessages.Changed(m, skipped)))));
    bus.serve(WebhookMessages.REMOVE, WebhookMessages.Remove.class, q -> changeable(q.id(), q.scope())
        .compose(x -> apiStore.delete(q.id(), q.scope()))
        .compose(found -> found ? sync().map(x -> new WebhookMessages.Removed(q.id()))
            : Future.failedFuture(ApiEndpointStore.notFound(q.id()))));
    bus.serve(WebhookMessages.ROTATE, WebhookMessages.Rotate.class, q -> changeable(q.id(), q.scope())
        .compose(x -> apiStore.rotate(q.id(), q.scope(), rules.newSecret(), node.clock().instant().plus(config.rotationGrace())))
        .compose(row -> row == null ? Future.failedFuture(ApiEndpointStore.notFound(q.id()))
            : sync().compose(x -> managedOne(row.id(), q.scope())).map(m -> new WebhookMessages.Created(m, row.secret()))));
  }

  /** A new endpoint: its URL checked (form, scheme, every address its host resolves to), then its rows, at most the owner's share. */
  private Future<WebhookMessages.Created> create(WebhookMessages.Create q) {
    return rules.checkUrl(q.url())
        .compose(x -> EndpointRules.tags(q.tags() == null ? List.of() : q.tags()))
        .compose(tags -> EndpointRules.events(q.events())
            .compose(events -> apiStore.create(rules.newId(), q.owner(), q.url(), events, tags, rules.newSecret(),
                config.maxEndpointsPerUser(), q.rateLimit())))
        .compose(row -> {
          // Not the URL: an application may put a token of its own in it.
          LOG.info("webhook endpoint {} made through the API by {}: host {}, {}", row.id(), row.owner(),
              java.net.URI.create(row.url()).getHost(), row.events());
          return sync().compose(x -> managedOne(row.id(), null)).map(m -> new WebhookMessages.Created(m, row.secret()));
        });
  }

  /** An endpoint of the configuration file is the operator's: the admin hears 409, a user does not see it (404). */
  private Future<Void> changeable(String id, String scope) {
    boolean configured = config.endpoints().stream().anyMatch(e -> e.name().equals(id));
    if (!configured) {
      return Future.succeededFuture();
    }
    return Future.failedFuture(scope == null
        ? new EndpointRefused(409, "endpoint " + id + " is configured in webhooks.endpoints (the configuration file): "
            + "change it there; only endpoints made through the API are changed through it")
        : ApiEndpointStore.notFound(id));
  }

  /** The endpoints {@code scope} sees (the admin: every one, the configured ones first), or just {@code only}. */
  private Future<List<WebhookMessages.Managed>> managed(String scope, String only) {
    List<String> names = new ArrayList<>();
    for (String name : workers.keySet()) {
      ApiEndpointStore.Endpoint e = api.get(name);
      boolean visible = scope == null || (e != null && e.owner().equals(scope));
      if (visible && (only == null || only.equals(name))) {
        names.add(name);
      }
    }
    return store.endpoints(names).map(rows -> {
      Map<String, Row> byName = new HashMap<>();
      rows.forEach(r -> byName.put(r.getString("name"), r));
      List<WebhookMessages.Managed> out = new ArrayList<>();
      for (String name : names) {
        Row r = byName.get(name);
        boolean enabled = r == null || r.getOffsetDateTime("disabled_at") == null;
        String reason = r == null ? null : r.getString("disabled_reason");
        ApiEndpointStore.Endpoint e = api.get(name);
        EndpointWorker w = workers.get(name);
        WebhookMessages.Health health = health(r, w);
        if (e == null) {
          GatewayConfig.WebhookEndpoint c = w.endpoint();
          out.add(new WebhookMessages.Managed(name, "config", c.user(), c.url(), c.events(), c.tags(), w.signer().secrets(), null,
              enabled, reason, null, null, health));
        } else {
          int secrets = w.signer().secrets();
          out.add(new WebhookMessages.Managed(name, "api", e.owner(), e.url(), e.events(), e.tags(), secrets,
              secrets > 1 ? java.time.OffsetDateTime.ofInstant(e.previousUntil(), java.time.ZoneOffset.UTC) : null, enabled, reason,
              e.createdAt(), e.updatedAt(), health));
        }
      }
      return out;
    });
  }

  /** The endpoint's health as its state row says (null: no row yet), with the rate limit its worker applies. */
  private WebhookMessages.Health health(Row r, EndpointWorker w) {
    ApiEndpointStore.Endpoint e = api.get(w.name());
    return WebhookStore.health(r, w.rate(), e != null && e.rateLimit() != null);
  }

  private Future<WebhookMessages.Managed> managedOne(String id, String scope) {
    return managed(scope, id).compose(l -> l.isEmpty() ? Future.failedFuture(ApiEndpointStore.notFound(id))
        : Future.succeededFuture(l.get(0)));
  }

  /**
   * Reads the API endpoints again if their stamp moved; reads run one after another. Called every poll, and before
   * the API answers about endpoints, so this node answers what any node changed.
   */
  private Future<Void> sync() {
    Future<Void> before = syncing == null ? Future.succeededFuture() : syncing;
    syncing = before.transform(x -> stopped ? Future.succeededFuture() : syncOnce());
    return syncing;
  }

  private Future<Void> syncOnce() {
    return apiStore.stamp().compose(stamp -> {
      if (stamp.equals(seen)) {
        return Future.<Void>succeededFuture();
      }
      return apiStore.all().map(rows -> {
        apply(rows);
        seen = stamp;
        return (Void) null;
      });
    }).recover(e -> {
      problems.warn("webhooks: cannot read the endpoints made through the API yet: {}", e.getMessage());
      return Future.succeededFuture();
    });
  }

  /** Starts the workers of new endpoints, replaces those whose URL or events changed, re-keys the rotated, stops the deleted. */
  private void apply(List<ApiEndpointStore.Endpoint> rows) {
    Map<String, ApiEndpointStore.Endpoint> now = new LinkedHashMap<>();
    rows.forEach(r -> now.put(r.id(), r));
    for (String id : List.copyOf(api.keySet())) {
      ApiEndpointStore.Endpoint is = now.get(id);
      if (is == null || !is.sameTarget(api.get(id))) {
        EndpointWorker w = workers.remove(id);
        recordedThrough.remove(id);
        apiKeys.remove(id);
        api.remove(id);
        if (w != null) {
          w.stop(); // its attempts in flight end and are recorded (a deleted endpoint's: nothing left to record them on)
        }
        LOG.info("webhook endpoint {}: {}", id, is == null ? "deleted" : "changed: host " + java.net.URI.create(is.url()).getHost()
            + ", " + is.events() + (is.tags().isEmpty() ? "" : ", tags " + is.tags()));
      }
    }
    boolean added = false;
    for (ApiEndpointStore.Endpoint r : rows) {
      RotatingKeys k = apiKeys.get(r.id());
      if (k != null) {
        k.set(r);
        workers.get(r.id()).rate(rate(r));
      } else {
        k = new RotatingKeys(node.clock(), r);
        apiKeys.put(r.id(), k);
        addWorker(new GatewayConfig.WebhookEndpoint(r.id(), r.url(), List.of(), "", r.events(), r.owner(), r.tags()), new Signer(k),
            new Sender(vertx, r.id(), r.url(), config.timeout(), config.concurrency(), destinations));
        workers.get(r.id()).rate(rate(r));
        added = true;
      }
      api.put(r.id(), r);
    }
    if (added) {
      record();
    }
  }

  /** An API endpoint's own rate limit, or webhooks.rateLimit. */
  private int rate(ApiEndpointStore.Endpoint r) {
    return r.rateLimit() != null ? r.rateLimit() : config.rateLimit();
  }

  private void addWorker(GatewayConfig.WebhookEndpoint e, Signer signer, Sender sender) {
    EndpointWorker w = new EndpointWorker(setup(), e, signer, sender);
    w.rate(config.rateLimit());
    workers.put(e.name(), w);
    node.metrics().webhookEndpoint(e.name());
  }

  /**
   * What every worker shares; made with the first endpoint, which is also when the part takes a pool of its own
   * (before, its few statements ran on the gateway's pool).
   */
  private EndpointWorker.Setup setup() {
    if (setup == null) {
      store = new WebhookStore(ownPool());
      setup = new EndpointWorker.Setup(vertx, store, schedule, node.clock(), node.nodeId(), config.concurrency(),
          config.timeout().plus(LEASE_MARGIN), node.metrics(), config.disableAfter());
    }
    return setup;
  }

  /** The endpoint's worker if {@code scope} may reach it (the admin: any; a user: its own API endpoints), read again once. */
  private Future<EndpointWorker> worker(String name, String scope) {
    EndpointWorker w = visible(name, scope);
    if (w != null) {
      return Future.succeededFuture(w);
    }
    return sync().compose(x -> {
      EndpointWorker again = visible(name, scope);
      return again != null ? Future.succeededFuture(again)
          : Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no webhook endpoint " + name
              + (scope == null ? " (neither in webhooks.endpoints nor made through the API)" : "")));
    });
  }

  private EndpointWorker visible(String name, String scope) {
    EndpointWorker w = workers.get(name);
    if (w == null || scope == null) {
      return w;
    }
    ApiEndpointStore.Endpoint e = api.get(name);
    return e != null && e.owner().equals(scope) ? w : null;
  }

  private Future<DeliveryView> delivery(String endpoint, long id) {
    return store.one(endpoint, id).compose(d -> d != null ? Future.succeededFuture(d)
        : Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND,
            "endpoint " + endpoint + " has no delivery " + id)));
  }

  private Future<EndpointList> list() {
    return store.endpoints(List.copyOf(workers.keySet())).map(rows -> {
      Map<String, Row> byName = new HashMap<>();
      rows.forEach(r -> byName.put(r.getString("name"), r));
      List<EndpointView> views = new ArrayList<>();
      for (EndpointWorker w : workers.values()) {
        GatewayConfig.WebhookEndpoint e = w.endpoint();
        Row r = byName.get(e.name());
        views.add(new EndpointView(e.name(), e.url(), e.events(), e.tags(), e.user(), w.signer().secrets(),
            r == null || r.getOffsetDateTime("disabled_at") == null, r == null ? null : r.getOffsetDateTime("disabled_at"),
            r == null ? null : r.getString("disabled_reason"), r == null ? 0 : r.getLong("recorded_through"),
            r == null ? 0 : r.getLong("pending"), r == null ? 0 : r.getLong("attempted"), r == null ? 0 : r.getLong("failed"),
            r == null ? 0 : r.getLong("in_flight"), r == null ? null : r.getOffsetDateTime("oldest"), health(r, w)));
      }
      return new EndpointList(views, config.retrySchedule().stream().map(dev.ledgerpost.platform.config.Durations::format).toList(),
          dev.ledgerpost.platform.config.Durations.format(config.timeout()), config.concurrency());
    });
  }

  /** Claim passes each endpoint has completed on this node (tests wait for one after moving the clock). */
  public long passes(String endpoint) {
    EndpointWorker w = workers.get(endpoint);
    return w == null ? 0 : w.passes();
  }


  /** Stops claiming and recording; attempts in flight end (each within webhooks.timeout) and are recorded. */
  @Override
  public Future<?> stop() {
    stopped = true;
    List<Future<Void>> stops = new ArrayList<>();
    workers.values().forEach(w -> stops.add(w.stop()));
    return Future.join(stops).eventually(() -> pool == null ? Future.succeededFuture() : pool.close());
  }

  /**
   * A pool of its own for a node that delivers: a delivery's statements then never wait behind the ledger's, nor the
   * ledger's behind them. A node without endpoints only counts the ledger-wide backlog and prunes, a few statements a
   * minute, on the gateway's pool; a pool of its own opened two or three connections at each of its starts for that.
   */
  private Pool ownPool() {
    PgConnectOptions options = new PgConnectOptions(target.options());
    Map<String, String> props = new HashMap<>(options.getProperties());
    props.put("application_name", "ledgerpost webhooks " + node.nodeId());
    options.setProperties(props);
    pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(POOL_SIZE)).connectingTo(options).using(vertx).build();
    return pool;
  }
}
