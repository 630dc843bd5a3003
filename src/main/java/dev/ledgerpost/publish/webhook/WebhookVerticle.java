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
  private Schedule schedule;
  private Pool pool;
  private WebhookStore store;
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
    store = new WebhookStore(config.endpoints().isEmpty() ? shared : ownPool());
    recording = new PacedPass(vertx, MIN_RECORD_MILLIS, false, () -> !stopped && !workers.isEmpty(), this::recordAll);
    Duration lease = config.timeout().plus(LEASE_MARGIN);
    EndpointWorker.Setup setup = new EndpointWorker.Setup(vertx, store, schedule, node.clock(), node.nodeId(), config.concurrency(),
        lease, node.metrics());
    for (GatewayConfig.WebhookEndpoint e : config.endpoints()) {
      workers.put(e.name(), new EndpointWorker(setup, e, new Signer(keys.get(e.name())),
          new Sender(vertx, e.name(), e.url(), config.timeout(), config.concurrency())));
      node.metrics().webhookEndpoint(e.name());
    }
    node.metrics().gauge("ledgerpost.webhook.pending", "Webhook deliveries not yet DELIVERED or FAILED (ledger-wide)", () -> open);
    node.metrics().gauge("ledgerpost.webhook.oldest.pending.age.seconds",
        "Age of the oldest webhook delivery not yet DELIVERED or FAILED (ledger-wide)", () -> oldestSeconds);
    serve(Bus.of(vertx));
    return store.register(List.copyOf(workers.keySet()), node.nodeId()).onSuccess(x -> {
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
    WebhookStore.Filter filter = new WebhookStore.Filter(e.name(), e.events(), e.user());
    return store.record(filter, schedule.firstDue(node.clock().instant())).map(r -> {
      if (r.through() < 0) {
        return false; // another node is recording this endpoint now
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
    bus.serve(WebhookMessages.ENABLE, WebhookMessages.Enable.class, q -> worker(q.endpoint())
        .compose(w -> store.enable(w.name()))
        .compose(x -> {
          workers.get(q.endpoint()).pump();
          return list();
        })
        .map(l -> l.endpoints().stream().filter(v -> v.name().equals(q.endpoint())).findFirst().orElseThrow()));
    bus.serve(WebhookMessages.DELIVERIES, WebhookMessages.DeliveryQuery.class, q -> worker(q.endpoint())
        .compose(w -> store.page(w.name(), q.state(), q.before(), q.limit()))
        .map(items -> new DeliveryPage(items, items.size() < q.limit() ? null : items.get(items.size() - 1).id())));
    bus.serve(WebhookMessages.DELIVERY, WebhookMessages.DeliveryGet.class, q -> worker(q.endpoint())
        .compose(w -> delivery(w.name(), q.id()))
        .compose(d -> store.attempts(d.id()).map(a -> new DeliveryDetail(d, a))));
    bus.serve(WebhookMessages.RETRY, WebhookMessages.Retry.class, q -> worker(q.endpoint())
        .compose(w -> store.retry(w.name(), q.id(), node.clock().instant()))
        .compose(found -> found
            ? delivery(q.endpoint(), q.id())
            : Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND,
                "endpoint " + q.endpoint() + " has no delivery " + q.id())))
        .onSuccess(d -> workers.get(q.endpoint()).pump()));
    bus.serve(WebhookMessages.REPLAY, WebhookMessages.Replay.class, q -> worker(q.endpoint()).compose(w -> {
      GatewayConfig.WebhookEndpoint e = w.endpoint();
      return store.replay(new WebhookStore.Filter(e.name(), e.events(), e.user()), q.since(), q.until(), node.clock().instant())
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
  }

  private Future<EndpointWorker> worker(String name) {
    EndpointWorker w = workers.get(name);
    return w != null ? Future.succeededFuture(w)
        : Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no webhook endpoint " + name
            + " in the configuration (webhooks.endpoints)"));
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
        views.add(new EndpointView(e.name(), e.url(), e.events(), e.user(), w.signer().secrets(),
            r == null || r.getOffsetDateTime("disabled_at") == null, r == null ? null : r.getOffsetDateTime("disabled_at"),
            r == null ? null : r.getString("disabled_reason"), r == null ? 0 : r.getLong("recorded_through"),
            r == null ? 0 : r.getLong("pending"), r == null ? 0 : r.getLong("attempted"), r == null ? 0 : r.getLong("failed"),
            r == null ? 0 : r.getLong("in_flight"), r == null ? null : r.getOffsetDateTime("oldest")));
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
