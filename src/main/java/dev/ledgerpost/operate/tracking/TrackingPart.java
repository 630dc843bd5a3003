package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * Downstream tracking (docs/design.md §8.13). This slice reads the bounce classification rules before anything takes
 * mail (a bad {@code tracking.rulesFile} is a configuration error, one line a bad rule, exit status 2) and provides
 * the {@link Classifier} to what records tracking facts.
 */
public final class TrackingPart implements Part {
  @Override
  public String name() {
    return "tracking";
  }

  @Override
  public void prepare(Assembly a) {
    a.provide(Classifier.class, BounceRules.load(a.config().tracking().rulesFile()));
  }

  @Override
  public Future<Void> start(Assembly a) {
    return Future.succeededFuture();
  }
}
