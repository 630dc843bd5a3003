package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.nio.file.Path;

/**
 * Downstream tracking (docs/design.md §8.13): reads the bounce classification rules before anything takes mail (a bad
 * {@code tracking.rulesFile} is a configuration error, one line a bad rule, exit status 2), and where
 * {@code tracking.postfixLog} names a file, deploys its follower ({@link TrackingVerticle}).
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
    if (config.postfixLog().isEmpty()) {
      return Future.succeededFuture();
    }
    return a.deploy(new TrackingVerticle(Path.of(config.postfixLog()), config.pollInterval(), a.config().ledger().retention(),
        a.get(Database.class), classifier, a.nodeId(), a.clock()));
  }
}
