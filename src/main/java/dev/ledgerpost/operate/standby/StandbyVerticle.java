package dev.ledgerpost.operate.standby;

import dev.ledgerpost.operate.standby.StandbyMessages.StandbyQuery;
import dev.ledgerpost.operate.standby.StandbyMessages.Standbys;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the ledger has a synchronous standby (issue 29; docs/design.md §8.7), for {@code
 * ledger.requireSynchronousStandby}: once before the gateway takes mail, then every {@code node.heartbeatInterval}, it
 * asks its {@link StandbyStore} how many standbys pg_stat_replication shows in {@code sync} or {@code quorum} state.
 * The gauge and readiness read the last answer, so neither waits for the database.
 *
 * <p>A timer of its own at the heartbeat's interval, not a step of the node's heartbeat: that heartbeat runs on the
 * node's lock connection, and a statement there that is slow or refused fences the node's jobs
 * ({@code platform.cluster.NodeVerticle}); a monitoring read must never do that.
 *
 * <p>No standby is a remark on readiness, never "not ready": PostgreSQL itself holds every commit while
 * {@code synchronous_standby_names} asks for a standby that is missing, and where it does not (no names, or a
 * standby that fell back to async) the gateway still keeps its promise on one server; a load balancer that took it
 * out would refuse mail and protect nothing. The log says so once per change, not once per heartbeat.
 */
public final class StandbyVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(StandbyVerticle.class);
  /** A check that has not answered by then counts as not read; the next heartbeat asks again. */
  static final Duration QUERY_TIMEOUT = Duration.ofSeconds(5);
  static final String NO_STANDBY = "the ledger has no synchronous standby (no pg_stat_replication row in sync or quorum"
      + " state), so a commit it acknowledges exists on one server only";
  static final String CANNOT_TELL = "cannot tell whether the ledger has a synchronous standby: ";

  /** What the last check found: a count, or ({@code standbys} -1) why there is none. */
  record Finding(long standbys, String unknownBecause) {
    boolean known() {
      return standbys >= 0;
    }
  }

  private final Duration interval;
  /** Where its SQL ({@link StandbyStore}) runs, on this verticle's context. */
  private final Database db;
  /** Null until the first check answers; read by the gauge and readiness from any thread. */
  private volatile Finding finding;
  private long timer = -1;
  private boolean checking;

  public StandbyVerticle(Duration interval, Database db) {
    this.interval = interval;
    this.db = db;
  }

  @Override
  public Future<?> start() {
    new StandbyStore(db, Bus.of(vertx));
    return check().onSuccess(v -> timer = vertx.setPeriodic(interval.toMillis(), t -> check()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }

  /** One check; never overlaps itself, never fails (a failure is a finding: unknown, and why). */
  Future<Void> check() {
    if (checking) {
      return Future.succeededFuture();
    }
    checking = true;
    return Bus.of(vertx).request(StandbyMessages.COUNT, new StandbyQuery(), Standbys.class, QUERY_TIMEOUT)
        .map(StandbyVerticle::finding)
        .otherwise(e -> new Finding(-1, CANNOT_TELL + "pg_stat_replication was not read (" + e.getMessage() + ")"))
        .onSuccess(this::found)
        .<Void>mapEmpty()
        .onComplete(ar -> checking = false);
  }

  private static Finding finding(Standbys s) {
    if (!s.visible()) {
      return new Finding(-1, CANNOT_TELL + "the ledger's role " + s.role() + " may not see pg_stat_replication's"
          + " sync_state (only superusers and members of pg_read_all_stats may); GRANT pg_monitor TO " + s.role());
    }
    return new Finding(s.synchronous(), null);
  }

  /** Keeps the finding; one log line when it changes what an operator should know, none while it stays. */
  private void found(Finding now) {
    Finding before = finding;
    finding = now;
    if (now.known()) {
      boolean wasNone = before != null && before.known() && before.standbys() == 0;
      if (now.standbys() == 0 && !wasNone) {
        LOG.warn("{}; mail is still taken (ledger.requireSynchronousStandby; docs/design.md §8.7)", NO_STANDBY);
      } else if (now.standbys() > 0 && before != null && (wasNone || !before.known())) {
        LOG.info("the ledger has {} synchronous standby(s): a commit it acknowledges is on more than one server again",
            now.standbys());
      }
    } else if (before == null || before.known()) {
      LOG.warn("{}", now.unknownBecause());
    }
  }

  /** The standbys in sync or quorum state at the last check; NaN before it, or when it could not tell. */
  public double standbys() {
    Finding f = finding;
    return f == null || !f.known() ? Double.NaN : f.standbys();
  }

  /** Why a ready gateway is not all well here: no synchronous standby, or no way to tell; empty when there is one. */
  public Optional<String> readinessRemark() {
    Finding f = finding;
    if (f == null || f.known() && f.standbys() > 0) {
      return Optional.empty();
    }
    return Optional.of(f.known() ? NO_STANDBY : f.unknownBecause());
  }
}
