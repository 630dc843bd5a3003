package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.auth.CredentialFile;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The key that authenticates export manifests (docs/data-model.md §5.13): an HMAC-SHA256 of the manifest under it, and
 * its {@link #id()} in the manifest. Without it, whoever can write to the archive can rewrite an export and recompute
 * the checksums a manifest holds; with it, {@code ledger verify} tells such a file from the one the ledger wrote. It is
 * the one line of {@code ledger.archiveKeyFile}, else of {@code <data>/archive-key} (next to the admin token), which
 * the gateway generates on its first export. Every node of one ledger needs the same key to take each other's exports.
 */
public final class ArchiveKey {
  static final String FILE_KEY = "ledger.archiveKeyFile";
  public static final String GENERATED_NAME = "archive-key";
  static final int MIN_LENGTH = 32;
  /** What the id is the MAC of: names the key in every manifest without revealing it. */
  private static final byte[] ID_TEXT = "ledgerpost archive key id".getBytes(StandardCharsets.US_ASCII);

  private final byte[] secret;
  private final String id;

  private ArchiveKey(byte[] secret) {
    this.secret = secret.clone();
    this.id = HexFormat.of().formatHex(hmac(ID_TEXT)).substring(0, 16);
  }

  /** A key from its text (the HMAC key is the text's UTF-8); at least {@value #MIN_LENGTH} characters, no spaces. */
  public static ArchiveKey of(String text) {
    if (text.length() < MIN_LENGTH || text.chars().anyMatch(Character::isWhitespace)) {
      throw new IllegalArgumentException("expected one key of at least " + MIN_LENGTH + " characters without spaces");
    }
    return new ArchiveKey(text.getBytes(StandardCharsets.UTF_8));
  }

  /** 16 hex digits that name the key: the same key gives the same id on every node. */
  public String id() {
    return id;
  }

  /** The MAC of {@code text} (UTF-8), hex. */
  String mac(String text) {
    return HexFormat.of().formatHex(hmac(text.getBytes(StandardCharsets.UTF_8)));
  }

  /** Whether {@code mac} is the MAC of {@code text} under this key; in constant time. */
  boolean authenticates(String text, String mac) {
    byte[] given;
    try {
      given = HexFormat.of().parseHex(mac);
    } catch (IllegalArgumentException e) {
      return false;
    }
    return MessageDigest.isEqual(hmac(text.getBytes(StandardCharsets.UTF_8)), given);
  }

  private byte[] hmac(byte[] data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      return mac.doFinal(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Where the key is: {@code file}, and whether it is made there when missing (the gateway's default file only; a
   * configured file is the operator's, and {@code ledger verify} never makes a key: a new one authenticates nothing).
   */
  public record Location(Path file, boolean generate) {
    /** {@code ledger.archiveKeyFile}, else {@code archive-key} next to the embedded ledger's data directory. */
    public static Location of(GatewayConfig.Ledger ledger) {
      return ledger.archiveKeyFile().isEmpty()
          ? new Location(Path.of(ledger.dataDir()).toAbsolutePath().getParent().resolve(GENERATED_NAME), true)
          : new Location(Path.of(ledger.archiveKeyFile()), false);
    }

    /** The key; made first when it may be and is missing. Blocking. A missing or bad file is a {@link ConfigException}. */
    public ArchiveKey load() {
      if (generate) {
        generateIfMissing(file);
      }
      List<CredentialFile.Entry<ArchiveKey>> keys = CredentialFile.read(FILE_KEY, file, ArchiveKey::of);
      if (keys.size() != 1) {
        throw new ConfigException(List.of(FILE_KEY + " " + file + ": " + (keys.isEmpty() ? "holds no key" : "holds more than one key")
            + "; export manifests are authenticated under exactly one"));
      }
      return keys.get(0).value();
    }
  }

  /**
   * 32 random bytes as hex, written as every generated secret is ({@link PrivateFiles#generateKey}: 0600 from its
   * first byte, fsynced with its directory before anything is signed under it, linked to its name so that two
   * gateways sharing the directory never see a half-written key, and the second reads the first's).
   */
  private static void generateIfMissing(Path file) {
    try {
      if (PrivateFiles.generateKey(file)) {
        org.slf4j.LoggerFactory.getLogger(ArchiveKey.class).info("{} not configured: generated the archive key into {}",
            FILE_KEY, file);
      }
    } catch (IOException | UnsupportedOperationException e) {
      throw new ConfigException(List.of(FILE_KEY + ": not configured, and no archive key can be written to " + file + ": "
          + e.getMessage()));
    }
  }
}
