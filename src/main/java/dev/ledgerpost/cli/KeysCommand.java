package dev.ledgerpost.cli;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.config.PrivateFiles;
import dev.ledgerpost.platform.auth.ApiKeys;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ledgerpost keys add <user>}: makes a send API key, prints it once on standard output (so
 * {@code KEY=$(ledgerpost keys add app)} works), and appends only its SHA-256 to {@code api.keysFile}. It works
 * on the file, not through a running gateway: the gateway reads the file at start and on SIGHUP.
 * Exit codes: 0 done, 1 the file cannot be written, 2 usage or configuration (no keys file configured, a bad
 * line already in it: nothing is added then).
 */
@Command(name = "keys", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Send API keys in api.keysFile.", subcommands = {KeysCommand.Add.class})
public final class KeysCommand {
  static final int CANNOT_WRITE = 1;
  static final int USAGE = 2;

  /** The environment the configuration is read with; tests replace it. */
  static Map<String, String> env = System.getenv();

  @Command(name = "add", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Make a new send API key for USER: print it once, append its hash to the keys file.")
  static final class Add implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "USER", description = "Recorded as the auth user of the messages sent with the key.")
    String user;

    @Option(names = "--rate", paramLabel = "N", description = "Requests per second for this key (default: api.rateLimit).")
    Double rate;

    @Option(names = "--capture", description = "A capturing key: its mail is recorded CAPTURED and kept, never relayed "
        + "(capture.retention; docs/design.md §8.10).")
    boolean capture;

    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
        description = "Configuration that names api.keysFile (default: conf/gateway.yaml when it exists).")
    Path config;

    @Option(names = "--file", paramLabel = "FILE", description = "The keys file itself (default: api.keysFile of the configuration).")
    Path file;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      if (!ApiKeys.USER.matcher(user).matches()) {
        err.println("USER must be 1 to 128 characters without spaces, ':' or '#': " + user);
        return USAGE;
      }
      if (rate != null && (!(rate > 0) || rate.isInfinite())) {
        err.println("--rate must be a positive number of requests per second");
        return USAGE;
      }
      Path configFile = ConfigLoader.chosenFile(config);
      Path keys;
      try {
        keys = file != null ? file.toAbsolutePath().normalize()
            : ConfigLoader.pathKey(configFile, env, ApiKeys.KEY).orElse(null);
      } catch (ConfigException e) {
        err.println(e.getMessage());
        return USAGE;
      }
      if (keys == null) {
        err.println("api.keysFile is not set (" + (configFile == null ? "no configuration file" : configFile)
            + ", no LEDGERPOST_API_KEYSFILE): uncomment `keysFile: api-keys` under `api:` in conf/gateway.yaml, or give --file");
        return USAGE;
      }
      if (Files.exists(keys)) {
        try {
          ApiKeys.check(keys); // the gateway would refuse a file with a bad line: say so now, add nothing (and log nothing:
                               // standard output is the key's alone)
        } catch (ConfigException e) {
          err.println(e.getMessage());
          err.println("nothing was added: fix " + keys + " first");
          return USAGE;
        }
      }
      byte[] random = new byte[24];
      new SecureRandom().nextBytes(random);
      String key = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
      try {
        append(keys, ApiKeys.line(user, key, rate, capture));
      } catch (IOException e) {
        err.println("cannot write " + keys + ": " + e.getMessage());
        return CANNOT_WRITE;
      }
      out.println(key);
      err.println("added a " + (capture ? "capturing " : "") + "send API key for user " + user + " to " + keys + " (its SHA-256 only: the key is shown this once). "
          + "A running gateway reads the file on SIGHUP (kill -HUP <its PID>) or at its next start.");
      return 0;
    }
  }

  /**
   * Appends one line, starting a new line first if the file does not end with one; a new file is owner-only from its
   * first byte (PrivateFiles), and the line is on disk before the command says it was added.
   */
  static void append(Path keys, String line) throws IOException {
    PrivateFiles.createDirectories(keys.toAbsolutePath().getParent());
    String prefix = "";
    if (Files.exists(keys) && Files.size(keys) > 0) {
      byte[] all = Files.readAllBytes(keys);
      prefix = all[all.length - 1] == '\n' ? "" : "\n";
    }
    try (FileChannel ch = PrivateFiles.open(keys, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      ByteBuffer b = ByteBuffer.wrap((prefix + line + "\n").getBytes(StandardCharsets.UTF_8));
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    }
  }
}
