package dev.ledgerpost.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A real Postfix (Debian's {@code postfix}, which .ci/run installs) as a smarthost for a test: a private instance whose
 * configuration, queue and data live in a directory of their own ({@code postfix -c DIR start}), listening on
 * 127.0.0.1 on a free port picked just before the start, relaying everything to {@code 127.0.0.1:nextHop}, logging to
 * its own {@code maillog_file}, with the given {@code header_checks} (regexp lines, e.g. {@code /^Subject: REJECTME/
 * REJECT content rejected}). Stopped with {@code postfix -c DIR stop} at {@link #close}; it waits for the master
 * process (its PID from the pid file) to end. Postfix's master must start as root: the tests run as root (CI does).
 */
public final class PostfixServer implements AutoCloseable {
  private static final int ATTEMPTS = 3;
  private static final Duration START = Duration.ofSeconds(30);

  private final Path dir;
  private final int port;

  private PostfixServer(Path dir, int port) {
    this.dir = dir;
    this.port = port;
  }

  /** Starts the instance and returns once it listens. */
  public static PostfixServer start(int nextHopPort, List<String> headerChecks) throws Exception {
    if (!Files.isExecutable(Path.of("/usr/sbin/postfix"))) {
      throw new AssertionError("Postfix is not installed (/usr/sbin/postfix): .ci/run installs Debian's postfix");
    }
    String failure = "";
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      // Under the system's temporary directory: every directory on the way must be open to the postfix user.
      Path dir = Files.createTempDirectory("ledgerpost-postfix-");
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
      int port = freePort();
      configure(dir, port, nextHopPort, headerChecks);
      PostfixServer p = new PostfixServer(dir, port);
      Run started = run("/usr/sbin/postfix", "-c", dir.resolve("etc").toString(), "start");
      if (started.status == 0 && p.awaitListening(START)) {
        return p;
      }
      failure = started.output + "\n" + p.log();
      p.close();
    }
    throw new AssertionError("Postfix did not start in " + ATTEMPTS + " attempts:\n" + failure);
  }

  private static void configure(Path dir, int port, int nextHop, List<String> headerChecks) throws IOException {
    Path etc = Files.createDirectories(dir.resolve("etc"));
    Path spool = Files.createDirectories(dir.resolve("spool"));
    Path data = Files.createDirectories(dir.resolve("data"));
    Path log = Files.createDirectories(dir.resolve("log"));
    for (Path p : List.of(etc, spool, log)) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    UserPrincipal postfix = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postfix");
    Files.setOwner(data, postfix); // Postfix's own: its master lock and caches
    Files.writeString(etc.resolve("header_checks"), String.join("\n", headerChecks) + "\n");
    Files.writeString(etc.resolve("main.cf"), String.join("\n",
        "compatibility_level = 3.6",
        "queue_directory = " + spool,
        "data_directory = " + data,
        "myhostname = smarthost.test",
        "mydomain = test",
        "myorigin = smarthost.test",
        "mydestination =",
        "inet_interfaces = 127.0.0.1",
        "inet_protocols = ipv4",
        "mynetworks = 127.0.0.0/8",
        "smtpd_relay_restrictions = permit_mynetworks, reject",
        "relayhost = [127.0.0.1]:" + nextHop,
        "smtp_tls_security_level = none",
        "alias_maps =",
        "alias_database =",
        "local_recipient_maps =",
        "header_checks = regexp:" + etc.resolve("header_checks"),
        "maillog_file = " + log.resolve("maillog"),
        "maillog_file_prefixes = " + dir,
        "smtpd_banner = $myhostname ESMTP",
        "") + "\n", StandardCharsets.UTF_8);
    Files.writeString(etc.resolve("master.cf"), String.join("\n",
        "127.0.0.1:" + port + " inet n - n - - smtpd",
        "pickup unix n - n 60 1 pickup",
        "cleanup unix n - n - 0 cleanup",
        "qmgr unix n - n 300 1 qmgr",
        "rewrite unix - - n - - trivial-rewrite",
        "bounce unix - - n - 0 bounce",
        "defer unix - - n - 0 bounce",
        "trace unix - - n - 0 bounce",
        "verify unix - - n - 1 verify",
        "flush unix n - n 1000? 0 flush",
        "proxymap unix - - n - - proxymap",
        "smtp unix - - n - - smtp",
        "relay unix - - n - - smtp",
        "showq unix n - n - - showq",
        "error unix - - n - - error",
        "retry unix - - n - - error",
        "discard unix - - n - - discard",
        "local unix - n n - - local",
        "lmtp unix - - n - - lmtp",
        "anvil unix - - n - 1 anvil",
        "scache unix - - n - 1 scache",
        "postlog unix-dgram n - n - 1 postlogd",
        ""), StandardCharsets.UTF_8);
  }

  /** The SMTP port on 127.0.0.1. */
  public int port() {
    return port;
  }

  /** Postfix's own log file (maillog_file). */
  public Path maillog() {
    return dir.resolve("log").resolve("maillog");
  }

  /** The log as it is now, or "" before it exists. */
  public String log() throws IOException {
    return Files.isRegularFile(maillog()) ? Files.readString(maillog(), StandardCharsets.UTF_8) : "";
  }

  /** The lines of the log that contain {@code text}. */
  public List<String> logLines(String text) throws IOException {
    List<String> out = new ArrayList<>();
    for (String l : log().split("\n")) {
      if (l.contains(text)) {
        out.add(l);
      }
    }
    return out;
  }

  private boolean awaitListening(Duration within) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    String wanted = String.format(Locale.ROOT, "0100007F:%04X", port);
    while (System.nanoTime() < deadline) {
      for (String line : Files.readAllLines(Path.of("/proc/net/tcp"))) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 3 && f[3].equals("0A") && f[1].equals(wanted)) {
          return true;
        }
      }
      Thread.sleep(20); // polling with a deadline
    }
    return false;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private record Run(int status, String output) {}

  private static Run run(String... command) throws Exception {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return new Run(-1, out + "\n(" + String.join(" ", command) + " did not end within 60 s)");
    }
    return new Run(p.exitValue(), out);
  }

  /** {@code postfix -c DIR stop}, then waits (bounded) for its master process to be gone. */
  @Override
  public void close() throws Exception {
    Path pidFile = dir.resolve("spool").resolve("pid").resolve("master.pid");
    long pid = -1;
    if (Files.isRegularFile(pidFile)) {
      try {
        pid = Long.parseLong(Files.readString(pidFile).trim());
      } catch (NumberFormatException e) {
        pid = -1;
      }
    }
    run("/usr/sbin/postfix", "-c", dir.resolve("etc").toString(), "stop");
    if (pid > 0) {
      long master = pid;
      Poll.until(Duration.ofSeconds(30), "Postfix master " + master + " to end",
          () -> ProcessHandle.of(master).map(h -> !h.isAlive()).orElse(true));
    }
  }
}
