package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SmtpTestClient;
import jakarta.mail.AuthenticationFailedException;
import jakarta.mail.Message;
import jakarta.mail.Session;
import jakarta.mail.Transport;
import jakarta.mail.internet.InternetAddress;
import jakarta.mail.internet.MimeMessage;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** No open relay: outside relayNetworks only an authenticated client relays, and AUTH needs TLS first. */
class StartTlsAuthTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .configure((g, o) -> o.put("auth.usersFile", Credentials.htpasswd(Map.of("alice", "s3cret")).toString()))
      .with("smtp.relayNetworks", "10.0.0.0/8"); // loopback is NOT a relay network here

  private static Session session(boolean auth) {
    Properties p = new Properties();
    p.put("mail.smtp.host", "127.0.0.1");
    p.put("mail.smtp.port", String.valueOf(gateway.smtpPort()));
    p.put("mail.smtp.starttls.enable", "true");
    p.put("mail.smtp.starttls.required", "true");
    p.put("mail.smtp.ssl.trust", "*");
    p.put("mail.smtp.ssl.checkserveridentity", "false"); // the self-signed certificate names gateway.test, not 127.0.0.1
    p.put("mail.smtp.auth", String.valueOf(auth));
    p.put("mail.smtp.timeout", "30000");
    return Session.getInstance(p);
  }

  private static MimeMessage message(Session s) throws Exception {
    MimeMessage m = new MimeMessage(s);
    m.setFrom(new InternetAddress("alice@example.com"));
    m.setRecipient(Message.RecipientType.TO, new InternetAddress("carol@example.net"));
    m.setSubject("over TLS");
    m.setText("hello");
    return m;
  }

  @Test
  void authenticatedClientRelaysOverStartTls() throws Exception {
    Session s = session(true);
    int before = gateway.downstream().messages().size();
    Transport.send(message(s), "alice", "s3cret");
    assertThat(gateway.downstream().messages()).hasSize(before + 1);
    assertThat(gateway.downstream().messages().get(before).text()).contains("with ESMTPSA id ");
  }

  @Test
  void wrongPasswordIsRefused() {
    Session s = session(true);
    assertThatThrownBy(() -> Transport.send(message(s), "alice", "wrong"))
        .isInstanceOf(AuthenticationFailedException.class)
        .hasMessageContaining("535 5.7.8");
  }

  @Test
  void aUserNotInTheFileCannotLogIn() {
    Session s = session(true);
    assertThatThrownBy(() -> Transport.send(message(s), "bob", "anything"))
        .isInstanceOf(AuthenticationFailedException.class);
  }

  @Test
  void unauthenticatedClientOutsideRelayNetworksIsRefused() throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String ehlo = c.command("EHLO client.test");
      assertThat(ehlo).contains("STARTTLS").doesNotContain("AUTH");
      assertThat(c.command("MAIL FROM:<a@example.com>")).isEqualTo("530 5.7.0 Authentication required");
      assertThat(c.command("AUTH PLAIN AGFsaWNlAHMzY3JldA==")).startsWith("538 5.7.11");
    }
    assertThat(gateway.downstream().dataCommands()).isEqualTo(gateway.downstream().messages().size());
  }
}
