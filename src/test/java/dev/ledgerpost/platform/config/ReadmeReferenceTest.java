package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README's configuration table is written from ConfigKeys: every key's row must be there, verbatim. */
class ReadmeReferenceTest {

  @Test
  void everyConfigurationKeyHasItsRowInTheReadme() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    for (String[] row : ConfigLoader.reference()) {
      String def = row[2].isEmpty() ? "(empty)" : "`" + row[2] + "`";
      String line = "| `" + row[0] + "` | `" + row[1] + "` | " + def + " | " + row[3] + " |";
      assertThat(readme).as(row[0]).contains(line);
    }
  }
}
