package dev.ledgerpost.relay.retry;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.cluster.NodePart;
import dev.ledgerpost.platform.cluster.Settling;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * The retry part (docs/contract.md §1.5-§1.7): the outcome journal, and the settles it re-runs for outcomes whose own
 * settle failed. Provides the {@link OutcomeKeeper} the relay contract hands every known outcome to.
 */
public final class RetryPart implements Part {
  private RetryVerticle verticle;

  @Override
  public String name() {
    return "retry";
  }

  @Override
  public Future<Void> start(Assembly a) {
    verticle = new RetryVerticle(a.config().retry(), RetryVerticle.journalDir(a.config()));
    Bus bus = Bus.of(a.vertx());
    return a.deploy(verticle).onSuccess(x -> {
      a.provide(OutcomeKeeper.class, verticle);
      // Asked through the bus: the answer is read on this part's context, whatever context asks.
      a.get(NodePart.class).settlingFrom(timeout -> bus.request(RetryMessages.HELD, new RetryMessages.HeldQuery(),
          RetryMessages.HeldOutcomes.class, timeout).map(h -> new Settling.Marks(h.ids(), h.delivering())));
    });
  }

  @Override
  public void gauges(GatewayMetrics metrics) {
    metrics.gauge("ledgerpost.settle.backlog", "Known outcomes held by the retry part, not yet in the ledger", verticle::backlog);
  }

  /** The retry part as the relay contract sees it (journal, hand-over): tests play the contract's part through it. */
  public OutcomeKeeper keeper() {
    return verticle;
  }

  /** What the retry part holds and did, and its journal's counters. */
  public RetryVerticle.Stats stats() {
    return verticle.stats();
  }
}
