package dev.ledgerpost.platform.db;

/**
 * A change refused because the message is not in a state that allows it; carries what it is instead (the status's name
 * and the row's version), for the one HTTP mapping of {@code platform.web.Problem}.
 */
public final class StateConflict extends RuntimeException {
  private final String current;
  private final int version;

  public StateConflict(String message, Enum<?> current, int version) {
    super(message);
    this.current = current.name();
    this.version = version;
  }

  /** The status the message is in, by name. */
  public String current() {
    return current;
  }

  public int version() {
    return version;
  }
}
