package dev.ledgerpost.intake.smtp.tls;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;

/**
 * A self-signed ECDSA P-256 certificate for a host name, made in memory with the JDK alone: the key pair and the
 * signature from the JDK's providers, the certificate around them written as the DER of RFC 5280 §4.1 (a version 3
 * certificate without extensions, as the gateway made before).
 *
 * <p>Not BouncyCastle's certificate builder, which the gateway still uses to read configured PEM files: loading it (its
 * jars are signed, so each class is digested as it loads, and no class-data archive may hold them) and building its
 * algorithm tables took 0.15-0.25 s of the 3.1-3.4 s of CPU a gateway spends to "ready" without a certificate
 * configured (bench/results/2026-12-04-suite-cpu.txt). Seven DER forms are all a certificate of this shape needs.
 */
final class SelfSignedCertificate {
  /** The certificate and its PKCS#8 private key, both PEM. */
  record Pem(String certificate, String privateKey) {}

  private static final String ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";
  private static final String COMMON_NAME = "2.5.4.3";
  private static final DateTimeFormatter UTC_TIME = DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter GENERALIZED_TIME =
      DateTimeFormatter.ofPattern("yyyyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);

  private SelfSignedCertificate() {}

  /** Valid from a day before {@code now} for ten years, with a random positive 64-bit serial number. */
  static Pem make(String hostname, Instant now) throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    KeyPair keys = generator.generateKeyPair();
    byte[] algorithm = seq(oid(ECDSA_WITH_SHA256));
    byte[] name = seq(set(seq(oid(COMMON_NAME), tlv(0x0C, hostname.getBytes(StandardCharsets.UTF_8)))));
    BigInteger serial = new BigInteger(64, new SecureRandom()).add(BigInteger.ONE);
    byte[] tbs = seq(
        tlv(0xA0, integer(BigInteger.TWO)), // [0] EXPLICIT version: v3
        integer(serial),
        algorithm,
        name,
        seq(time(now.minus(Duration.ofDays(1))), time(now.plus(Duration.ofDays(3650)))),
        name,
        keys.getPublic().getEncoded()); // already a DER SubjectPublicKeyInfo
    Signature signer = Signature.getInstance("SHA256withECDSA");
    signer.initSign(keys.getPrivate());
    signer.update(tbs);
    byte[] certificate = seq(tbs, algorithm, bitString(signer.sign()));
    return new Pem(pem("CERTIFICATE", certificate), pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
  }

  /** UTCTime through 2049, GeneralizedTime after, as RFC 5280 §4.1.2.5 requires. */
  private static byte[] time(Instant t) {
    Instant s = t.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
    boolean utc = s.atZone(ZoneOffset.UTC).getYear() < 2050;
    return tlv(utc ? 0x17 : 0x18, (utc ? UTC_TIME : GENERALIZED_TIME).format(s).getBytes(StandardCharsets.US_ASCII));
  }

  private static byte[] integer(BigInteger value) {
    return tlv(0x02, value.toByteArray());
  }

  private static byte[] bitString(byte[] bits) {
    byte[] content = new byte[bits.length + 1]; // leading 0: no unused bits in the last byte
    System.arraycopy(bits, 0, content, 1, bits.length);
    return tlv(0x03, content);
  }

  private static byte[] oid(String dotted) {
    String[] arcs = dotted.split("\\.");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(40 * Integer.parseInt(arcs[0]) + Integer.parseInt(arcs[1]));
    for (int i = 2; i < arcs.length; i++) {
      long arc = Long.parseLong(arcs[i]);
      int groups = Math.max(1, (64 - Long.numberOfLeadingZeros(arc) + 6) / 7);
      for (int g = groups - 1; g >= 0; g--) {
        out.write((int) ((arc >>> (7 * g)) & 0x7F) | (g > 0 ? 0x80 : 0)); // base 128, high bit on all but the last
      }
    }
    return tlv(0x06, out.toByteArray());
  }

  private static byte[] seq(byte[]... parts) {
    return tlv(0x30, concat(parts));
  }

  private static byte[] set(byte[]... parts) {
    return tlv(0x31, concat(parts));
  }

  /** Tag, definite length (short form under 128, else long form), content. */
  private static byte[] tlv(int tag, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(content.length + 6);
    out.write(tag);
    int n = content.length;
    if (n < 0x80) {
      out.write(n);
    } else {
      int bytes = (32 - Integer.numberOfLeadingZeros(n) + 7) / 8;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write(n >>> (8 * i));
      }
    }
    out.writeBytes(content);
    return out.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der) + "\n-----END " + type + "-----\n";
  }
}
