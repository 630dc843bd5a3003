package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.nio.file.Path;

/**
 * Downstream tracking (docs/design.md §8.13): reads the bounce classification rules before anything takes mail (a bad
 * {@code tracking.rulesFile} is a configuration error, one line a bad rule, exit status 2), and deploys
 * {@link TrackingVerticle}: the facts' reads and retention, and where {@code tracking.postfixLog} names a file, its
 * follower.
 */
public final class TrackingPart implements Part {
  private Classifier classifier;

  @Override
  public String name() {
    return "tracking";
  }

  @Override
  public void prepare(Assembly a) {
    classifier = BounceRules.load(a.config().tracking().rulesFile());
    a.provide(Classifier.class, classifier);
  }

  @Override
  public Future<Void> start(Assembly a) {
    GatewayConfig.Tracking config = a.config().tracking();
    Path log = config.postfixLog().isEmpty() ? null : Path.of(config.postfixLog());
    return a.deploy(new TrackingVerticle(log, config.pollInterval(), a.config().ledger().retention(),
        a.get(Database.class), classifier, a.nodeId(), a.clock()));
  }
}
