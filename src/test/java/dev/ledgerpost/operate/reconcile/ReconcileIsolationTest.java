package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/design.md §8.4: reconciliation never sends mail to find out what happened. The reconcile part's compiled
 * classes name nothing of the delivery or SMTP parts (nor of the send API), so they cannot.
 */
class ReconcileIsolationTest {

  @Test
  void noReconcileClassReferencesThePartsThatSendMail() throws Exception {
    Path classes = Path.of(ReconcileVerticle.class.getProtectionDomain().getCodeSource().getLocation().toURI())
        .resolve("dev/ledgerpost/operate/reconcile");
    List<Path> files;
    try (Stream<Path> s = Files.list(classes)) {
      files = s.filter(p -> p.toString().endsWith(".class")).toList();
    }
    assertThat(files).hasSizeGreaterThan(6);
    for (Path f : files) {
      // Class references sit in the constant pool as internal names, e.g. dev/ledgerpost/relay/Relay.
      String pool = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
      assertThat(pool).as(f.getFileName().toString())
          .doesNotContain("dev/ledgerpost/relay/smarthost", "dev/ledgerpost/intake/")
          .doesNotContainPattern("dev/ledgerpost/relay/(Relay|ContractTransaction|WireTransaction)");
    }
  }
}
