package dev.ledgerpost.intake.http;

/**
 * A send request the gateway refuses before anything is claimed, recorded or sent: {@code status} is
 * the HTTP status (400 malformed, 413 too large, 422 well-formed but unacceptable), {@code field} the
 * JSON path of the offending member when there is one.
 */
public final class InvalidSend extends RuntimeException {
  private final int status;
  private final String field;

  public InvalidSend(int status, String field, String detail) {
    super(detail, null, false, false);
    this.status = status;
    this.field = field;
  }

  static InvalidSend unprocessable(String field, String detail) {
    return new InvalidSend(422, field, detail);
  }

  public int status() {
    return status;
  }

  public String field() {
    return field;
  }
}
