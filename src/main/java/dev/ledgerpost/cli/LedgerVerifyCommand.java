package dev.ledgerpost.cli;

import dev.ledgerpost.operate.archive.ArchiveKey;
import dev.ledgerpost.operate.archive.LedgerArchive;
import dev.ledgerpost.operate.archive.LedgerArchive.Verification;
import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ledgerpost ledger verify FILE}: checks an export where it lies, without a gateway or a database. The manifest
 * is authenticated under the archive key (docs/data-model.md §5.13): {@code --key-file}, else the key the gateway's
 * configuration names ({@code ledger.archiveKeyFile}, else {@code archive-key} next to {@code ledger.dataDir}); this
 * command never makes a key. Exit status 0 it matches its authenticated manifest (a summary line), 1 it does not (one
 * line why), 2 usage or a file that cannot be read, 3 it matches its manifest but the manifest could not be
 * authenticated (no key here, another key, or a format 1 manifest): a rewritten export would look the same.
 */
@Command(name = "verify", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Check an export (its .jsonl.gz or its .manifest.json): the manifest's MAC under the archive key, the "
        + "size and SHA-256, that it decompresses whole, that every row's message id is in the manifest's range, and "
        + "the rows per table; and the suppression list's file beside it (.suppressions.jsonl.gz: size, SHA-256, "
        + "entries). Exit status 0 ok, 1 mismatch, 2 unreadable or usage, 3 not authenticated (no key).")
final class LedgerVerifyCommand implements Callable<Integer> {
  static final int MISMATCH = 1;
  static final int UNREADABLE = 2;
  static final int UNAUTHENTICATED = 3;

  /** The environment the configuration is read with; tests replace it. */
  static Map<String, String> env = System.getenv();

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "The export's .jsonl.gz, its .suppressions.jsonl.gz, or its .manifest.json.")
  Path file;

  @Option(names = "--key-file", paramLabel = "FILE",
      description = "The archive key (default: ledger.archiveKeyFile of the configuration, else archive-key next to ledger.dataDir).")
  Path keyFile;

  @Option(names = {"-c", "--config"}, paramLabel = "FILE",
      description = "The gateway's configuration, to find the archive key (default: conf/gateway.yaml when it exists).")
  Path config;

  @Override
  public Integer call() {
    Path key;
    try {
      key = keyFile != null ? keyFile : defaultKeyFile();
    } catch (ConfigException e) {
      spec.commandLine().getErr().println(e.getMessage());
      return UNREADABLE;
    }
    ArchiveKey loaded = null;
    String noKey = null;
    if (!Files.exists(key)) {
      noKey = "no archive key: " + key + " does not exist (give --key-file, or -c with the gateway's configuration)";
    } else {
      try {
        loaded = new ArchiveKey.Location(key, false).load();
      } catch (ConfigException e) {
        noKey = "no archive key: " + e.getMessage();
      }
    }
    Verification v = LedgerArchive.verify(file, loaded);
    switch (v.outcome()) {
      case OK -> {
        spec.commandLine().getOut().println(v.line());
        return 0;
      }
      case MISMATCH -> {
        spec.commandLine().getErr().println("MISMATCH " + v.line());
        return MISMATCH;
      }
      case UNAUTHENTICATED -> {
        spec.commandLine().getErr().println(v.line() + (noKey == null ? "" : " (" + noKey + ")"));
        return UNAUTHENTICATED;
      }
      default -> {
        spec.commandLine().getErr().println(v.line());
        return UNREADABLE;
      }
    }
  }

  /** Where the gateway of this configuration keeps its archive key, resolved as the gateway resolves it. */
  private Path defaultKeyFile() {
    Path configFile = ConfigLoader.chosenFile(config);
    return ConfigLoader.pathKey(configFile, env, "ledger.archiveKeyFile")
        .orElseGet(() -> ConfigLoader.pathKey(configFile, env, "ledger.dataDir").orElse(Path.of("data", "pg"))
            .toAbsolutePath().getParent().resolve(ArchiveKey.GENERATED_NAME));
  }
}
