package dev.ledgerpost.platform.cluster;

/**
 * Which of the cluster's single-active jobs this node holds now. A job's pass asks {@link #leads} when it
 * begins; a node that loses its lock connection stops leading at once (docs/design.md §9.2), and the
 * database's own guards (the publisher's row lock, the stale raise's WHERE) keep a pass already under way
 * harmless.
 */
public interface Leadership {
  /** Whether this node holds {@code job} now; from any thread. */
  boolean leads(Job job);

  /**
   * Runs {@code gained} on the calling context each time this node takes {@code job} (and at once if it holds it
   * already), so that the job starts without waiting for its next interval.
   */
  void whenGained(Job job, Runnable gained);
}
