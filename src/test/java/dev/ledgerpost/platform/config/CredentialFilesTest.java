package dev.ledgerpost.platform.config;

import dev.ledgerpost.platform.auth.AdminToken;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.HtpasswdAuthenticator;
import dev.ledgerpost.intake.smtp.tls.TlsMaterial;
import dev.ledgerpost.testing.LogCapture;
import dev.ledgerpost.testing.SendClient;
import io.vertx.core.Vertx;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.SelfSignedCertificate;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one rule of the credential files (docs/design.md §11.2): a bad line is an error naming the key, the file
 * and the line, for every kind of file; a reload with a bad line keeps the previous content.
 */
class CredentialFilesTest {
  static Vertx vertx;

  @TempDir
  Path dir;

  @BeforeAll
  static void startVertx() {
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void closeVertx() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get();
  }

  private Path write(String name, String content) throws Exception {
    return Files.writeString(dir.resolve(name), content, StandardCharsets.UTF_8);
  }

  private static String bcrypt(String password) {
    return OpenBSDBCrypt.generate("2y", password.toCharArray(), new byte[16], 4);
  }

  @Test
  void aBadLineInAnyCredentialFileNamesTheKeyTheFileAndTheLine() throws Exception {
    String hash = SendClient.sha256("k");
    Path keys = write("api-keys", "# keys\napp:" + hash + "\napp " + hash + "\n");
    Path tokens = write("tokens", "\nalice:" + hash + "\nbob:not-a-hash\n");
    Path users = write("users", "alice:" + bcrypt("pw") + "\nbob:{SHA}notbcrypt\n");

    assertThatThrownBy(() -> ApiKeys.load(keys.toString(), 1))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .containsExactly("api.keysFile " + keys + " line 3: expected user:sha256-hex-of-key[:requests-per-second][:capture]"));
    assertThatThrownBy(() -> EventTokens.load(() -> "admin-token-0123456789", tokens.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .containsExactly("notify.tokensFile " + tokens + " line 3: expected user:sha256-hex-of-token"));
    assertThatThrownBy(() -> HtpasswdAuthenticator.load(vertx, users))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .containsExactly("auth.usersFile " + users + " line 2: the hash of 'bob' is not bcrypt (make one with htpasswd -B)"));
  }

  @Test
  void aListedTwiceUserOrKeyIsAnErrorToo() throws Exception {
    String hash = SendClient.sha256("k");
    Path keys = write("api-keys", "a:" + hash + "\nb:" + hash + "\n");
    Path users = write("users", "alice:" + bcrypt("pw") + "\nalice:" + bcrypt("pw2") + "\n");

    assertThatThrownBy(() -> ApiKeys.load(keys.toString(), 1)).hasMessageContaining("line 2: the same key is listed twice");
    assertThatThrownBy(() -> HtpasswdAuthenticator.load(vertx, users)).hasMessageContaining("line 2: user 'alice' is listed twice");
  }

  @Test
  void theAdminTokenFileIsGeneratedOnceAndAnEmptiedFileIsAnErrorNotAnEmptyToken() throws Exception {
    GatewayConfig config = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of("ledger.dataDir", dir.resolve("pg").toString()));
    String generated = AdminToken.load(config).get();
    assertThat(generated).hasSizeGreaterThanOrEqualTo(32);
    assertThat(AdminToken.load(config).get()).as("read back, not generated again").isEqualTo(generated);

    Path file = dir.resolve("admin-token");
    Files.writeString(file, "\n");
    assertThatThrownBy(() -> AdminToken.load(config)).isInstanceOfSatisfying(ConfigException.class,
        e -> assertThat(e.problems()).containsExactly("api.adminToken " + file + ": holds no token (delete the file to have a new one generated)"));
    Files.writeString(file, "short\n");
    assertThatThrownBy(() -> AdminToken.load(config)).hasMessageContaining("api.adminToken " + file + " line 1: expected one token");
    Files.writeString(file, generated + "\n" + generated + "x\n");
    assertThatThrownBy(() -> AdminToken.load(config)).hasMessageContaining("line 2: the file holds one token only");
  }

  @Test
  void aReloadTakesAGoodFileAndKeepsThePreviousContentWhenTheFileHasABadLine() throws Exception {
    Path keys = write("api-keys", "app:" + SendClient.sha256("k1") + "\n");
    ApiKeys apiKeys = ApiKeys.load(keys.toString(), 1);
    Reloadable<?> source = apiKeys.reloadable().orElseThrow();
    assertThat(apiKeys.authenticate("k1")).isPresent();

    Files.writeString(keys, "app:" + SendClient.sha256("k1") + "\nother:" + SendClient.sha256("k2") + ":5\n");
    assertThat(source.reload()).isTrue();
    assertThat(apiKeys.authenticate("k2")).hasValueSatisfying(k -> assertThat(k.rate()).isEqualTo(5));

    Files.writeString(keys, "other:" + SendClient.sha256("k2") + "\nbroken\n");
    try (LogCapture log = LogCapture.of(Reloadable.class.getName())) {
      assertThat(source.reload()).isFalse();
      assertThat(log.errorsContaining("api.keysFile " + keys + " not reloaded", "2 send API key(s)", "line 2: expected"))
          .hasSize(1);
    }
    assertThat(apiKeys.authenticate("k1")).as("the previous set stays whole").isPresent();
    assertThat(apiKeys.authenticate("k2")).isPresent();
  }

  @Test
  void theStartTlsPairLoadsChecksThatTheKeyBelongsToTheCertificateAndReloads() throws Exception {
    SelfSignedCertificate a = SelfSignedCertificate.create("a.test");
    SelfSignedCertificate b = SelfSignedCertificate.create("b.test");
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    Files.copy(Path.of(a.certificatePath()), cert);
    Files.copy(Path.of(a.privateKeyPath()), key);
    GatewayConfig.Smtp smtp = ConfigLoader.fromSources(Map.of(), Map.of(),
        Map.of("smtp.tls.certFile", cert.toString(), "smtp.tls.keyFile", key.toString())).smtp();

    TlsMaterial tls = TlsMaterial.load(vertx, smtp, "ignored.test");
    assertThat(certificateOf(tls)).contains("CN=a.test");

    Files.copy(Path.of(b.certificatePath()), cert, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertThat(tls.reloadable().orElseThrow().reload()).as("b's certificate with a's key").isFalse();
    assertThat(certificateOf(tls)).contains("CN=a.test");
    assertThatThrownBy(() -> TlsMaterial.load(vertx, smtp, "x")).isInstanceOfSatisfying(ConfigException.class,
        e -> assertThat(e.problems()).containsExactly("smtp.tls.keyFile " + key + ": this key does not belong to the certificate in "
            + cert));

    Files.copy(Path.of(b.privateKeyPath()), key, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertThat(tls.reloadable().orElseThrow().reload()).isTrue();
    assertThat(certificateOf(tls)).contains("CN=b.test");

    Files.writeString(cert, "not a certificate\n");
    assertThatThrownBy(() -> TlsMaterial.load(vertx, smtp, "x")).hasMessageContaining("smtp.tls.certFile " + cert);
  }

  /** The certificate PEM the next STARTTLS would present. */
  private static String certificateOf(TlsMaterial tls) throws Exception {
    PemKeyCertOptions pem = (PemKeyCertOptions) tls.get().getKeyCertOptions();
    String text = pem.getCertValues().get(0).toString(StandardCharsets.US_ASCII);
    java.security.cert.X509Certificate x509 = (java.security.cert.X509Certificate) java.security.cert.CertificateFactory
        .getInstance("X.509").generateCertificate(new java.io.ByteArrayInputStream(text.getBytes(StandardCharsets.US_ASCII)));
    return x509.getSubjectX500Principal().getName();
  }
}
