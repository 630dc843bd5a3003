package dev.ledgerpost.platform.cluster;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Durations;
import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.db.DatabaseTarget;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.observability.ThrottledWarning;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This gateway as one node of the gateways on one ledger (docs/design.md §9). A connection of its own, not
 * the pool's, holds the node's identity lock (two live processes never share a node.id) and the advisory locks
 * of the single-active jobs it leads. Every {@code node.heartbeatInterval} it renews the node's heartbeat row
 * (with the outcomes its retry part holds, so that no other node's stale watch raises them) and tries to take
 * the jobs nobody holds.
 *
 * <p>Fencing: a lock connection that fails, closes, or does not answer within {@link #ANSWER_TIMEOUT} is
 * given up, and with it every job, at once. The server is told (by the connection's own settings,
 * {@link #SERVER_KEEPALIVE}) to end a session it cannot reach after about {@link #SERVER_DROP}, which is
 * longer than the time this node needs to notice ({@code node.heartbeatInterval} + {@link #ANSWER_TIMEOUT},
 * at most 15 s): a node cut off from the database has stopped its jobs before another can take their locks.
 *
 * <p>Take-over from a frozen holder: a process that is stopped (SIGSTOP, a long GC pause, a paused VM) keeps its
 * session, because its kernel still answers TCP keepalives, and with it its locks, for as long as the freeze lasts.
 * So a node that cannot take a job asks who holds it: a holder whose heartbeat is older than {@code node.deadAfter}
 * has its lock session ended ({@code pg_terminate_backend}, one WARN line per take-over), and the jobs are taken at
 * once. The holder's own lease ({@link Leading}) ran out at the same age, so it stopped acting before; woken, it finds
 * its connection closed and fences as above.
 */
public final class NodeVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(NodeVerticle.class);
  /** A lock connection that does not answer a heartbeat within this is given up (fencing). */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);
  /** Bounds a half-open lock session on the server: 10 s idle, then 4 probes 5 s apart; unacknowledged data 30 s. */
  static final Map<String, String> SERVER_KEEPALIVE = Map.of(
      "tcp_keepalives_idle", "10",
      "tcp_keepalives_interval", "5",
      "tcp_keepalives_count", "4",
      "tcp_user_timeout", "30000");
  /** What {@link #SERVER_KEEPALIVE} adds up to: the documented bound for a lock whose holder was cut off. */
  public static final Duration SERVER_DROP = Duration.ofSeconds(30);

  private static final String IDENTITY = "SELECT pg_try_advisory_lock(%d, hashtext($1))".formatted(Job.NODE_LOCK_CLASS);
  private static final String HOLDER = "SELECT pid, hostname, extract(epoch FROM now() - heartbeat_at)::int AS age FROM nodes WHERE id = $1";
  /**
   * Held marks of an earlier run stay until the first heartbeat: the restarted retry part holds them again. Its
   * deliveries do not: they ended with that process.
   */
  private static final String REGISTER = """
      INSERT INTO nodes (id, hostname, pid, started_at, heartbeat_at) VALUES ($1, $2, $3, now(), now())
      ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, pid = EXCLUDED.pid, started_at = now(),
                                     heartbeat_at = now(), stopped_at = NULL, jobs = '{}', delivering = '{}'""";
  /** $3 ($4) is null when the held outcomes (the rows in delivery) did not change since the last heartbeat. */
  private static final String BEAT = """
      UPDATE nodes SET heartbeat_at = now(), jobs = $2, held = coalesce($3, held), delivering = coalesce($4, delivering)
       WHERE id = $1""";
  private static final String TAKE = "SELECT j, pg_try_advisory_lock(%d, j) AS taken FROM unnest($1::int[]) AS j".formatted(Job.LOCK_CLASS);
  private static final String LEAVE = """
      UPDATE nodes SET stopped_at = now(), heartbeat_at = now(), jobs = '{}', held = '{}', delivering = '{}' WHERE id = $1""";
  /**
   * Ends the lock session of every other node of this ledger whose heartbeat is older than $2 seconds
   * (node.deadAfter) and that holds a job lock: its session is the one holding its identity lock, in this database.
   * The row lock (SKIP LOCKED) lets one node end a session, and a heartbeat that commits meanwhile saves it; the
   * wait (at most $3 ms) is for the session to be gone, with its locks, when the statement returns.
   */
  private static final String END_STALE = """
      WITH stale AS (
        SELECT n.id, n.pid AS process, n.hostname, l.pid AS backend,
               round(extract(epoch FROM now() - n.heartbeat_at), 1)::float8 AS age
          FROM nodes n
          JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                         AND l.classid = %d AND l.objid = hashtext(n.id)::oid
         WHERE n.id <> $1 AND n.stopped_at IS NULL AND n.heartbeat_at < now() - make_interval(secs => $2)
           AND l.pid <> pg_backend_pid()
           AND EXISTS (SELECT 1 FROM pg_locks j WHERE j.pid = l.pid AND j.locktype = 'advisory' AND j.granted
                                                 AND j.objsubid = 2 AND j.classid = %d)
           FOR UPDATE OF n SKIP LOCKED)
      SELECT id, process, hostname, backend, age, pg_terminate_backend(backend, $3) AS ended FROM stale"""
      .formatted(Job.NODE_LOCK_CLASS, Job.LOCK_CLASS);
  /** How long ending a stale session may wait for it to be gone: well inside {@link #ANSWER_TIMEOUT}. */
  static final Duration END_WAIT = Duration.ofSeconds(1);

  private final String nodeId;
  private final String hostname;
  private final GatewayConfig.Node config;
  private final DatabaseTarget target;
  private final GatewayMetrics metrics;
  /** Each lock connection's own pool of one (see {@link #connect}). */
  private final Map<SqlConnection, Pool> sessions = new HashMap<>();
  private final Leading leading = new Leading();
  private SqlConnection conn;
  /** The node's identity lock is held on {@link #conn}: only then may it take jobs. */
  private boolean identified;
  private boolean ticking;
  private boolean stopping;
  private long timer = -1;
  /** Who says what this node is settling (the retry part, once it runs); read on this verticle's context. */
  private volatile Settling settling = Settling.UNKNOWN;
  private Set<UUID> lastHeld;
  private Set<UUID> lastDelivering;
  /** A problem that repeats every tick while it lasts: one line a minute. */
  private final ThrottledWarning problems = new ThrottledWarning(LOG);

  public NodeVerticle(String nodeId, String hostname, GatewayConfig.Node config, DatabaseTarget target, GatewayMetrics metrics) {
    this.nodeId = nodeId;
    this.hostname = hostname;
    this.config = config;
    this.target = target;
    this.metrics = metrics;
  }

  /** The jobs this node leads, for the parts that run them. */
  public Leadership leadership() {
    return leading;
  }

  @Override
  public Future<?> start() {
    for (Job job : Job.values()) {
      metrics.gauge("ledgerpost.node.leads", "1 while this node holds the cluster job (docs/design.md §9.2)", "job", job.label(),
          () -> leading.leads(job) ? 1 : 0);
    }
    return connect()
        .compose(c -> identify(c).compose(mine -> {
          if (!mine) {
            return refuse(c);
          }
          return c.preparedQuery(REGISTER).execute(Tuple.of(nodeId, hostname, ProcessHandle.current().pid())).map(c);
        }))
        .compose(c -> {
          adopt(c);
          timer = vertx.setPeriodic(config.heartbeatInterval().toMillis(), t -> tick());
          return tick();
        })
        .onSuccess(x -> LOG.info("node {} joined the ledger (leads {})", nodeId, labels(leading.jobs())));
  }

  /** Another live process holds this node.id: one line naming it, and no start. */
  private Future<SqlConnection> refuse(SqlConnection c) {
    return c.preparedQuery(HOLDER).execute(Tuple.of(nodeId)).transform(ar -> {
      end(c);
      String who = "";
      if (ar.succeeded() && ar.result().size() > 0) {
        Row r = ar.result().iterator().next();
        who = " (PID " + r.getLong("pid") + " on " + r.getString("hostname") + ", heartbeat " + r.getInteger("age") + " s ago)";
      }
      return Future.failedFuture(new StartFailure("node.id " + nodeId + ": another live gateway on this ledger uses this node id"
          + who + "; give each gateway its own node.id", null));
    });
  }

  /**
   * A session of its own. Vert.x 5 takes TCP options only through a client builder, so the session comes from a
   * pool of one that belongs to it alone: closing that pool is what ends the session (and frees its locks);
   * handing the connection back would keep them.
   */
  private Future<SqlConnection> connect() {
    PgConnectOptions options = new PgConnectOptions(target.options());
    Map<String, String> props = new HashMap<>(options.getProperties());
    props.putAll(SERVER_KEEPALIVE);
    props.put("application_name", "ledgerpost node " + nodeId);
    options.setProperties(props);
    options.setReconnectAttempts(0);
    Pool session = PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(1))
        .with(new NetClientOptions().setTcpKeepAlive(true).setConnectTimeout((int) ANSWER_TIMEOUT.toMillis()))
        .connectingTo(options)
        .using(vertx)
        .build();
    return session.getConnection()
        .onSuccess(c -> sessions.put(c, session))
        .onFailure(e -> session.close());
  }

  /** Ends a lock session on the server: its pool goes, and the connection with it. */
  private Future<Void> end(SqlConnection c) {
    Pool session = sessions.remove(c);
    return session == null ? Future.succeededFuture() : session.close();
  }

  private Future<Boolean> identify(SqlConnection c) {
    return c.preparedQuery(IDENTITY).execute(Tuple.of(nodeId)).map(rows -> rows.iterator().next().getBoolean(0));
  }

  private void adopt(SqlConnection c) {
    conn = c;
    identified = true;
    c.closeHandler(v -> {
      if (conn == c) {
        fence("the lock connection closed");
      }
    });
    c.exceptionHandler(e -> {
      if (conn == c) {
        fence("the lock connection failed: " + e.getMessage());
      }
    });
  }

  /** One heartbeat: reconnect if needed, renew the row, take free jobs. Never overlaps itself. */
  Future<Void> tick() {
    if (stopping || ticking) {
      return Future.succeededFuture();
    }
    ticking = true;
    if (conn == null) {
      return reconnect().onComplete(ar -> ticking = false);
    }
    SqlConnection c = conn;
    long deadline = vertx.setTimer(ANSWER_TIMEOUT.toMillis(), t -> {
      if (conn == c) {
        fence("the lock connection did not answer within " + ANSWER_TIMEOUT.toSeconds() + " s");
      }
    });
    return held()
        .compose(marks -> {
          long sent = System.nanoTime(); // the lease counts from before the row's heartbeat_at, never after it
          return c.preparedQuery(BEAT).execute(Tuple.of(nodeId, labels(leading.jobs()).toArray(new String[0]),
                  marks.held() == null ? null : marks.held().toArray(new UUID[0]),
                  marks.delivering() == null ? null : marks.delivering().toArray(new UUID[0])))
              .map(x -> {
                if (marks.held() != null) {
                  lastHeld = marks.held();
                }
                if (marks.delivering() != null) {
                  lastDelivering = marks.delivering();
                }
                if (conn == c) {
                  leading.renew(sent, config.deadAfter());
                }
                return null;
              });
        })
        .compose(x -> take(c))
        .compose(missing -> missing.isEmpty() ? Future.<Boolean>succeededFuture(false) : endStale(c))
        .compose(ended -> ended ? take(c).<Void>mapEmpty() : Future.<Void>succeededFuture())
        .transform(ar -> {
          vertx.cancelTimer(deadline);
          if (conn == c) {
            ticking = false;
            if (ar.failed()) {
              fence("the lock connection failed: " + ar.cause().getMessage());
            }
          }
          return Future.succeededFuture();
        });
  }

  private Future<Void> reconnect() {
    return connect().compose(c -> identify(c).compose(mine -> {
      if (!mine) {
        end(c);
        problems.warn("node.id {} is held by another live process on this ledger; this node takes no job until it is free", nodeId);
        return Future.succeededFuture();
      }
      adopt(c);
      LOG.info("node {}: lock connection back", nodeId);
      return Future.<Void>succeededFuture();
    }), e -> {
      problems.warn("node {}: cannot open the lock connection ({}); its jobs wait for it", nodeId, e.getMessage());
      return Future.succeededFuture();
    });
  }

  /**
   * Asks for the lock of every job this node does not hold; those granted are its own from now. Answers the jobs it
   * asked for and did not get (another session holds them), empty when it holds every job or takes none now.
   */
  private Future<List<Job>> take(SqlConnection c) {
    if (!identified) {
      return Future.succeededFuture(List.of());
    }
    List<Integer> keys = new ArrayList<>();
    for (Job j : Job.values()) {
      if (!leading.jobs().contains(j)) { // held, not leads(): a lease that ran out does not free a lock
        keys.add(j.key);
      }
    }
    if (keys.isEmpty()) {
      return Future.succeededFuture(List.of());
    }
    return c.preparedQuery(TAKE).execute(Tuple.of(keys.toArray(new Integer[0]))).map(rows -> {
      if (conn != c) {
        return List.of(); // fenced meanwhile: the session is closing, and with it these locks
      }
      List<Job> gained = new ArrayList<>();
      List<Job> missing = new ArrayList<>();
      for (Row r : rows) {
        (r.getBoolean("taken") ? gained : missing).add(byKey(r.getInteger("j")));
      }
      if (!gained.isEmpty()) {
        LOG.info("node {} now leads {}", nodeId, labels(gained));
        leading.gain(gained);
      }
      return missing;
    });
  }

  /**
   * Ends the lock session of every holder whose heartbeat is older than {@code node.deadAfter} (see the class
   * comment); answers whether it ended one, so that its jobs are taken in this heartbeat. A failure (a role that may
   * not end the other's session) is logged and leaves the jobs where they are: this node's own lock session is fine.
   */
  private Future<Boolean> endStale(SqlConnection c) {
    double deadAfter = config.deadAfter().toMillis() / 1000.0;
    return c.preparedQuery(END_STALE).execute(Tuple.of(nodeId, deadAfter, END_WAIT.toMillis())).map(rows -> {
      boolean ended = false;
      for (Row r : rows) {
        String who = "node " + r.getString("id") + " (PID " + r.getLong("process") + " on " + r.getString("hostname")
            + ", database session " + r.getInteger("backend") + ")";
        if (r.getBoolean("ended")) {
          ended = true;
          LOG.warn("node {} ended the lock session of {}: its heartbeat is {} s old, older than node.deadAfter ({}), so it is"
              + " frozen or cut off while PostgreSQL still keeps its locks; its jobs go to a live node", nodeId, who,
              r.getDouble("age"), Durations.format(config.deadAfter()));
        } else {
          problems.warn("node {} could not end the lock session of {} within {} ms; its jobs wait for it", nodeId, who,
              END_WAIT.toMillis());
        }
      }
      return ended;
    }).recover(e -> {
      problems.warn("node {}: cannot end the lock session of a node whose heartbeat is older than node.deadAfter ({}); its jobs"
          + " wait for that node or for PostgreSQL to drop its session", nodeId, e.getMessage());
      return Future.succeededFuture(false);
    });
  }

  /** Stops every job now and drops the connection (its session, and with it the locks, end on the server). */
  private void fence(String reason) {
    SqlConnection c = conn;
    conn = null;
    identified = false;
    ticking = false;
    if (!leading.jobs().isEmpty() && !leading.leased()) {
      reason += "; its last heartbeat is older than node.deadAfter (" + Durations.format(config.deadAfter())
          + "), so another node may have taken its jobs, and it had stopped acting on them";
    }
    if (!leading.jobs().isEmpty()) {
      LOG.warn("node {} stops leading {}: {}", nodeId, labels(leading.jobs()), reason);
    } else {
      problems.warn("node {}: {}", nodeId, reason);
    }
    leading.loseAll();
    lastHeld = null; // the next connection writes them again
    lastDelivering = null;
    if (c != null) {
      end(c);
    }
  }

  /** What the heartbeat writes: each null when it did not change (or the retry part did not answer). */
  private record Marks(Set<UUID> held, Set<UUID> delivering) {}

  /**
   * The outcomes the retry part holds and the rows this node is delivering (docs/design.md §8.1, §9.2): other nodes'
   * stale watches and reconcile jobs leave both alone while this node's heartbeat is alive. A row is stale only after
   * stale.threshold, far longer than a heartbeat, so one opened since the last heartbeat is never at risk.
   */
  private Future<Marks> held() {
    return settling.now(ANSWER_TIMEOUT.dividedBy(5))
        .map(h -> new Marks(h.held().equals(lastHeld) ? null : h.held(), h.delivering().equals(lastDelivering) ? null : h.delivering()))
        .otherwise(e -> new Marks(null, null));
  }

  /** The retry part says what this node is settling from now on. */
  public void settlingFrom(Settling source) {
    settling = source;
  }

  private static Job byKey(int key) {
    for (Job j : Job.values()) {
      if (j.key == key) {
        return j;
      }
    }
    throw new IllegalStateException("no job with lock key " + key);
  }

  private static List<String> labels(java.util.Collection<Job> jobs) {
    return jobs.stream().sorted().map(Job::label).toList();
  }


  /** Leaves the cluster: the row says stopped (its held marks no longer protect anything), the locks are released. */
  @Override
  public Future<?> stop() {
    stopping = true;
    vertx.cancelTimer(timer);
    leading.loseAll();
    SqlConnection c = conn;
    conn = null;
    if (c == null) {
      return Future.succeededFuture();
    }
    return c.preparedQuery(LEAVE).execute(Tuple.of(nodeId))
        .timeout(ANSWER_TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .otherwise(e -> null)
        .eventually(() -> end(c))
        .mapEmpty();
  }
}
