package dev.ledgerpost.ledger;

import dev.ledgerpost.ledger.LedgerMessages.Ping;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.tenants.Tenants;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The ledger: the database started (embedded) or reached, the schema migrated, the writer of opens and settles and the
 * reads. First of all parts: nothing is taken before it is ready. Provides the {@link LedgerWriter}, the
 * {@link DatabaseTarget} and the one {@link Database} handle every part with SQL runs its statements over.
 */
public final class LedgerPart implements Part {
  /** How long readiness waits for the database's answer. */
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(3);

  private LedgerVerticle verticle;
  private Bus bus;

  @Override
  public String name() {
    return "ledger";
  }

  @Override
  public Future<Void> start(Assembly a) {
    bus = Bus.of(a.vertx());
    // The tenants part comes before: its file gives each open's quota limits, read anew for every statement.
    QuotaCounting quota = new QuotaCounting(a.get(Tenants.class), a.clock(), a.config().tenants().approachingAt());
    verticle = new LedgerVerticle(a.config().ledger(), a.nodeId(), a.metrics(), a.config().node().deadAfter(), quota);
    return a.deploy(verticle).onSuccess(x -> {
      a.provide(LedgerWriter.class, verticle.writer());
      a.provide(DatabaseTarget.class, verticle.target());
      a.provide(Database.class, verticle.database());
    });
  }

  /** Ready when the database answers a ping in time. */
  @Override
  public Optional<Readiness> readiness() {
    return Optional.of(() -> bus.request(LedgerMessages.PING, new Ping(), Ping.class, READY_TIMEOUT)
        .<Void>mapEmpty()
        .recover(e -> Future.failedFuture(new IllegalStateException("ledger database does not answer: " + e.getMessage(), e))));
  }

  /** Whole-transaction retries so far, by SQLSTATE (or "connection"). */
  public Map<String, Long> retries() {
    return verticle.database().retries();
  }

  /** Where the ledger lives. */
  public DatabaseTarget target() {
    return verticle.target();
  }
}
