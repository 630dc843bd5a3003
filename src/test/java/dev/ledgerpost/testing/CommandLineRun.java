package dev.ledgerpost.testing;

import dev.ledgerpost.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** The {@code ledgerpost} command line run in-process, with what it printed and its exit status. */
public record CommandLineRun(int exit, String out, String err) {
  public static CommandLineRun run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = new CommandLine(new Main()).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true)).execute(args);
    return new CommandLineRun(exit, out.toString(), err.toString());
  }
}
