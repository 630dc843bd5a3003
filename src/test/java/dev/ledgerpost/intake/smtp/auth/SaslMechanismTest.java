package dev.ledgerpost.intake.smtp.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** The mechanisms alone: what each answers to each line, without a session (the transcripts test the replies). */
class SaslMechanismTest {

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void namesAreCaseInsensitiveAndOnlyTheOfferedOnesExist() {
    assertThat(SaslMechanism.named("plain")).isInstanceOf(PlainMechanism.class);
    assertThat(SaslMechanism.named("Login")).isInstanceOf(LoginMechanism.class);
    assertThat(SaslMechanism.named("CRAM-MD5")).isNull();
    assertThat(SaslMechanism.OFFERED).isEqualTo("PLAIN LOGIN");
  }

  @Test
  void plainWithAnInitialResponseAnswersCredentialsAtOnce() {
    SaslAnswer a = new PlainMechanism().start(b64("\0alice\0secret"));
    assertThat(a).isEqualTo(new SaslAnswer.Credentials("", "alice", "secret"));
    assertThat(((SaslAnswer.Credentials) a).actsAsAnother()).isFalse();
  }

  @Test
  void plainWithoutOneChallengesEmptyThenReadsTheLine() {
    PlainMechanism m = new PlainMechanism();
    assertThat(m.start(null)).isEqualTo(new SaslAnswer.Challenge(""));
    assertThat(m.next(b64("bob\0alice\0pw"))).satisfies(a ->
        assertThat(((SaslAnswer.Credentials) a).actsAsAnother()).isTrue());
  }

  @Test
  void plainRefusesWhatIsNotBase64OrNotThreeFields() {
    assertThat(new PlainMechanism().start("%%%")).isInstanceOf(SaslAnswer.Malformed.class);
    assertThat(new PlainMechanism().start(b64("alice\0secret"))).isInstanceOf(SaslAnswer.Malformed.class);
  }

  @Test
  void loginAsksForTheUserThenThePassword() {
    LoginMechanism m = new LoginMechanism();
    assertThat(m.start(null)).isEqualTo(new SaslAnswer.Challenge("VXNlcm5hbWU6"));
    assertThat(m.next(b64("alice"))).isEqualTo(new SaslAnswer.Challenge("UGFzc3dvcmQ6"));
    assertThat(m.next(b64("secret"))).isEqualTo(new SaslAnswer.Credentials("", "alice", "secret"));
  }

  @Test
  void loginTakesTheUserAsInitialResponse() {
    LoginMechanism m = new LoginMechanism();
    assertThat(m.start(b64("alice"))).isEqualTo(new SaslAnswer.Challenge("UGFzc3dvcmQ6"));
    assertThat(m.next("not base64!")).isInstanceOf(SaslAnswer.Malformed.class);
  }

  @Test
  void aStarCancelsEitherMechanism() {
    assertThat(new PlainMechanism().next("*")).isInstanceOf(SaslAnswer.Cancelled.class);
    LoginMechanism m = new LoginMechanism();
    m.start(b64("alice"));
    assertThat(m.next("*")).isInstanceOf(SaslAnswer.Cancelled.class);
  }
}
