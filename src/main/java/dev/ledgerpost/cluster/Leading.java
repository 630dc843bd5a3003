package dev.ledgerpost.cluster;

import dev.ledgerpost.bus.Hop;
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
 */
final class Leading implements Leadership {
  private record Listener(Job job, Context context, Runnable gained) {}

  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  /** Read from any thread; replaced whole on the node verticle's context. */
  private volatile Set<Job> jobs = Collections.emptySet();

  @Override
  public boolean leads(Job job) {
    return jobs.contains(job);
  }

  @Override
  public void whenGained(Job job, Runnable gained) {
    Listener l = new Listener(job, Vertx.currentContext(), gained);
    listeners.add(l);
    if (leads(job)) {
      run(l);
    }
  }

  /** The jobs led now. */
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
