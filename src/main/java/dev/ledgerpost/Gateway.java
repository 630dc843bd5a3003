package dev.ledgerpost;

import dev.ledgerpost.api.ApiPart;
import dev.ledgerpost.intake.http.HttpIntakePart;
import dev.ledgerpost.relay.idempotency.IdempotencyStore;
import dev.ledgerpost.intake.smtp.SmtpPart;
import dev.ledgerpost.ledger.LedgerPart;
import dev.ledgerpost.operate.archive.ArchiveVerticle;
import dev.ledgerpost.operate.capacity.CapacityPart;
import dev.ledgerpost.operate.suppression.SuppressionVerticle;
import dev.ledgerpost.operate.quota.QuotaVerticle;
import dev.ledgerpost.operate.erasure.ErasureVerticle;
import dev.ledgerpost.operate.reconcile.ReconcilePart;
import dev.ledgerpost.operate.resolutions.ResolutionsPart;
import dev.ledgerpost.operate.retention.RetentionVerticle;
import dev.ledgerpost.operate.stats.StatsVerticle;
import dev.ledgerpost.operate.stale.StalePart;
import dev.ledgerpost.operate.standby.StandbyPart;
import dev.ledgerpost.operate.tracking.TrackingPart;
import dev.ledgerpost.platform.auth.AdminToken;
import dev.ledgerpost.platform.auth.AuthPart;
import dev.ledgerpost.platform.tenants.TenantsPart;
import dev.ledgerpost.platform.cluster.NodePart;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Reloadable;
import dev.ledgerpost.platform.observability.MicrometerGatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.publish.hub.HubPart;
import dev.ledgerpost.publish.outbox.OutboxVerticle;
import dev.ledgerpost.publish.webhook.WebhookPart;
import dev.ledgerpost.relay.RelayPart;
import dev.ledgerpost.relay.capture.CapturePart;
import dev.ledgerpost.relay.idempotency.IdempotencyVerticle;
import dev.ledgerpost.relay.retry.RetryPart;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running gateway: an ordered list of parts (docs/architecture.md), each started once the ones before it are
 * ready (credentials, the ledger, the node, ... the API, then SMTP, so no mail is taken before the ledger and the
 * outcome journal are ready) and stopped in reverse, the two intakes first and together.
 */
public final class Gateway {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);
  private final Vertx vertx;
  private final GatewayConfig config;
  private final List<Part> parts;
  /** Made at boot; it alone holds the metrics registry and the clock, which only the parts use. Null until then. */
  private volatile Assembly assembly;

  private Gateway(Vertx vertx, GatewayConfig config) {
    this.vertx = vertx;
    this.config = config;
    this.parts = parts(config);
  }

  /** The parts in start order; a part finds what the ones before it provide. */
  private static List<Part> parts(GatewayConfig config) {
    List<Part> parts = new ArrayList<>(List.of(new AuthPart(), new TenantsPart(), new LedgerPart(), IdempotencyVerticle.part(), new ResolutionsPart(),
        ErasureVerticle.part(), SuppressionVerticle.part(), QuotaVerticle.part()));
    if (config.observability().chaosEnabled()) { // in the tests' build and "mvn -Pchaos package" only (src/chaos)
      parts.add(Part.onClassPath("chaos", "chaos.enabled: this build has no chaos mode; test environments build one with "
          + "mvn -Pchaos package"));
    }
    parts.addAll(List.of(new NodePart(), OutboxVerticle.part(), ArchiveVerticle.part(), new RetryPart(), new RelayPart(), new CapturePart(), new StalePart(),
        new CapacityPart()));
    if (config.ledger().requireSynchronousStandby()) { // no gauge at all where nobody asked (docs/design.md §8.7)
      parts.add(new StandbyPart());
    }
    parts.addAll(List.of(new WebhookPart(), RetentionVerticle.part(), StatsVerticle.part(), new ReconcilePart(), new TrackingPart(), new HubPart(), new HttpIntakePart(),
        new ApiPart(), new SmtpPart()));
    return parts;
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
    Gateway g = new Gateway(vertx, config);
    return g.boot(registry, clock).map(g).recover(e -> g.stop().transform(x -> Future.failedFuture(e)));
  }

  /** Names and every part's files on a worker, before any part starts (node.id may need the host's name). */
  private Future<Void> boot(PrometheusMeterRegistry registry, Clock clock) {
    return vertx.executeBlocking(() -> {
          assembly = new Assembly(vertx, config, metrics(registry), clock, config.node().effectiveId(),
              config.smtp().hostname().isEmpty() ? localHostname() : config.smtp().hostname(), parts);
          assembly.provide(PrometheusMeterRegistry.class, registry);
          parts.forEach(part -> part.prepare(assembly));
          return null;
        })
        .compose(prepared -> {
          Future<Void> chain = Future.succeededFuture();
          for (Part part : parts) {
            chain = chain.compose(x -> part.start(assembly).onSuccess(y -> part.gauges(assembly.metrics())));
          }
          return chain;
        })
        .onSuccess(x -> LOG.info("Ledgerpost ready: node {}, SMTP port {}, HTTP port {} ({} SMTP and {} HTTP event loops), "
            + "relaying to {} (PID {}; SIGHUP reloads credentials)", nodeId(), smtpPort(), httpPort(),
            config.smtp().effectiveInstances(), config.http().effectiveInstances(), relayingTo(config.downstream()),
            ProcessHandle.current().pid()));
  }

  /** The gateway's meters; the per-user ones only when metrics.perUser asks for them (their labels are capped). */
  private MicrometerGatewayMetrics metrics(PrometheusMeterRegistry registry) {
    GatewayConfig.Observability o = config.observability();
    return new MicrometerGatewayMetrics(registry, o.metricsPerUser() ? o.metricsPerUserMax() : 0);
  }

  /** "127.0.0.1:2526", or "127.0.0.1:2526 (fallback 10.0.0.2:25, 10.0.0.3:25)". */
  private static String relayingTo(GatewayConfig.Downstream d) {
    return d.fallback().isEmpty() ? d.primary().toString() : d.primary() + " (fallback "
        + d.fallback().stream().map(Object::toString).collect(Collectors.joining(", ")) + ")";
  }

  /**
   * Stops both intakes first and at once (SMTP and the API, every instance, one grace for all: stopped one after
   * the other, the API admitted new sends for as long as SMTP's stop lasted, issue 26), then every other part's
   * verticles in the reverse order of their start.
   */
  public Future<Void> stop() {
    if (assembly == null) { // its host name was still being looked up
      return Future.succeededFuture();
    }
    Future<Void> chain = undeploy(assembly.intakeDeployments());
    for (List<String> group : assembly.otherDeploymentsReversed()) {
      chain = chain.eventually(() -> undeploy(group));
    }
    return chain.onComplete(ar -> assembly.clearDeployments());
  }

  private Future<Void> undeploy(List<String> ids) {
    return Future.join(ids.stream().map(id -> vertx.undeploy(id).otherwise(e -> {
      LOG.warn("undeploying {} failed", id, e);
      return null;
    })).toList()).mapEmpty();
  }

  /**
   * SIGHUP: every part's credential files (send API keys, event tokens, htpasswd users, the admin token file, webhook
   * secrets) and the STARTTLS pair are read again. A file with a bad line keeps its previous content, and says so in
   * the log. Blocking: called on the signal's thread. Returns how many sources could not be reloaded.
   */
  public int reloadCredentials() {
    Assembly booted = assembly;
    List<Reloadable<?>> reloadable = booted == null ? List.of() : booted.credentials();
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

  /** The part of this type: its own accessors (the retry part's counters, the ledger's target) are for tests and tools. */
  public <P extends Part> P part(Class<P> type) {
    return parts.stream().filter(type::isInstance).map(type::cast).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no part " + type.getSimpleName() + " in this gateway"));
  }

  public int smtpPort() {
    return part(SmtpPart.class).port();
  }

  public int httpPort() {
    return part(ApiPart.class).port();
  }

  public String adminToken() {
    return assembly.get(AdminToken.class).get();
  }

  /** This node's id on the ledger. */
  public String nodeId() {
    return assembly.nodeId();
  }

  public GatewayConfig config() {
    return config;
  }
}
