package dev.ledgerpost;

import dev.ledgerpost.api.ApiVerticle;
import dev.ledgerpost.operate.resolutions.OperatorViews;
import dev.ledgerpost.intake.http.SendApi;
import dev.ledgerpost.operate.archive.ArchiveKey;
import dev.ledgerpost.operate.archive.ArchiveVerticle;
import dev.ledgerpost.operate.archive.PartitionExport;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.operate.capacity.CapacityGauges;
import dev.ledgerpost.operate.capacity.CapacityVerticle;
import dev.ledgerpost.chaos.ChaosVerticle;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.cluster.NodeVerticle;
import dev.ledgerpost.platform.auth.AdminToken;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Reloadable;
import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.relay.smarthost.DownstreamSlots;
import dev.ledgerpost.relay.smarthost.SmarthostHealth;
import dev.ledgerpost.relay.RelayContract;
import dev.ledgerpost.operate.erasure.ErasureKey;
import dev.ledgerpost.operate.erasure.ErasureVerticle;
import dev.ledgerpost.ledger.db.DatabaseTarget;
import dev.ledgerpost.intake.http.IdempotencyVerticle;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.observability.MicrometerGatewayMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.publish.hub.NotifyHub;
import dev.ledgerpost.publish.hub.NotifyVerticle;
import dev.ledgerpost.publish.outbox.OutboxVerticle;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.ledger.LedgerVerticle;
import dev.ledgerpost.operate.resolutions.ResolutionsVerticle;
import dev.ledgerpost.operate.reconcile.ReconcileVerticle;
import dev.ledgerpost.operate.retention.PartitionArchiver;
import dev.ledgerpost.operate.retention.RetentionVerticle;
import dev.ledgerpost.relay.retry.RetryVerticle;
import dev.ledgerpost.intake.smtp.AddressConnections;
import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.platform.auth.HtpasswdAuthenticator;
import dev.ledgerpost.intake.smtp.SenderPolicy;
import dev.ledgerpost.intake.smtp.SmtpSession;
import dev.ledgerpost.intake.smtp.SmtpVerticle;
import dev.ledgerpost.intake.smtp.tls.TlsMaterial;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import dev.ledgerpost.operate.stale.StaleGauges;
import dev.ledgerpost.operate.stale.PendingHistory;
import dev.ledgerpost.operate.stale.StaleVerticle;
import dev.ledgerpost.publish.webhook.WebhookVerticle;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running gateway: its parts deployed in dependency order (ledger, retry, stale watch, webhooks, API, then
 * SMTP, so no mail is taken before the ledger and the outcome journal are ready) and undeployed in reverse.
 */
public final class Gateway {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);

  private final Vertx vertx;
  private final GatewayConfig config;
  private final Clock clock;
  /** Deployment ids in start order; the instances of one part form one group, stopped together. */
  private final List<List<String>> deployments = new ArrayList<>();
  /** The groups of listening instances (SMTP, HTTP): the intakes, stopped together before the rest. */
  private final List<List<String>> intakes = new ArrayList<>();
  private final AtomicLong handovers = new AtomicLong();
  private final PrometheusMeterRegistry registry;
  private final GatewayMetrics metrics;
  private LedgerVerticle ledger;
  private NodeVerticle node;
  private RetryVerticle retry;
  private StaleVerticle stale;
  private CapacityVerticle capacity;
  private ReconcileVerticle reconcile;
  /** The stale watch's gauges over the last hour, for the operator console's chart: one per process. */
  private final PendingHistory pendingHistory = new PendingHistory();
  private NotifyHub hub;
  private WebhookVerticle webhooks;
  /** node.id, or the host's name (docs/design.md §9.1). */
  private String nodeId;
  private int smtpPort;
  private int httpPort;
  private AdminToken adminToken;
  private EventTokens eventTokens;
  private ApiKeys apiKeys;
  /** The credential files and the STARTTLS pair, read again on SIGHUP ({@link #reloadCredentials}). */
  private final List<Reloadable<?>> reloadable = new ArrayList<>();

  private Gateway(Vertx vertx, GatewayConfig config, PrometheusMeterRegistry registry, Clock clock) {
    this.vertx = vertx;
    this.config = config;
    this.registry = registry;
    this.metrics = new MicrometerGatewayMetrics(registry);
    this.clock = clock;
  }

  public static Future<Gateway> start(Vertx vertx, GatewayConfig config) {
    return start(vertx, config, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), Clock.systemUTC());
  }

  /** With the clock the stale watch and the smarthosts' back-off read; tests move it to age rows. */
  public static Future<Gateway> start(Vertx vertx, GatewayConfig config, Clock clock) {
    return start(vertx, config, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), clock);
  }

  /** With the registry Vert.x itself reports into (Main), so /metrics shows both. */
  public static Future<Gateway> start(Vertx vertx, GatewayConfig config, PrometheusMeterRegistry registry) {
    return start(vertx, config, registry, Clock.systemUTC());
  }

  public static Future<Gateway> start(Vertx vertx, GatewayConfig config, PrometheusMeterRegistry registry, Clock clock) {
    Gateway g = new Gateway(vertx, config, registry, clock);
    return g.boot().map(g).recover(e -> g.stop().transform(x -> Future.failedFuture(e)));
  }

  private Future<Void> boot() {
    return vertx.executeBlocking(this::prepare)
        .compose(shared -> {
          ledger = new LedgerVerticle(config.ledger(), nodeId, metrics);
          return deploy(ledger).map(shared);
        })
        // The parts whose SQL the ledger used to run, each on its own verticle, before any part that asks them.
        .compose(shared -> deployStores().map(shared))
        .compose(shared -> {
          node = new NodeVerticle(nodeId, shared.hostname(), config.node(), ledger.target(), metrics);
          return deploy(node).map(shared);
        })
        .compose(shared -> deploy(new OutboxVerticle(onNode(), ledger.database())).map(shared))
        .compose(shared -> deploy(new ArchiveVerticle(config.ledger(), nodeId, ledger.target())).map(shared))
        .compose(shared -> {
          retry = new RetryVerticle(config.retry(), RetryVerticle.journalDir(config));
          return deploy(retry).map(shared);
        })
        .map(shared -> shared.withContract(new RelayContract(new RelayContract.Services(ledger.writer(), Bus.of(vertx), retry,
            metrics, handovers, shared.hostname()))))
        .compose(shared -> {
          stale = new StaleVerticle(onNode(), ledger.database(), pendingHistory);
          return deploy(stale).map(shared);
        })
        .compose(shared -> {
          capacity = new CapacityVerticle(config.ledger(), ledger.database(), clock);
          return deploy(capacity).map(shared);
        })
        .compose(shared -> vertx.executeBlocking(() -> new WebhookVerticle(onNode(), ledger.target())).compose(w -> {
          webhooks = w;
          reloadable.addAll(w.reloadable());
          return deploy(w);
        }).map(shared))
        // After every part whose rows it prunes serves its addresses: a job taken at once runs its first pass at once.
        .compose(shared -> deploy(new RetentionVerticle(onNode(), ledger.target(), archiver())).map(shared))
        .compose(shared -> {
          reconcile = new ReconcileVerticle(onNode(), ledger.database());
          return deploy(reconcile).map(shared);
        })
        .compose(shared -> {
          bindLedgerGauges();
          hub = new NotifyHub(vertx, eventTokens, config.notifications().sendQueueBytes());
          metrics.gauge("ledgerpost.notify.clients", "Connected WebSocket subscribers", hub::clients);
          return deploy(new NotifyVerticle(hub, config.notifications().pollInterval())).map(shared);
        })
        .compose(shared -> {
          SendApi.Setup send = new SendApi.Setup(config, apiKeys, shared.hostname(), shared.contract(), metrics,
              shared.downstreamSlots(), shared.smarthosts());
          ApiVerticle.Shared api = new ApiVerticle.Shared(eventTokens, hub, registry::scrape, send,
              new OperatorViews(stale, pendingHistory, capacity));
          return listening(instances(config.http().effectiveInstances(), config.http().port(),
              port -> new ApiVerticle(port, api),
              ApiVerticle::actualPort), "http", config.http().host(), config.http().port())
              .map(port -> {
                httpPort = port;
                return shared;
              });
        })
        .compose(shared -> listening(instances(config.smtp().effectiveInstances(), config.smtp().port(),
            port -> new SmtpVerticle(shared, port), SmtpVerticle::actualPort), "smtp", config.smtp().host(), config.smtp().port()))
        .onSuccess(port -> {
          smtpPort = port;
          LOG.info("Ledgerpost ready: node {}, SMTP port {}, HTTP port {} ({} SMTP and {} HTTP event loops), relaying to {} "
              + "(PID {}; SIGHUP reloads credentials)", nodeId, smtpPort, httpPort, config.smtp().effectiveInstances(),
              config.http().effectiveInstances(), relayingTo(config.downstream()), ProcessHandle.current().pid());
        })
        .mapEmpty();
  }

  /** What the parts that run on every node are given; the node (its leadership) is deployed before them. */
  private NodeServices onNode() {
    return new NodeServices(config, nodeId, node.leadership(), metrics, clock);
  }

  /** Retention's export of a partition before its drop (docs/design.md §5.12); null without {@code ledger.archiveDir}. */
  private PartitionArchiver archiver() {
    Path dir = config.ledger().archivePath();
    return dir == null ? null
        : new PartitionExport(vertx, ledger.target(), dir, nodeId, ArchiveKey.Location.of(config.ledger()));
  }

  /**
   * The parts with SQL and no verticle of their own before (docs/design.md §4.1): idempotency keys, resolutions,
   * erasure, chaos locks, over the ledger's one {@code Database}.
   */
  private Future<Void> deployStores() {
    Future<Void> chain = deploy(new IdempotencyVerticle(ledger.database()))
        .compose(x -> deploy(new ResolutionsVerticle(ledger.database())))
        .compose(x -> deploy(new ErasureVerticle(ledger.database(), ErasureKey.of(config.ledger()))));
    return config.observability().chaosEnabled()
        ? chain.compose(x -> deploy(new ChaosVerticle(ledger.database())))
        : chain;
  }

  /** "127.0.0.1:2526", or "127.0.0.1:2526 (fallback 10.0.0.2:25, 10.0.0.3:25)". */
  private static String relayingTo(GatewayConfig.Downstream d) {
    String primary = d.primary().toString();
    return d.fallback().isEmpty() ? primary : primary + " (fallback " + d.fallback().stream().map(Object::toString)
        .collect(java.util.stream.Collectors.joining(", ")) + ")";
  }

  /**
   * A listener that could not bind is an operator's problem, said in one line naming the key to change
   * (docs/design.md §4.7); anything else passes through unchanged.
   */
  private static <T> Future<T> listening(Future<T> deployed, String part, String host, int port) {
    return deployed.recover(e -> {
      for (Throwable t = e; t != null; t = t.getCause()) {
        String m = String.valueOf(t.getMessage());
        if (t instanceof java.net.BindException || m.contains("Address already in use") || m.contains("Cannot assign requested address")) {
          boolean inUse = m.contains("already in use");
          return Future.failedFuture(new StartFailure(inUse
              ? part + ".port " + port + ": " + host + ":" + port + " is already in use by another program; stop it or set "
                  + part + ".port to a free port"
              : part + ".host " + host + ": cannot listen there (" + m + "); set " + part + ".host to an address of this machine",
              e));
        }
      }
      return Future.failedFuture(e);
    });
  }

  /** The blocking part of starting: names, certificates, password file, admin token (docs/design.md §4.8). */
  private SmtpVerticle.Shared prepare() {
    nodeId = config.node().effectiveId();
    String hostname = config.smtp().hostname().isEmpty() ? localHostname() : config.smtp().hostname();
    HtpasswdAuthenticator auth = config.auth().usersFile().isEmpty()
        ? null
        : HtpasswdAuthenticator.load(vertx, Path.of(config.auth().usersFile()));
    adminToken = AdminToken.load(config);
    eventTokens = EventTokens.load(adminToken, config.notifications().tokensFile());
    apiKeys = ApiKeys.load(config.api().keysFile(), config.api().rateLimit());
    TlsMaterial tls = TlsMaterial.load(vertx, config.smtp(), hostname);
    adminToken.reloadable().ifPresent(reloadable::add);
    eventTokens.reloadable().ifPresent(reloadable::add);
    apiKeys.reloadable().ifPresent(reloadable::add);
    if (auth != null) {
      reloadable.add(auth.reloadable());
    }
    tls.reloadable().ifPresent(reloadable::add);
    AtomicInteger connections = new AtomicInteger();
    metrics.gauge("ledgerpost.smtp.sessions.active", "Open SMTP client connections", connections::get);
    return new SmtpVerticle.Shared(config, hostname, tls, auth == null ? null : auth::verify,
        connections, null, metrics, guards(), new AddressConnections(config.smtp().maxConnectionsPerAddress()),
        downstreamSlots(), new SmarthostHealth(config.downstream(), clock), new AtomicBoolean());
  }

  /** The AUTH throttle, sender policy and per-user rate: one each per process, whatever the number of SMTP loops. */
  private SmtpSession.Guards guards() {
    GatewayConfig.Auth a = config.auth();
    AuthThrottle throttle = new AuthThrottle(new AuthThrottle.Settings(a.failureDelay(), a.banThreshold(), a.banWindow()),
        metrics);
    metrics.gauge("ledgerpost.auth.banned.addresses", "Client addresses banned now for failed AUTH attempts",
        throttle::bannedAddresses);
    SenderPolicy senders = a.senderPolicy() == GatewayConfig.SenderPolicyMode.OWN
        ? SenderPolicy.load(Path.of(a.sendersFile()))
        : SenderPolicy.ANY;
    return new SmtpSession.Guards(throttle, senders, new UserQuota(a.rateLimit(), metrics),
        d -> vertx.timer(d.toMillis()).mapEmpty());
  }

  /** Shared by the SMTP relays and the send API's: downstream.maxConnections counts them all. */
  private DownstreamSlots downstreamSlots() {
    DownstreamSlots slots = new DownstreamSlots(config.downstream().maxConnections());
    metrics.gauge("ledgerpost.downstream.connections", "Open smarthost connections, in use or idle (downstream.maxConnections)",
        slots::inUse);
    return slots;
  }

  /** The stale watch's and the retry part's values, read at scrape time without waiting for the database (docs/design.md §8.1). */
  private void bindLedgerGauges() {
    StaleGauges g = stale;
    metrics.gauge("ledgerpost.pending.messages", "Ledger entries still PENDING", g::pendingMessages);
    metrics.gauge("ledgerpost.pending.oldest.age.seconds", "Age of the oldest PENDING ledger entry", g::oldestPendingAgeSeconds);
    metrics.gauge("ledgerpost.pending.stale.messages",
        "PENDING entries older than stale.threshold that the retry part does not hold", g::stalePendingMessages);
    metrics.gauge("ledgerpost.unknown.messages", "Ledger entries whose outcome is UNKNOWN, waiting for an operator",
        g::unknownMessages);
    RetryVerticle r = retry;
    metrics.gauge("ledgerpost.settle.backlog", "Known outcomes held by the retry part, not yet in the ledger", r::backlog);
    bindCapacityGauges(capacity);
  }

  /** The ledger's size and its disk, from the capacity watch's last reading (ledger.sizeInterval). */
  private void bindCapacityGauges(CapacityGauges c) {
    metrics.gauge("ledgerpost.ledger.bytes", "Size of the ledger's database on disk (pg_database_size: tables, indexes, TOAST; not WAL)",
        c::databaseBytes);
    for (String table : CapacityGauges.TABLES) {
      metrics.gauge("ledgerpost.ledger.rows", "Rows of a ledger table, the planner's estimate (pg_class.reltuples over its partitions)",
          "table", table, () -> c.rows(table));
    }
    metrics.gauge("ledgerpost.ledger.oldest.seconds", "Age of the oldest message in the ledger (the time in its UUIDv7 id)",
        c::oldestSeconds);
    if (c.seesDisk()) { // absent, not 0, when the database's file system is out of sight
      metrics.gauge("ledgerpost.ledger.disk.free.bytes", "Free bytes of the file system holding the ledger's database",
          () -> c.diskFreeBytes().orElse(Double.NaN));
      metrics.gauge("ledgerpost.ledger.disk.total.bytes", "Size of the file system holding the ledger's database",
          () -> c.diskTotalBytes().orElse(Double.NaN));
    }
  }

  /**
   * Deploys {@code n} instances of a listening verticle that share one socket: Vert.x binds it once and
   * hands the connections to the instances in turn, each on its own event loop. For port 0 they bind a
   * negative port, Vert.x's "one random port shared by every server that names this number"; the number
   * is this gateway's own, so two gateways in one Vert.x never share. Answers the actual port.
   */
  private <V extends io.vertx.core.VerticleBase> Future<Integer> instances(int n, int port, java.util.function.IntFunction<V> make,
      java.util.function.ToIntFunction<V> actualPort) {
    int bind = port == 0 ? -SHARED_RANDOM_PORTS.incrementAndGet() : port;
    List<V> made = new ArrayList<>();
    List<String> group = new ArrayList<>();
    deployments.add(group);
    intakes.add(group);
    Future<Void> chain = Future.succeededFuture();
    for (int i = 0; i < n; i++) {
      V v = make.apply(bind);
      made.add(v);
      chain = chain.compose(x -> vertx.deployVerticle(v).map(id -> {
        group.add(id);
        return (Void) null;
      }));
    }
    return chain.map(x -> actualPort.applyAsInt(made.get(0)));
  }

  /** Numbers for Vert.x's shared random ports, unique in this JVM. */
  private static final AtomicInteger SHARED_RANDOM_PORTS = new AtomicInteger();

  private Future<Void> deploy(io.vertx.core.VerticleBase verticle) {
    return vertx.deployVerticle(verticle).map(id -> {
      deployments.add(List.of(id));
      return null;
    });
  }

  /**
   * Stops both intakes first and at once (SMTP and the API, every instance, one grace for all: stopped one after
   * the other, the API admitted new sends for as long as SMTP's stop lasted, up to its final dots' verdicts, and its
   * own stop then began a second grace past the bound {@code Main} waits for, issue 26), then the hub, the stale
   * watch, the retry part (journal closed), the outbox relay, the ledger, in the reverse order of their start.
   */
  public Future<Void> stop() {
    List<String> intakeIds = intakes.stream().flatMap(List::stream).toList();
    Future<Void> chain = undeploy(intakeIds);
    for (int i = deployments.size() - 1; i >= 0; i--) {
      List<String> group = deployments.get(i);
      if (intakes.stream().noneMatch(intake -> intake == group)) { // by identity: two groups may hold equal lists
        List<String> ids = List.copyOf(group);
        chain = chain.eventually(() -> undeploy(ids));
      }
    }
    return chain.onComplete(ar -> {
      deployments.clear();
      intakes.clear();
    });
  }

  private Future<Void> undeploy(List<String> ids) {
    return Future.join(ids.stream().map(id -> vertx.undeploy(id).otherwise(e -> {
      LOG.warn("undeploying {} failed", id, e);
      return null;
    })).toList()).mapEmpty();
  }

  /**
   * SIGHUP: every credential file (send API keys, event tokens, htpasswd users, the admin token file) and the
   * STARTTLS pair are read again. A file with a bad line keeps its previous content, and says so in the log.
   * Blocking: called on the signal's thread. Returns how many sources could not be reloaded.
   */
  public int reloadCredentials() {
    int failed = 0;
    for (Reloadable<?> r : reloadable) {
      if (!r.reload()) {
        failed++;
      }
    }
    LOG.info("SIGHUP: {} of {} credential source(s) reloaded{}", reloadable.size() - failed, reloadable.size(),
        failed == 0 ? "" : "; the others keep their previous content (see the errors above)");
    return failed;
  }

  private static String localHostname() {
    try {
      return InetAddress.getLocalHost().getCanonicalHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }

  public int smtpPort() {
    return smtpPort;
  }

  public int httpPort() {
    return httpPort;
  }

  public int notifyClients() {
    return hub.clients();
  }

  public String adminToken() {
    return adminToken.get();
  }

  public DatabaseTarget ledgerTarget() {
    return ledger.target();
  }

  /** Whole-transaction retries of the ledger so far, by SQLSTATE (or "connection"). */
  public java.util.Map<String, Long> ledgerRetries() {
    return ledger.database().retries();
  }

  /** Known outcomes handed to the retry part because their settle failed. */
  public long handovers() {
    return handovers.get();
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /** What the retry part holds and did, and its journal's counters. */
  public RetryVerticle.Stats retryStats() {
    return retry.stats();
  }

  /** The retry part as the relay contract sees it (journal, hand-over): tests play the contract's part through it. */
  public dev.ledgerpost.relay.retry.OutcomeKeeper outcomeKeeper() {
    return retry;
  }

  /** Pending, oldest pending and stale gauges, for the metrics part. */
  public StaleGauges staleGauges() {
    return stale;
  }

  /** The ledger's size and disk gauges, and the readiness reason. */
  public CapacityGauges capacity() {
    return capacity;
  }

  /** The reconcile job's part on this node (docs/design.md §8.4). */
  public ReconcileVerticle reconcile() {
    return reconcile;
  }

  /** This node's id on the ledger. */
  public String nodeId() {
    return nodeId;
  }

  /** The webhook part: claim passes per endpoint, for tests that move the clock. */
  public WebhookVerticle webhooks() {
    return webhooks;
  }

  /** Which cluster jobs this node leads now. */
  public dev.ledgerpost.platform.cluster.Leadership leadership() {
    return node.leadership();
  }

  public GatewayConfig config() {
    return config;
  }
}
