package dev.ledgerpost.publish.webhook;

/**
 * A change of a webhook endpoint through the API that the rules refuse (docs/design.md §6.6), with the HTTP status
 * the API answers and the reason it says: 422 for a URL or a count the rules do not allow, 409 for an endpoint of the
 * configuration file, which only the operator changes.
 */
public final class EndpointRefused extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;

  EndpointRefused(int status, String reason) {
    super(reason, null, false, false);
    this.status = status;
  }

  public int status() {
    return status;
  }
}
