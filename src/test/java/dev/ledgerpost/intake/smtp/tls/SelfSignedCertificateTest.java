package dev.ledgerpost.intake.smtp.tls;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import org.junit.jupiter.api.Test;

/** The hand-written DER is read back by the JDK's own X.509 parser, which is what a TLS client does with it. */
class SelfSignedCertificateTest {
  @Test
  void theJdkReadsItAsAVersion3CertificateForTheHostSignedByItsOwnKey() throws Exception {
    Instant now = Instant.parse("2026-12-05T10:15:30.123Z");
    SelfSignedCertificate.Pem pem = SelfSignedCertificate.make("mail.example.org", now);
    X509Certificate cert = certificate(pem);

    assertThat(cert.getVersion()).isEqualTo(3);
    assertThat(cert.getSubjectX500Principal().getName()).isEqualTo("CN=mail.example.org");
    assertThat(cert.getIssuerX500Principal()).isEqualTo(cert.getSubjectX500Principal());
    assertThat(cert.getSigAlgName()).isEqualTo("SHA256withECDSA");
    assertThat(cert.getPublicKey().getAlgorithm()).isEqualTo("EC");
    assertThat(cert.getSerialNumber().signum()).isPositive();
    assertThat(cert.getNotBefore().toInstant()).isEqualTo(Instant.parse("2026-12-04T10:15:30Z"));
    assertThat(cert.getNotAfter().toInstant()).isEqualTo(Instant.parse("2036-12-02T10:15:30Z"));
    cert.verify(cert.getPublicKey()); // throws unless the signature over the TBS bytes is right
    cert.checkValidity(Date.from(now));

    // The private key is the certificate's: what it signs, the certificate's key verifies.
    PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der(pem.privateKey())));
    Signature signer = Signature.getInstance("SHA256withECDSA");
    signer.initSign(key);
    signer.update("hello".getBytes(StandardCharsets.US_ASCII));
    byte[] signature = signer.sign();
    Signature verifier = Signature.getInstance("SHA256withECDSA");
    verifier.initVerify(cert.getPublicKey());
    verifier.update("hello".getBytes(StandardCharsets.US_ASCII));
    assertThat(verifier.verify(signature)).isTrue();
  }

  @Test
  void aLongNonAsciiNameUsesTheLongLengthFormAndDatesFrom2050AreGeneralizedTime() throws Exception {
    String host = "ü".repeat(70) + ".example"; // 148 bytes of UTF-8: a length of two bytes
    Instant now = Instant.parse("2049-06-01T00:00:00Z"); // valid until 2059
    X509Certificate cert = certificate(SelfSignedCertificate.make(host, now));

    assertThat(cert.getSubjectX500Principal().getName()).isEqualTo("CN=" + host);
    assertThat(cert.getNotBefore().toInstant()).isEqualTo(now.minus(Duration.ofDays(1)));
    assertThat(cert.getNotAfter().toInstant()).isEqualTo(now.plus(Duration.ofDays(3650)));
    cert.verify(cert.getPublicKey());
  }

  @Test
  void eachCertificateHasItsOwnKeyAndSerialNumber() throws Exception {
    Instant now = Instant.now();
    X509Certificate a = certificate(SelfSignedCertificate.make("a.test", now));
    X509Certificate b = certificate(SelfSignedCertificate.make("a.test", now));
    assertThat(a.getPublicKey()).isNotEqualTo(b.getPublicKey());
    assertThat(a.getSerialNumber()).isNotEqualTo(b.getSerialNumber());
  }

  private static X509Certificate certificate(SelfSignedCertificate.Pem pem) throws Exception {
    assertThat(pem.certificate()).startsWith("-----BEGIN CERTIFICATE-----\n").endsWith("-----END CERTIFICATE-----\n");
    return (X509Certificate) CertificateFactory.getInstance("X.509")
        .generateCertificate(new ByteArrayInputStream(pem.certificate().getBytes(StandardCharsets.US_ASCII)));
  }

  private static byte[] der(String pem) {
    return Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", ""));
  }
}
