package dev.ledgerpost.intake.smtp;

import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code smtp.maxConnectionsPerAddress}: open SMTP connections per client address, for the whole process
 * (every SMTP event loop shares one instance). An address is in the map only while it has a connection
 * open, so the map never holds more entries than there are connections.
 */
public final class AddressConnections {
  private final int max;
  private final ConcurrentHashMap<String, Integer> open = new ConcurrentHashMap<>();

  public AddressConnections(int max) {
    this.max = max;
  }

  /** Counts a new connection from the address; false (nothing counted) when it already has {@code max}. */
  boolean tryOpen(String address) {
    boolean[] admitted = {false};
    open.compute(address, (a, n) -> {
      int current = n == null ? 0 : n;
      if (current >= max) {
        return n;
      }
      admitted[0] = true;
      return current + 1;
    });
    return admitted[0];
  }

  void closed(String address) {
    open.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
  }

  int open(String address) {
    return open.getOrDefault(address, 0);
  }
}
