package dev.ledgerpost.operate.resolutions;

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
  private OperatorViews views;

  @Override
  public String name() {
    return "resolutions";
  }

  @Override
  public Future<Void> start(Assembly a) {
    views = new OperatorViews(a.get(StaleGauges.class), a.get(PendingHistory.class), a.get(CapacityGauges.class));
    return Future.succeededFuture();
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    Bus bus = Bus.of(api.vertx());
    return Optional.of(HttpFace.admin((Router router) -> {
      new OperatorApi(bus).mount(router); // before /messages/:id, which would take "stale" for an id
      new AttentionApi(bus, views).mount(router);
      new BulkResolutions(bus).mount(router);
      new MessagesApi(bus).mount(router);
    }));
  }
}
