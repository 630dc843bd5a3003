package dev.ledgerpost.operate.erasure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.testing.GatewayHarness;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Where the erasure's key comes from, and what a bad one says (docs/design.md §8.6). */
class ErasureKeyTest {
  static final String KEY = "0123456789abcdef0123456789abcdef-key";

  static GatewayConfig config(Map<String, Object> keys) {
    Map<String, Object> o = new HashMap<>(keys);
    o.putIfAbsent("ledger.dataDir", GatewayHarness.tempDir("erasure-key-").resolve("pg").toString());
    return ConfigLoader.fromSources(Map.of(), Map.of(), o);
  }

  @Test
  void aConfiguredKeyOrKeyFileIsUsedAsItIs() throws Exception {
    assertThat(ErasureKey.of(config(Map.of("ledger.erasureKey", KEY)).ledger()).read())
        .isEqualTo(KEY.getBytes(StandardCharsets.UTF_8));
    Path file = GatewayHarness.tempDir("erasure-key-").resolve("key");
    Files.writeString(file, "# the erasure key\n" + KEY + "\n");
    GatewayConfig fromFile = config(Map.of("ledger.erasureKeyFile", file.toString()));
    assertThat(ErasureKey.of(fromFile.ledger()).read()).isEqualTo(KEY.getBytes(StandardCharsets.UTF_8));
    assertThat(Files.exists(ErasureKey.generatedFile(fromFile.ledger()))).as("nothing generated").isFalse();
  }

  @Test
  void withoutOneAKeyIsGeneratedOnceNextToTheDataDirectoryReadableOnlyByItsOwner() throws Exception {
    GatewayConfig c = config(Map.of());
    Path file = ErasureKey.generatedFile(c.ledger());
    assertThat(file.getParent()).isEqualTo(Path.of(c.ledger().dataDir()).getParent());
    assertThat(Files.exists(file)).as("made on first use, not at start").isFalse();
    byte[] first = ErasureKey.of(c.ledger()).read();
    assertThat(Files.readString(file).trim()).matches("[0-9a-f]{64}");
    assertThat(new String(first, StandardCharsets.UTF_8)).isEqualTo(Files.readString(file).trim());
    assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(ErasureKey.of(c.ledger()).read()).as("the same key at the next erasure").isEqualTo(first);
  }

  @Test
  void aShortKeyBothKeysOrADamagedFileAreRefusedWithTheKeyNamed() throws Exception {
    assertThatThrownBy(() -> config(Map.of("ledger.erasureKey", "short")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ledger.erasureKey").hasMessageContaining("at least 32");
    Path file = GatewayHarness.tempDir("erasure-key-").resolve("key");
    Files.writeString(file, KEY + "\n");
    assertThatThrownBy(() -> config(Map.of("ledger.erasureKey", KEY, "ledger.erasureKeyFile", file.toString())))
        .isInstanceOf(ConfigException.class).hasMessageContaining("give one or neither");
    assertThatThrownBy(() -> config(Map.of("ledger.erasureKeyFile", file + ".missing")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ledger.erasureKeyFile: cannot read");

    Files.writeString(file, "\n");
    GatewayConfig emptied = config(Map.of("ledger.erasureKeyFile", file.toString()));
    assertThatThrownBy(() -> ErasureKey.of(emptied.ledger()).read())
        .isInstanceOf(ConfigException.class).hasMessageContaining("ledger.erasureKeyFile " + file + ": holds no key");
    Files.writeString(file, "too short\n");
    assertThatThrownBy(() -> ErasureKey.of(emptied.ledger()).read())
        .isInstanceOf(ConfigException.class).hasMessageContaining("line 1: expected one key of at least 32 characters");
  }
}
