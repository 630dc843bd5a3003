package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.operate.capacity.CapacityGauges;
import dev.ledgerpost.operate.stale.PendingHistory;
import dev.ledgerpost.operate.stale.StaleGauges;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import java.util.Optional;

/**
 * What an operator reads and decides (docs/design.md §8.2, §8.3): the stale list, the attention list with the stale
 * watch's gauges and their last hour, single and bulk resolutions, and the ledger's messages with their proposals.
 */
public final class ResolutionsPart implements Part {
  private Assembly assembly;

  @Override
  public String name() {
    return "resolutions";
  }

  @Override
  public Future<Void> start(Assembly a) {
    assembly = a;
    return a.deploy(new ResolutionsVerticle(a.get(Database.class)));
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    Bus bus = Bus.of(api.vertx());
    // The stale watch and the capacity watch start after this part (their passes resolve nothing): asked for here.
    OperatorViews views = new OperatorViews(assembly.get(StaleGauges.class), assembly.get(PendingHistory.class),
        assembly.get(CapacityGauges.class));
    return Optional.of(HttpFace.admin((Router router) -> {
      new OperatorApi(bus).mount(router); // before /messages/:id, which would take "stale" for an id
      new AttentionApi(bus, views).mount(router);
      new BulkResolutions(bus).mount(router);
      new MessagesApi(bus).mount(router);
    }));
  }
}
