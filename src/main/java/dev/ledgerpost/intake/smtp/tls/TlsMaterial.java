package dev.ledgerpost.intake.smtp.tls;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.Reloadable;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.ServerSSLOptions;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The STARTTLS certificate: the configured PEM pair, or a self-signed one made at start. Every SMTP verticle
 * instance reads it through this one holder at each STARTTLS, so a SIGHUP reload (a renewed certificate)
 * reaches every event loop; a pair that does not load (not PEM, an encrypted key, a key that does not belong
 * to the certificate) stops the start, and at a reload keeps the previous pair. The PEM content is handed to
 * Vert.x as values, not paths, so a renewed file makes a new TLS context instead of hitting Vert.x's cache.
 * Loading is blocking.
 */
public final class TlsMaterial implements Supplier<ServerSSLOptions> {
  private static final Logger LOG = LoggerFactory.getLogger(TlsMaterial.class);
  public static final String KEY = "smtp.tls.certFile";

  /** A loaded pair, and what the log says about it. */
  private record Pair(ServerSSLOptions options, String subject, Instant notAfter) {
    String describe() {
      return "certificate " + subject + ", valid until " + notAfter;
    }
  }

  private final Supplier<Pair> current;
  private final Reloadable<Pair> reloadable;

  private TlsMaterial(Supplier<Pair> current, Reloadable<Pair> reloadable) {
    this.current = current;
    this.reloadable = reloadable;
  }

  public static TlsMaterial load(Vertx vertx, GatewayConfig.Smtp smtp, String hostname) {
    if (!smtp.tlsCertFile().isEmpty()) {
      Path cert = Path.of(smtp.tlsCertFile());
      Path key = Path.of(smtp.tlsKeyFile());
      Reloadable<Pair> r = new Reloadable<>(KEY + " " + cert + " (key " + key + ")", () -> read(vertx, cert, key), Pair::describe);
      return new TlsMaterial(r, r);
    }
    Pair pair = new Pair(new ServerSSLOptions().setKeyCertOptions(selfSigned(hostname)), "CN=" + hostname + " (self-signed)",
        Instant.MAX);
    LOG.warn("STARTTLS with a self-signed certificate for {}: configure smtp.tls.certFile/keyFile for production", hostname);
    return new TlsMaterial(() -> pair, null);
  }

  /**
   * A self-signed ECDSA P-256 certificate for {@code hostname}, made in memory ({@link SelfSignedCertificate}). Not
   * RSA: an RSA key took up to a second of every start that has no certificate configured (the generator searches for
   * primes), a P-256 key a few milliseconds. Not Vert.x's {@code SelfSignedCertificate}: it makes RSA keys and leaves
   * the key in a file under /tmp.
   */
  static PemKeyCertOptions selfSigned(String hostname) {
    try {
      SelfSignedCertificate.Pem pem = SelfSignedCertificate.make(hostname, Instant.now());
      return new PemKeyCertOptions().setCertValue(Buffer.buffer(pem.certificate())).setKeyValue(Buffer.buffer(pem.privateKey()));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot make a self-signed certificate for " + hostname, e);
    }
  }

  /** The options the next STARTTLS uses. */
  @Override
  public ServerSSLOptions get() {
    return current.get().options();
  }

  /** The holder SIGHUP reloads; empty for a self-signed certificate (nothing to read again). */
  public Optional<Reloadable<?>> reloadable() {
    return Optional.ofNullable(reloadable);
  }

  private static Pair read(Vertx vertx, Path certFile, Path keyFile) {
    byte[] certPem = bytes(certFile, KEY);
    byte[] keyPem = bytes(keyFile, "smtp.tls.keyFile");
    X509Certificate cert = certificate(certFile, certPem);
    PrivateKey key = privateKey(keyFile, keyPem);
    if (!belongTogether(cert, key)) {
      throw new ConfigException(List.of("smtp.tls.keyFile " + keyFile + ": this key does not belong to the certificate in "
          + certFile));
    }
    PemKeyCertOptions pem = new PemKeyCertOptions().setCertValue(Buffer.buffer(certPem)).setKeyValue(Buffer.buffer(keyPem));
    try {
      pem.getKeyManagerFactory(vertx); // what the TLS context will be built from: it must load now, not at a client's STARTTLS
    } catch (Exception e) {
      throw new ConfigException(List.of(KEY + " " + certFile + ": cannot be used for TLS: " + e.getMessage()));
    }
    Instant notAfter = cert.getNotAfter().toInstant();
    if (notAfter.isBefore(Instant.now())) {
      LOG.warn("the STARTTLS certificate in {} expired on {}", certFile, notAfter);
    }
    return new Pair(new ServerSSLOptions().setKeyCertOptions(pem), cert.getSubjectX500Principal().getName(), notAfter);
  }

  private static byte[] bytes(Path file, String key) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new ConfigException(List.of(key + " " + file + ": cannot read: " + e.getMessage()));
    }
  }

  private static X509Certificate certificate(Path file, byte[] pem) {
    try (PEMParser parser = parser(pem)) {
      Object o = parser.readObject();
      if (o instanceof X509CertificateHolder holder) {
        return new JcaX509CertificateConverter().getCertificate(holder);
      }
    } catch (IOException | java.security.cert.CertificateException | RuntimeException e) {
      throw new ConfigException(List.of(KEY + " " + file + ": not a PEM certificate: " + e.getMessage()));
    }
    throw new ConfigException(List.of(KEY + " " + file + ": no PEM certificate (-----BEGIN CERTIFICATE-----) first in the file"));
  }

  private static PrivateKey privateKey(Path file, byte[] pem) {
    try (PEMParser parser = parser(pem)) {
      Object o = parser.readObject();
      JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
      if (o instanceof PEMKeyPair pair) {
        return converter.getPrivateKey(pair.getPrivateKeyInfo());
      }
      if (o instanceof PrivateKeyInfo info) {
        return converter.getPrivateKey(info);
      }
      if (o != null && o.getClass().getSimpleName().contains("Encrypted")) {
        throw new ConfigException(List.of("smtp.tls.keyFile " + file + ": an encrypted key; give the key without a passphrase"));
      }
    } catch (IOException | RuntimeException e) {
      if (e instanceof ConfigException c) {
        throw c;
      }
      throw new ConfigException(List.of("smtp.tls.keyFile " + file + ": not a PEM private key: " + e.getMessage()));
    }
    throw new ConfigException(List.of("smtp.tls.keyFile " + file + ": no PEM private key first in the file"));
  }

  private static PEMParser parser(byte[] pem) {
    Reader reader = new InputStreamReader(new ByteArrayInputStream(pem), StandardCharsets.US_ASCII);
    return new PEMParser(reader);
  }

  /** A renewed certificate with the old key is a common mistake: sign with the key, verify with the certificate. */
  private static boolean belongTogether(X509Certificate cert, PrivateKey key) {
    String algorithm = switch (key.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "EC", "ECDSA" -> "SHA256withECDSA";
      case "Ed25519", "EdDSA" -> "Ed25519";
      case "Ed448" -> "Ed448";
      default -> null; // a kind this check does not know: Vert.x's own load above still runs
    };
    if (algorithm == null) {
      return true;
    }
    try {
      byte[] challenge = new byte[32];
      new SecureRandom().nextBytes(challenge);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(challenge);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(cert.getPublicKey());
      verifier.update(challenge);
      return verifier.verify(signature);
    } catch (java.security.GeneralSecurityException | RuntimeException e) {
      return false;
    }
  }
}
