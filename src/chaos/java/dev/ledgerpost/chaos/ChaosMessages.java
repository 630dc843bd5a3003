package dev.ledgerpost.chaos;

import java.util.List;

/** Chaos mode's address (test environments only): hold ACCESS EXCLUSIVE locks from a separate connection. */
public final class ChaosMessages {
  public static final String LOCK = "chaos.lock";

  private ChaosMessages() {}

  public record ChaosLock(List<String> tables, long millis) {}

  public record ChaosLocked(List<String> tables, long millis) {}
}
