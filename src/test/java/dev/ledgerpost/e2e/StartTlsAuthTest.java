package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import jakarta.mail.AuthenticationFailedException;
import jakarta.mail.Message;
import jakarta.mail.Session;
import jakarta.mail.Transport;
import jakarta.mail.internet.InternetAddress;
import jakarta.mail.internet.MimeMessage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Map;
import java.util.Properties;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** No open relay: outside relayNetworks only an authenticated client relays, and AUTH needs TLS first. */
class StartTlsAuthTest {
  @TempDir
  static Path dir;

  static Vertx vertx;
  static ScriptedSmtpServer downstream;
  static GatewayHarness gateway;

  @BeforeAll
  static void start() throws Exception {
    byte[] salt = new byte[16];
    new SecureRandom().nextBytes(salt);
    Path users = dir.resolve("users.htpasswd");
    Files.writeString(users, "# htpasswd -B format\nalice:" + OpenBSDBCrypt.generate("2y", "s3cret".toCharArray(), salt, 5)
        + "\n", StandardCharsets.UTF_8);
    vertx = Vertx.vertx();
    downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
    Map<String, Object> o = GatewayHarness.defaults(downstream.port());
    o.put("auth.usersFile", users.toString());
    o.put("smtp.relayNetworks", "10.0.0.0/8"); // loopback is NOT a relay network here
    gateway = GatewayHarness.start(vertx, o);
  }

  @AfterAll
  static void stop() throws Exception {
    gateway.close();
    GatewayHarness.await(vertx.close());
  }

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
    int before = downstream.messages().size();
    Transport.send(message(s), "alice", "s3cret");
    assertThat(downstream.messages()).hasSize(before + 1);
    assertThat(downstream.messages().get(before).text()).contains("with ESMTPSA id ");
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
    assertThat(downstream.dataCommands()).isEqualTo(downstream.messages().size());
  }
}
