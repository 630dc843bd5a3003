package dev.ledgerpost.intake.smtp.auth;

/** SASL PLAIN (RFC 4616): one response, {@code authzid NUL user NUL password}, base64. */
final class PlainMechanism implements SaslMechanism {

  @Override
  public SaslAnswer start(String initialResponse) {
    return initialResponse == null ? new SaslAnswer.Challenge("") : credentials(initialResponse);
  }

  @Override
  public SaslAnswer next(String line) {
    return line.equals("*") ? new SaslAnswer.Cancelled() : credentials(line);
  }

  private static SaslAnswer credentials(String encoded) {
    String decoded = SaslAnswer.decode(encoded);
    if (decoded == null) {
      return new SaslAnswer.Malformed();
    }
    String[] fields = decoded.split("\0", -1);
    if (fields.length != 3) {
      return new SaslAnswer.Malformed();
    }
    return new SaslAnswer.Credentials(fields[0], fields[1], fields[2]);
  }
}
