package dev.ledgerpost.ledger;

/** A change refused because the message is not in a state that allows it; carries what it is instead. */
public final class StateConflict extends RuntimeException {
  private final MessageStatus current;
  private final int version;

  public StateConflict(String message, MessageStatus current, int version) {
    super(message);
    this.current = current;
    this.version = version;
  }

  public MessageStatus current() {
    return current;
  }

  public int version() {
    return version;
  }
}
