package dev.ledgerpost.relay.retry;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** docs/contract.md §1.7: the retry part can never send mail. Its compiled classes name nothing of delivery or SMTP. */
class RetryIsolationTest {

  @Test
  void noRetryClassReferencesTheDeliveryOrSmtpParts() throws Exception {
    Path classes = Path.of(RetryVerticle.class.getProtectionDomain().getCodeSource().getLocation().toURI())
        .resolve("dev/ledgerpost/relay/retry");
    List<Path> files;
    try (Stream<Path> s = Files.list(classes)) {
      files = s.filter(p -> p.toString().endsWith(".class")).toList();
    }
    assertThat(files).hasSizeGreaterThan(5);
    for (Path f : files) {
      // Class references sit in the constant pool as internal names, e.g. dev/ledgerpost/relay/Relay.
      String pool = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
      // The relay wing's parts that talk to a smarthost: its pool, the contract and its transactions; and the intakes.
      assertThat(pool).as(f.getFileName().toString()).doesNotContain("dev/ledgerpost/relay/smarthost", "dev/ledgerpost/intake/")
          .doesNotContainPattern("dev/ledgerpost/relay/(Relay|ContractTransaction|WireTransaction)");
    }
  }
}
