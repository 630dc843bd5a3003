package dev.ledgerpost.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The gateway as a real child process ({@code java -cp <this test's class path> dev.ledgerpost.Main
 * --config FILE}, no subcommand), so a test can SIGKILL it. Its log is read from a pipe.
 */
public final class ChildGateway implements AutoCloseable {
  private static final Pattern READY = Pattern.compile("Ledgerpost ready: node \\S+, SMTP port (\\d+), HTTP port (\\d+)");

  private final Process process;
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private volatile int smtpPort = -1;
  private volatile int httpPort = -1;

  private final Thread reader;

  private final ChildJvm.Command jvm;

  private ChildGateway(Process process, ChildJvm.Command jvm) {
    this.process = process;
    this.jvm = jvm;
    reader = new Thread(this::readLog, "child-gateway-log-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts {@code dev.ledgerpost.Main --config <dir>/gateway.yaml} in {@code dir}. {@code shell}, when
   * given, is a bash prologue run before the JVM is exec'ed in the same process (ulimit, trap).
   */
  public static ChildGateway start(Path dir, String yaml, String shell) throws IOException {
    return start(dir, yaml, shell, List.of());
  }

  /**
   * The same with JVM options of the test's own before the main class ({@code -Dname=value}: a system property such
   * as {@code javax.net.ssl.trustStore}), after the harness's.
   */
  public static ChildGateway start(Path dir, String yaml, String shell, List<String> jvmOptions) throws IOException {
    Path config = dir.resolve("gateway.yaml");
    Files.writeString(config, yaml);
    return launch(dir, shell, java.util.Map.of(), jvmOptions, List.of("--config", config.toString()));
  }

  /**
   * {@code dev.ledgerpost.Main <args>} in {@code dir} with exactly these {@code LEDGERPOST_*} variables (the
   * test JVM's own are removed), and no configuration file written: for tests of the command line itself.
   */
  public static ChildGateway run(Path dir, java.util.Map<String, String> env, String... args) throws IOException {
    return launch(dir, null, env, List.of(), List.of(args));
  }

  private static ChildGateway launch(Path dir, String shell, java.util.Map<String, String> env, List<String> jvmOptions,
      List<String> args) throws IOException {
    List<String> cmd = new ArrayList<>();
    if (shell != null) {
      cmd.addAll(List.of("/bin/bash", "-c", shell + "; exec \"$0\" \"$@\""));
    }
    ChildJvm.Command jvm = ChildJvm.command();
    cmd.addAll(jvm.java());
    cmd.addAll(jvmOptions);
    cmd.add("dev.ledgerpost.Main");
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
    pb.environment().keySet().removeIf(k -> k.startsWith("LEDGERPOST_"));
    pb.environment().putAll(env);
    return new ChildGateway(pb.start(), jvm);
  }

  /** Sends a signal by name (HUP, TERM...) with the shell's kill: the JDK can only send TERM and KILL. */
  public void signal(String name) throws Exception {
    Process kill = new ProcessBuilder("/bin/sh", "-c", "kill -s " + name + " " + process.pid())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new AssertionError("kill -s " + name + " " + process.pid() + " failed");
    }
  }

  /**
   * SIGSTOP: the process stops where it is (a long GC pause, a paused VM) while its kernel keeps its sockets open and
   * answers TCP keepalives. {@link #close} sends SIGCONT first, so a stopped child can still be stopped cleanly.
   */
  public void freeze() throws Exception {
    signal("STOP");
  }

  /** SIGCONT: a stopped process goes on from where it stood. */
  public void thaw() throws Exception {
    signal("CONT");
  }

  private void readLog() {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        lines.add(line);
        System.out.println("[child " + process.pid() + "] " + line);
        Matcher m = READY.matcher(line);
        if (m.find()) {
          httpPort = Integer.parseInt(m.group(2));
          smtpPort = Integer.parseInt(m.group(1));
        }
      }
    } catch (IOException e) {
      lines.add("log pipe closed: " + e);
    }
  }

  public ChildGateway awaitReady(Duration within) throws Exception {
    Poll.until(within, "child gateway ready (log so far: " + lines.size() + " lines)", () -> {
      if (!process.isAlive() && smtpPort < 0) {
        throw new AssertionError("child gateway exited with " + process.exitValue() + ":\n" + String.join("\n", lines));
      }
      return smtpPort > 0;
    });
    ChildJvm.ready(jvm);
    return this;
  }

  public int smtpPort() {
    return smtpPort;
  }

  public int httpPort() {
    return httpPort;
  }

  /** Log lines that contain every fragment. */
  public List<String> log(String... fragments) {
    return lines.stream().filter(l -> java.util.Arrays.stream(fragments).allMatch(l::contains)).toList();
  }

  public long pid() {
    return process.pid();
  }

  /** Every log line so far. */
  public List<String> lines() {
    return List.copyOf(lines);
  }

  /** For a child expected to end by itself (a refused start): its exit status, once its log is read to the end. */
  public int awaitExit(Duration within) throws Exception {
    if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("child gateway still running after " + within + ":\n" + String.join("\n", lines));
    }
    Poll.until(Duration.ofSeconds(10), "child log read to its end", () -> !reader.isAlive());
    return process.exitValue();
  }

  /** SIGKILL: no shutdown hook, no flush, no goodbye. Returns the exit status. */
  public int kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      throw new AssertionError("child gateway survived SIGKILL");
    }
    return process.exitValue();
  }

  /** SIGTERM, the way an operator stops it; SIGKILL if it does not go. */
  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      try {
        thaw(); // a stopped JVM cannot run its shutdown hook: SIGTERM would wait for the SIGKILL
      } catch (Exception | AssertionError e) {
        // it ended meanwhile
      }
      process.destroy();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  /** The YAML a test child runs with; the journal takes its default place, {@code <dir>/journal}. */
  public static String config(Path dir, int downstreamPort, String ledgerUrl) {
    return config(dir, downstreamPort, ledgerUrl, null);
  }

  /** With a STARTTLS certificate made beforehand (a child that may not write files cannot make its own). */
  public static String config(Path dir, int downstreamPort, String ledgerUrl,
      io.vertx.core.net.SelfSignedCertificate tls) {
    String certificate = tls == null ? ""
        : "\n  tls:\n    certFile: \"" + tls.certificatePath() + "\"\n    keyFile: \"" + tls.privateKeyPath() + "\"";
    return String.join("\n",
        "smtp:", "  port: 0", "  hostname: child.test" + certificate,
        "http:", "  port: 0",
        "downstream:", "  host: 127.0.0.1", "  port: " + downstreamPort, "  starttls: none",
        "ledger:", "  url: \"" + ledgerUrl + "\"", "  dataDir: \"" + dir.resolve("pg") + "\"", "  lockTimeout: 250ms",
        "api:", "  adminToken: child-token", "");
  }
}
