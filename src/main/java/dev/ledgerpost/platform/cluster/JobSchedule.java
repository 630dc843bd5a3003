package dev.ledgerpost.platform.cluster;

import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The timers of one part (docs/design.md §9.2): a single-active job's pass runs at once when this node gains the
 * job, then every interval while it leads it; a per-node task runs every interval. After {@link #stop} nothing
 * runs again. One per verticle, used on its context.
 */
public final class JobSchedule {
  private final Vertx vertx;
  private final Leadership leadership;
  private final List<Long> timers = new ArrayList<>();
  private boolean stopped;

  public JobSchedule(Vertx vertx, Leadership leadership) {
    this.vertx = vertx;
    this.leadership = leadership;
  }

  /** {@code pass} at once when this node takes {@code job}, then every {@code interval} while it leads it. */
  public void lead(Job job, Duration interval, Runnable pass) {
    Runnable led = () -> {
      if (!stopped && leadership.leads(job)) {
        pass.run();
      }
    };
    every(interval, led);
    leadership.whenGained(job, led);
  }

  /** {@code task} every {@code interval} on this node, leader or not. */
  public void every(Duration interval, Runnable task) {
    timers.add(vertx.setPeriodic(interval.toMillis(), t -> {
      if (!stopped) {
        task.run();
      }
    }));
  }

  public boolean stopped() {
    return stopped;
  }

  /** Cancels every timer; a pass under way finishes, and none starts after. */
  public void stop() {
    stopped = true;
    timers.forEach(vertx::cancelTimer);
    timers.clear();
  }
}
