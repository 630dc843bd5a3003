package dev.ledgerpost.intake.smtp.auth;

/**
 * LOGIN (draft-murchison-sasl-login): the user name, then the password, each asked for with a base64
 * prompt and answered in base64. The user name may come as AUTH's initial response.
 */
final class LoginMechanism implements SaslMechanism {
  private static final String USERNAME = "VXNlcm5hbWU6"; // "Username:"
  private static final String PASSWORD = "UGFzc3dvcmQ6"; // "Password:"

  /** The user name once given; null while it is asked for. */
  private String user;

  @Override
  public SaslAnswer start(String initialResponse) {
    return initialResponse == null ? new SaslAnswer.Challenge(USERNAME) : user(initialResponse);
  }

  @Override
  public SaslAnswer next(String line) {
    if (line.equals("*")) {
      return new SaslAnswer.Cancelled();
    }
    if (user == null) {
      return user(line);
    }
    String password = SaslAnswer.decode(line);
    return password == null ? new SaslAnswer.Malformed() : new SaslAnswer.Credentials("", user, password);
  }

  private SaslAnswer user(String encoded) {
    user = SaslAnswer.decode(encoded);
    return user == null ? new SaslAnswer.Malformed() : new SaslAnswer.Challenge(PASSWORD);
  }
}
