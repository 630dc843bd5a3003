package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.suppression.BounceFeed;
import dev.ledgerpost.platform.cluster.NodeServices;
import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.nio.file.Path;
import java.util.List;

/**
 * Downstream tracking (docs/design.md §8.13): reads the bounce classification rules before anything takes mail (a bad
 * {@code tracking.rulesFile} is a configuration error, one line a bad rule, exit status 2), and deploys
 * {@link TrackingVerticle}: the facts' reads and retention, and where {@code tracking.postfixLog} names a file, its
 * follower; with {@code tracking.downstreamLedgerpost}, {@link DownstreamVerticle}, which asks the downstream Ledgerpost
 * of {@code reconcile.sources} for its facts.
 */
public final class TrackingPart implements Part {
  private Classifier classifier;
  private TrackingVerticle verticle;
  private DownstreamVerticle downstream;

  @Override
  public String name() {
    return "tracking";
  }

  @Override
  public void prepare(Assembly a) {
    classifier = BounceRules.load(a.config().tracking().rulesFile());
    checkBounceCategories(a.config().suppression().bounceCategories());
    checkDownstream(a.config());
    a.provide(Classifier.class, classifier);
  }

  /**
   * {@code suppression.bounceCategories} names categories of the classifier's (docs/design.md §8.8), or the start stops
   * (a configuration error, exit status 2): a misspelt one would silently feed nothing.
   */
  static void checkBounceCategories(List<String> categories) {
    List<String> unknown = categories.stream().filter(c -> Category.of(c) == null).toList();
    if (!unknown.isEmpty()) {
      throw new ConfigException(List.of("suppression.bounceCategories: " + String.join(", ", unknown)
          + (unknown.size() == 1 ? " is not a bounce category" : " are not bounce categories") + " (" + Category.labels() + ")"));
    }
  }

  /**
   * {@code tracking.downstreamLedgerpost} asks the downstream of {@code reconcile.sources}: without one the start stops (a
   * configuration error, exit status 2), as nothing would ever be asked.
   */
  static void checkDownstream(GatewayConfig config) {
    if (config.tracking().downstreamLedgerpost() && ledgerposts(config).isEmpty()) {
      throw new ConfigException(List.of("tracking.downstreamLedgerpost: true needs a reconcile.sources entry of type ledgerpost"
          + " (the downstream's url and admin token)"));
    }
  }

  /** The downstream Ledgerposts {@code reconcile.sources} names: where tracking asks for facts. */
  static List<GatewayConfig.ReconcileSource> ledgerposts(GatewayConfig config) {
    return config.reconcile().sources().stream().filter(s -> s.type() == GatewayConfig.SourceType.LEDGERPOST).toList();
  }

  /** Where a log is followed: the age of the oldest relayed row without news (docs/design.md §8.13). */
  @Override
  public void gauges(GatewayMetrics metrics) {
    if (verticle != null && verticle.follows()) {
      metrics.gauge("ledgerpost.tracking.oldest.without.news.age.seconds",
          "Age of the oldest relayed (SENT) ledger entry without any tracking fact", verticle::oldestWithoutNewsSeconds);
    }
  }

  @Override
  public Future<Void> start(Assembly a) {
    GatewayConfig.Tracking config = a.config().tracking();
    Path log = config.postfixLog().isEmpty() ? null : Path.of(config.postfixLog());
    verticle = new TrackingVerticle(log, config.pollInterval(), a.config().ledger().retention(), a.get(Database.class),
        classifier, a.nodeId(), a.clock(), new BounceFeed(a.config().suppression(), a.clock()), config.relayDsns());
    Future<Void> deployed = a.deploy(verticle);
    if (!config.downstreamLedgerpost()) {
      return deployed;
    }
    downstream = new DownstreamVerticle(a.get(NodeServices.class), a.get(Database.class), classifier,
        new BounceFeed(a.config().suppression(), a.clock()), a.config().ledger().retention(), ledgerposts(a.config()));
    return deployed.compose(v -> a.deploy(downstream));
  }

  /** The downstream Ledgerpost follower on this node (null without tracking.downstreamLedgerpost), for tests. */
  DownstreamVerticle downstream() {
    return downstream;
  }
}
