package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.Main;
import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SelfSignedCertificate;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * SIGHUP on a real gateway process (docs/design.md §11.2): a send API key made by {@code ledgerpost keys add}
 * works once the gateway got the signal, a renewed STARTTLS certificate is what the next STARTTLS presents,
 * and a keys file with a bad line keeps the previous keys (and says so).
 */
class CredentialReloadTest {
  @RegisterExtension
  static final GatewayHarness harness = GatewayHarness.extension().manual();

  @Test
  void sighupReloadsKeysAndTheCertificateAndABadFileKeepsThePreviousKeys() throws Exception {
    Path dir = GatewayHarness.tempDir("reload-");
    SelfSignedCertificate a = SelfSignedCertificate.create("a.test");
    SelfSignedCertificate b = SelfSignedCertificate.create("b.test");
    Files.copy(Path.of(a.certificatePath()), dir.resolve("tls.crt"));
    Files.copy(Path.of(a.privateKeyPath()), dir.resolve("tls.key"));
    Path keys = Files.createDirectories(dir.resolve("keys")).resolve("api-keys");
    Files.writeString(keys, "app:" + SendClient.sha256("the-first-key-of-app") + "\n");
    String yaml = String.join("\n",
        "smtp:", "  port: 0", "  hostname: child.test", "  tls:", "    certFile: tls.crt", "    keyFile: tls.key",
        "http:", "  port: 0",
        "downstream:", "  host: 127.0.0.1", "  port: " + harness.downstream().port(), "  starttls: none",
        "ledger:", "  url: \"" + TestDatabase.newDatabase() + "\"", "  dataDir: pg", "  lockTimeout: 250ms",
        "api:", "  adminToken: child-admin-token-0123456789", "  keysFile: keys/api-keys", "");

    try (ChildGateway child = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      SendClient client = new SendClient(child.httpPort());
      assertThat(client.send("the-first-key-of-app", null, message()).statusCode()).isEqualTo(200);
      assertThat(certificateSubject(child.smtpPort())).contains("CN=a.test");

      // A key made the way the README says, next to the gateway's own configuration: unknown until SIGHUP.
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int exit = new CommandLine(new Main()).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
          .execute("keys", "add", "second", "--config", dir.resolve("gateway.yaml").toString());
      assertThat(exit).as(err.toString()).isZero();
      String second = out.toString().trim();
      assertThat(client.send(second, null, message()).statusCode()).isEqualTo(401);

      Files.copy(Path.of(b.certificatePath()), dir.resolve("tls.crt"), StandardCopyOption.REPLACE_EXISTING);
      Files.copy(Path.of(b.privateKeyPath()), dir.resolve("tls.key"), StandardCopyOption.REPLACE_EXISTING);
      child.signal("HUP");
      Poll.until(Duration.ofSeconds(30), "the reload logged", () -> !child.log("SIGHUP: 2 of 2 credential source(s) reloaded")
          .isEmpty());
      assertThat(child.log("reloaded api.keysFile " + keys + ": 2 send API key(s)")).hasSize(1);
      HttpResponseCheck.sent(client.send(second, null, message()));
      assertThat(certificateSubject(child.smtpPort())).contains("CN=b.test");

      // A bad line: the file is not taken, the keys the gateway had stay, and the log names file and line.
      Files.writeString(keys, "a line that is not a key\n", StandardOpenOption.APPEND);
      child.signal("HUP");
      Poll.until(Duration.ofSeconds(30), "the second reload logged", () -> !child.log("SIGHUP: 1 of 2").isEmpty());
      assertThat(child.log("api.keysFile " + keys + " not reloaded", "2 send API key(s)",
          "line 3: expected user:sha256-hex-of-key")).hasSize(1);
      HttpResponseCheck.sent(client.send(second, null, message()));
      HttpResponseCheck.sent(client.send("the-first-key-of-app", null, message()));
      assertThat(child.log("shutting down")).as("SIGHUP is not a stop").isEmpty();
    }
  }

  private static JsonObject message() {
    return new JsonObject().put("from", "app@example.com").put("to", new JsonArray().add("bob@example.net"))
        .put("subject", "reload").put("text", "hello");
  }

  /** 200 SENT, or the answer in the failure message. */
  static final class HttpResponseCheck {
    static void sent(java.net.http.HttpResponse<String> r) {
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }
  }

  /** EHLO, STARTTLS, handshake: the subject of the certificate the gateway presents now. */
  static String certificateSubject(int port) throws Exception {
    try (Socket plain = new Socket("127.0.0.1", port)) {
      plain.setSoTimeout(30_000);
      BufferedReader in = new BufferedReader(new InputStreamReader(plain.getInputStream(), StandardCharsets.US_ASCII));
      OutputStream out = plain.getOutputStream();
      reply(in);
      out.write("EHLO client.test\r\nSTARTTLS\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      reply(in);
      assertThat(reply(in)).startsWith("220");
      SSLContext tls = SSLContext.getInstance("TLS");
      tls.init(null, new TrustManager[] {new X509TrustManager() {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public X509Certificate[] getAcceptedIssuers() {
          return new X509Certificate[0];
        }
      }}, null);
      try (SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(plain, "127.0.0.1", port, true)) {
        s.startHandshake();
        return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
      }
    }
  }

  /** One whole reply; its last line. */
  private static String reply(BufferedReader in) throws Exception {
    String line;
    do {
      line = in.readLine();
      assertThat(line).as("a reply").isNotNull();
    } while (line.length() > 3 && line.charAt(3) == '-');
    return line;
  }
}
