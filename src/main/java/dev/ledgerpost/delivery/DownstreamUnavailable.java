package dev.ledgerpost.delivery;

/** The downstream could not be reached or dropped the connection before a transaction began. */
public final class DownstreamUnavailable extends RuntimeException {
  public DownstreamUnavailable(String message, Throwable cause) {
    super(message, cause);
  }
}
