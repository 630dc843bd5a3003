package dev.ledgerpost.relay;

import dev.ledgerpost.ledger.LedgerWriter;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.relay.retry.OutcomeKeeper;
import dev.ledgerpost.relay.resubmission.Resubmissions;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.relay.smarthost.DownstreamSlots;
import dev.ledgerpost.relay.smarthost.SmarthostHealth;
import dev.ledgerpost.relay.smarthost.Smarthosts;
import io.vertx.core.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The relay contract (docs/contract.md §1) over the ledger's writer and the retry part, and the smarthosts behind it:
 * one cap on connections and one health for the whole process. No verticle of its own: it runs on the intakes' event
 * loops. Provides {@link Smarthosts}, the one factory of relays.
 */
public final class RelayPart implements Part {
  private final AtomicLong handovers = new AtomicLong();

  @Override
  public String name() {
    return "relay";
  }

  @Override
  public Future<Void> start(Assembly a) {
    Resubmissions resubmissions = new Resubmissions(a.config().smtp().resubmission(), a.get(Database.class), a.nodeId(),
        a.metrics());
    RelayContract contract = new RelayContract(new RelayContract.Services(a.get(LedgerWriter.class), Bus.of(a.vertx()),
        a.get(OutcomeKeeper.class), a.metrics(), handovers, a.hostname(), resubmissions));
    a.provide(RelayContract.class, contract); // capture mode runs its transactions through the same contract
    DownstreamSlots slots = new DownstreamSlots(a.config().downstream().maxConnections());
    a.metrics().gauge("ledgerpost.downstream.connections",
        "Open smarthost connections, in use or idle (downstream.maxConnections)", slots::inUse);
    a.provide(Smarthosts.class, new Smarthosts(a.config().downstream(), a.hostname(), contract, slots,
        new SmarthostHealth(a.config().downstream(), a.clock())));
    return Future.succeededFuture();
  }

  /** Known outcomes handed to the retry part because their settle failed. */
  public long handovers() {
    return handovers.get();
  }
}
