package dev.ledgerpost.cli;

import dev.ledgerpost.archive.LedgerArchive;
import dev.ledgerpost.archive.LedgerArchive.Verification;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ledgerpost ledger verify FILE}: checks an export where it lies, without a gateway or a database. Exit
 * status 0 it matches its manifest (a summary line), 1 it does not (one line why), 2 usage or a file that cannot be read.
 */
@Command(name = "verify", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Check an export (its .jsonl.gz or its .manifest.json) against its manifest: size, SHA-256, that it "
        + "decompresses whole, and the rows per table. Exit status 0 ok, 1 mismatch, 2 unreadable or usage.")
final class LedgerVerifyCommand implements Callable<Integer> {
  static final int MISMATCH = 1;
  static final int UNREADABLE = 2;

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "The export's .jsonl.gz, or its .manifest.json.")
  Path file;

  @Override
  public Integer call() {
    Verification v = LedgerArchive.verify(file);
    switch (v.outcome()) {
      case OK -> {
        spec.commandLine().getOut().println(v.line());
        return 0;
      }
      case MISMATCH -> {
        spec.commandLine().getErr().println("MISMATCH " + v.line());
        return MISMATCH;
      }
      default -> {
        spec.commandLine().getErr().println(v.line());
        return UNREADABLE;
      }
    }
  }
}
