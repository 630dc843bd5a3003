package dev.ledgerpost.relay.smarthost;

/**
 * The downstream could not be reached or dropped the connection before a transaction began. Not final:
 * {@link DownstreamSlots.Exhausted} is the case where no connection may be opened at all.
 */
public class DownstreamUnavailable extends RuntimeException {
  public DownstreamUnavailable(String message, Throwable cause) {
    super(message, cause);
  }
}
