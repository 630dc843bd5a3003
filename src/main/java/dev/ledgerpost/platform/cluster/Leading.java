package dev.ledgerpost.platform.cluster;

import dev.ledgerpost.platform.bus.Hop;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The jobs this node leads now, as the rest of the gateway sees them, and who is told when it gains one. The node
 * verticle changes them (on its context) as it takes and loses the jobs' locks; anybody reads them, from any thread.
 *
 * <p>A lease bounds them: a job is led only until {@code node.deadAfter} after the last heartbeat the ledger confirmed
 * was sent. From then on another node may end this node's lock session and take its jobs (docs/design.md §9.2), so a
 * node that was frozen (SIGSTOP, a long GC pause, a paused VM) or whose heartbeats go unanswered stops acting as the
 * leader by itself, at once when it runs again, before it even learns that its session is gone. The clock is
 * {@link System#nanoTime}, which goes on while the process is stopped.
 */
final class Leading implements Leadership {
  private record Listener(Job job, Context context, Runnable gained) {}

  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  /** Read from any thread; replaced whole on the node verticle's context. */
  private volatile Set<Job> jobs = Collections.emptySet();
  /** {@link System#nanoTime} until which the jobs are led (see the class comment); none before the first heartbeat. */
  private volatile long leaseEnd = System.nanoTime();

  @Override
  public boolean leads(Job job) {
    return jobs.contains(job) && leased();
  }

  /** Whether the last confirmed heartbeat is recent enough for this node to act on the jobs it holds. */
  boolean leased() {
    return leaseEnd - System.nanoTime() > 0;
  }

  /** A heartbeat sent at {@code sentNanos} was confirmed: the jobs are led until {@code deadAfter} after it. */
  void renew(long sentNanos, java.time.Duration deadAfter) {
    leaseEnd = sentNanos + deadAfter.toNanos();
  }

  @Override
  public void whenGained(Job job, Runnable gained) {
    Listener l = new Listener(job, Vertx.currentContext(), gained);
    listeners.add(l);
    if (leads(job)) {
      run(l);
    }
  }

  /** The jobs whose locks this node holds now (whether or not its lease still lets it act on them). */
  Set<Job> jobs() {
    return jobs;
  }

  /** Leads {@code gained} too, from now, and runs their listeners on their own contexts. */
  void gain(Collection<Job> gained) {
    EnumSet<Job> now = jobs.isEmpty() ? EnumSet.noneOf(Job.class) : EnumSet.copyOf(jobs);
    now.addAll(gained);
    jobs = Collections.unmodifiableSet(now);
    for (Listener l : listeners) {
      if (gained.contains(l.job())) {
        run(l);
      }
    }
  }

  /** Leads nothing from now. */
  void loseAll() {
    jobs = Collections.emptySet();
  }

  private static void run(Listener l) {
    if (l.context() == null) {
      l.gained().run();
    } else {
      Hop.send(l.context(), l.gained());
    }
  }
}
