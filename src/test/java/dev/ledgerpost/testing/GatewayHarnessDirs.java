package dev.ledgerpost.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Fresh directories under target/, one per use, for files a gateway under test reads. */
public final class GatewayHarnessDirs {
  private GatewayHarnessDirs() {}

  public static Path fresh(String prefix) {
    try {
      Path base = Files.createDirectories(Path.of("target", "test-data"));
      return Files.createTempDirectory(base, prefix).toAbsolutePath();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
