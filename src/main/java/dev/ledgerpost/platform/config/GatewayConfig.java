package dev.ledgerpost.platform.config;

import java.time.Duration;
import java.util.List;

/** The validated, typed configuration of one gateway. Built only by {@link ConfigLoader}. */
public record GatewayConfig(
    Smtp smtp, Http http, Downstream downstream, Ledger ledger, Auth auth, Api api, Delivery delivery, Notify notifications,
    Observability observability, Retry retry, Stale stale, Node node, Webhooks webhooks, Reconcile reconcile,
    Suppression suppression, Tenants tenants, Capture capture, Tracking tracking) {

  public enum StartTls { NONE, OPTIONAL, REQUIRED }

  /** After a message's verdict, its settle and its answer before the stop closes its client (docs/design.md §11.1). */
  public static final Duration STOP_ANSWER_MARGIN = Duration.ofSeconds(30);

  /**
   * The longest an intake's graceful stop takes (docs/design.md §11.1): {@code smtp.shutdownGrace} for transactions
   * in flight, then {@code downstream.dataTimeout} for a message whose final dot is already at the smarthost, then
   * {@link #STOP_ANSWER_MARGIN} to settle and answer it (the settle and the journal have bounds of their own).
   */
  public Duration intakeStopBound() {
    return smtp.shutdownGrace().plus(downstream.dataTimeout()).plus(STOP_ANSWER_MARGIN);
  }

  /** What a client hears when the downstream may or may not have taken the message (docs/contract.md §1.9). */
  public enum UnknownOutcomeReply { REPLY_451, REPLY_250 }

  public record Smtp(
      String host,
      int port,
      String hostname,
      long maxMessageSize,
      int maxRecipients,
      int maxConnections,
      Duration idleTimeout,
      Duration commandTimeout,
      List<Cidr> relayNetworks,
      boolean allowInsecureAuth,
      String tlsCertFile,
      String tlsKeyFile,
      Duration shutdownGrace,
      int maxConnectionsPerAddress,
      int minDataRate,
      Duration minDataRateGrace,
      int instances,
      Proxy proxy,
      Resubmission resubmission,
      boolean stripControlHeaders) {

    /** SMTP verticle instances: {@code smtp.instances}, or one per available processor when it is 0. */
    public int effectiveInstances() {
      return instances > 0 ? instances : Runtime.getRuntime().availableProcessors();
    }
  }

  /** Which PROXY protocol versions the SMTP listener reads (docs/architecture.md §4.2); NONE = no header is read. */
  public enum ProxyProtocol { NONE, V1, V2, ANY }

  /** {@code smtp.resubmission.mode}: recognise a client's retry of a message it already handed over, or not. */
  public enum ResubmissionMode { DETECT, OFF }

  /** {@code smtp.resubmission.unknown}: what a retry of a message whose outcome nobody knows gets. */
  public enum UnknownResubmission { HOLD, RELAY }

  /** {@code smtp.resubmission.mode}, {@code .window}, {@code .unknown} (docs/contract.md §1.13). */
  public record Resubmission(ResubmissionMode mode, Duration window, UnknownResubmission unknown) {
    public boolean detects() {
      return mode == ResubmissionMode.DETECT;
    }
  }

  /** {@code smtp.proxyProtocol}, {@code smtp.proxyNetworks}, {@code smtp.proxyTimeout}. */
  public record Proxy(ProxyProtocol protocol, List<Cidr> networks, Duration timeout) {
    /** True when a peer at this (socket) address must open with a PROXY header. */
    public boolean expectsHeaderFrom(String peer) {
      return protocol != ProxyProtocol.NONE && networks.stream().anyMatch(n -> n.contains(peer));
    }
  }

  public record Http(String host, int port, int instances) {

    /** HTTP API verticle instances: {@code http.instances}, or one per available processor when it is 0. */
    public int effectiveInstances() {
      return instances > 0 ? instances : Runtime.getRuntime().availableProcessors();
    }
  }

  public record Downstream(
      String host,
      int port,
      StartTls starttls,
      boolean tlsTrustAll,
      String username,
      String password,
      Duration connectTimeout,
      Duration replyTimeout,
      Duration dataTimeout,
      int maxIdle,
      Duration idleTtl,
      int maxConnections,
      List<Smarthost> fallback,
      Duration hostBackoff,
      Duration hostMaxBackoff) {

    /** The primary's route: every message takes it while the primary answers. */
    public String route() {
      return primary().route();
    }

    public Smarthost primary() {
      return new Smarthost(host, port);
    }

    /** Every smarthost in the order they are tried: {@code downstream.host:port}, then {@code downstream.fallback}. */
    public List<Smarthost> hosts() {
      List<Smarthost> all = new java.util.ArrayList<>(1 + fallback.size());
      all.add(primary());
      all.addAll(fallback);
      return List.copyOf(all);
    }
  }

  /** One smarthost. Its route is what a message relayed through it records (the SMTP session keeps one route per transaction). */
  public record Smarthost(String host, int port) {
    public String route() {
      return "smarthost:" + host + ":" + port;
    }

    @Override
    public String toString() {
      return host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
    }
  }

  /**
   * The ledger's database; {@code diskPath}, {@code diskLowPercent} and {@code sizeInterval} are for its size and disk
   * gauges (docs/design.md §8.5); {@code archiveDir} is where exports go (§5.13), empty = none; {@code erasureKey} /
   * {@code erasureKeyFile}: the erasure's hash key (§8.6), empty when not configured; {@code retention} and
   * {@code retentionWithoutArchive}: the retention of its weekly partitions (§5.12); {@code archiveKeyFile}: the key
   * that authenticates export manifests (§5.13), empty = generated next to the data directory;
   * {@code requireSynchronousStandby}: the check of its synchronous standbys (§8.7).
   */
  public record Ledger(String url, String dataDir, Duration lockTimeout, int poolSize, int embeddedPort, String diskPath,
      int diskLowPercent, Duration sizeInterval, String archiveDir, String erasureKey, String erasureKeyFile,
      Duration retention, boolean retentionWithoutArchive, String archiveKeyFile, boolean requireSynchronousStandby) {
    public boolean embedded() {
      return url == null || url.isBlank();
    }

    /** Where the database's file system can be seen from here: ledger.diskPath, else the embedded data dir, else none. */
    public java.util.Optional<java.nio.file.Path> disk() {
      if (!diskPath.isEmpty()) {
        return java.util.Optional.of(java.nio.file.Path.of(diskPath));
      }
      return embedded() ? java.util.Optional.of(java.nio.file.Path.of(dataDir)) : java.util.Optional.empty();
    }

    /** The archive directory, or null when exports are refused. */
    public java.nio.file.Path archivePath() {
      return archiveDir == null || archiveDir.isBlank() ? null : java.nio.file.Path.of(archiveDir);
    }
  }

  /** Who may use which MAIL FROM once authenticated. */
  public enum SenderPolicyMode { ANY, OWN }

  /**
   * The users file, the brute-force throttle (delay, ban threshold and window), the per-user message rate
   * (per minute, 0 = unlimited) and the sender policy.
   */
  public record Auth(String usersFile, Duration failureDelay, int banThreshold, Duration banWindow, int rateLimit,
      SenderPolicyMode senderPolicy, String sendersFile) {}

  /** The admin token, and the send API's keys file, default rate per key, and idempotency key retention. */
  public record Api(String adminToken, String keysFile, double rateLimit, Duration idempotencyRetention) {}

  /** Who may read GET /metrics. */
  public enum MetricsAccess { PUBLIC, TOKEN, OFF }

  public enum LogFormat { TEXT, JSON }

  /**
   * Metrics, logs, and the chaos endpoint for test environments. {@code metricsPerUser}: the opt-in per-user counters,
   * at most {@code metricsPerUserMax} user labels per node.
   */
  public record Observability(MetricsAccess metricsAccess, LogFormat logFormat, boolean chaosEnabled,
      boolean chaosAllowNonLoopback, boolean metricsPerUser, int metricsPerUserMax) {}

  public record Delivery(UnknownOutcomeReply unknownOutcomeReply) {}

  /** The outbox relay and the WebSocket hub. */
  public record Notify(Duration retention, Duration pollInterval, Duration pruneInterval, long sendQueueBytes,
      String tokensFile) {}

  /** The retry part and its outcome journal. An empty journalDir means {@code journal} next to the ledger's data dir. */
  public record Retry(String journalDir, long journalCompactSize, Duration initialBackoff, Duration maxBackoff,
      int concurrency) {}

  /** The stale-pending watch. */
  public record Stale(Duration scanInterval, Duration threshold) {}

  /**
   * This gateway among the nodes on one ledger (docs/design.md §9): its id (empty = the host's name, see
   * {@link #effectiveId}), how often it beats, and when the others take it for dead.
   */
  public record Node(String id, Duration heartbeatInterval, Duration deadAfter) {
    public String effectiveId() {
      if (!id.isEmpty()) {
        return id;
      }
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.net.UnknownHostException e) {
        host = "localhost";
      }
      String plain = host.replaceAll("[^A-Za-z0-9._-]", "-");
      return plain.length() > 63 ? plain.substring(0, 63) : plain;
    }
  }

  /**
   * Webhooks (docs/design.md §6.6): the endpoints, the retry schedule (the delay before each attempt, the first
   * normally 0), each attempt's timeout, the attempts in flight per endpoint across the cluster, and how often
   * each node looks for due deliveries; the rules of endpoints made through the API (their URLs, how many per user,
   * how long a replaced secret still signs); endpoint health (how long every attempt may fail before the endpoint is
   * disabled, the default rate limit in requests per second, 0 for none).
   */
  public record Webhooks(List<WebhookEndpoint> endpoints, List<Duration> retrySchedule, Duration timeout, int concurrency,
      Duration pollInterval, Duration retention, boolean allowHttp, boolean allowPrivateNetworks, int maxEndpointsPerUser,
      Duration rotationGrace, Duration disableAfter, int rateLimit) {}

  /** The events an endpoint may ask for. */
  public static final List<String> WEBHOOK_EVENTS = List.of("message.pending", "message.settled", "message.resolved",
      "message.stale", "message.resubmitted", "suppression.added", "suppression.removed", "message.attempt.exhausted",
      "endpoint.disabled", "quota.approaching", "quota.exceeded", "recipient.delivered", "recipient.deferred",
      "recipient.bounced");

  /**
   * One webhook endpoint of the configuration file (the API's own endpoints are rows, docs/design.md §6.6). {@code secrets} are inline
   * {@code whsec_} secrets; {@code secretFile} (absolute once loaded) holds them one a line instead. {@code user}
   * null: every user's messages. {@code tags}: only the events of messages carrying one of them (docs/data-model.md §5.17);
   * empty: every message's.
   */
  public record WebhookEndpoint(String name, String url, List<String> secrets, String secretFile, List<String> events,
      String user, List<String> tags) {
    public WebhookEndpoint {
      tags = tags == null ? List.of() : List.copyOf(tags);
    }

    public WebhookEndpoint(String name, String url, List<String> secrets, String secretFile, List<String> events, String user) {
      this(name, url, secrets, secretFile, events, user, List.of());
    }

    /** Never the secrets: a record's own toString would print them into a log. */
    @Override
    public String toString() {
      return "WebhookEndpoint[" + name + " " + url + " events=" + events + (user == null ? "" : " user=" + user)
          + (tags.isEmpty() ? "" : " tags=" + tags) + "]";
    }
  }

  /** Whether the reconcile job resolves exact proposals itself (docs/design.md §8.4). */
  public enum AutoResolve { NEVER, EXACT }

  /** The kinds of evidence source {@code reconcile.sources} may name. */
  public enum SourceType {
    POSTFIX_LOG("postfix-log"), LEDGERPOST("ledgerpost");

    private final String label;

    SourceType(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /**
   * One evidence source: a Postfix mail log ({@code path}, its rotated siblings too; {@code zone} for timestamps
   * without an offset) or a downstream Ledgerpost ({@code url}, {@code token}). {@code name} is what proposals and
   * the resolutions they make ({@code reconcile:<name>}) call it.
   */
  public record ReconcileSource(String name, SourceType type, String path, java.time.ZoneId zone, String url, String token) {
    @Override
    public String toString() {
      return name + " (" + type.label() + (path != null ? " " + path : "") + (url != null ? " " + url : "") + ")";
    }
  }

  /**
   * The reconcile job: its sources, how often it looks, whether it resolves exact proposals itself, the time window
   * around a row's received_at in which evidence counts, and from what age a PENDING row is looked at.
   */
  public record Reconcile(List<ReconcileSource> sources, Duration interval, AutoResolve autoResolve, Duration window,
      Duration pendingAge) {}

  /**
   * The suppression list (docs/design.md §8.8): how long an entry applies unless it says otherwise (per category where
   * {@code categoryTtl} names it), and how often each
   * node looks whether the list changed (the bound on how late another node's change applies here); how many 5.1.x
   * refusals by the smarthost within {@code refusalWindow} add an address (0: none), and how long refused recipients
   * are kept; the bounce categories whose hard bounce adds its recipient (empty: none).
   */
  public record Suppression(Duration ttl, java.util.Map<String, Duration> categoryTtl, Duration refreshInterval,
      int refusalThreshold, Duration refusalWindow, Duration refusalRetention, java.util.List<String> bounceCategories) {
    /** How long an entry of {@code category} (null: none) applies unless it names its own expiry. */
    public Duration ttlOf(String category) {
      return category == null ? ttl : categoryTtl.getOrDefault(category, ttl);
    }
  }

  /**
   * The tenants file (docs/design.md §8.9): each user's quotas and whether its mail is captured; empty = none.
   * {@code approachingAt}: the fraction of an hourly or daily quota at which quota.approaching is written;
   * {@code refreshInterval}: how often each node reads the counters for its early refusal at MAIL.
   */
  public record Tenants(String file, double approachingAt, Duration refreshInterval) {}

  /**
   * Capture mode (docs/design.md §8.10): the largest message a captured user or send key may have kept, and how long its
   * bytes are kept.
   */
  public record Capture(long maxMessageSize, Duration retention) {}

  /**
   * Downstream tracking (docs/design.md §8.13): the operator's bounce classification rules, tried before the shipped
   * ones (empty: none); the Postfix log this node follows (empty: none) and how often it reads it; whether a returned
   * DSN that matched one of our rows is relayed on to the sender as well ("Returned DSNs"); whether the downstream
   * Ledgerpost of {@code reconcile.sources} is asked for its facts, how often, and back to what age of our rows.
   */
  public record Tracking(String rulesFile, String postfixLog, Duration pollInterval, boolean relayDsns,
      boolean downstreamLedgerpost, Duration downstreamInterval, Duration downstreamHorizon) {}
}
