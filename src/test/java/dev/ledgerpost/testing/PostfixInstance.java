package dev.ledgerpost.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real Postfix (Debian's {@code postfix}, which scripts/test.sh installs) as a private instance for one test: its own
 * configuration directory, queue and log file under target/test-data, started with {@code postfix -c DIR start}
 * and stopped with {@code postfix -c DIR stop} (then its master's PID, if it lingers). It listens on loopback
 * only: with {@link #smtpd} an SMTP server on a free port picked at start (Postfix needs a concrete port; a
 * port taken meanwhile means new ports, a few times at most). Its log ({@code maillog_file}, Postfix 3.4+) is
 * what the tests read: the queue ids its smtpd answered with, the relays its smtp client made.
 */
public final class PostfixInstance implements AutoCloseable {
  private static final int ATTEMPTS = 3;
  private static final String POSTFIX = "/usr/sbin/postfix";
  private static final String SENDMAIL = "/usr/sbin/sendmail";

  private final Path dir;
  private final int port;

  private PostfixInstance(Path dir, int port) {
    this.dir = dir;
    this.port = port;
  }

  /** Whether Postfix is installed here (the tests that need it say so when it is not, rather than pass). */
  public static boolean installed() {
    return ExternalTool.POSTFIX.installed() && ExternalTool.POSTFIX_SENDMAIL.installed();
  }

  /**
   * Starts an instance named {@code name} with these main.cf settings on top of the private basics; with
   * {@code smtpd} an SMTP server listens on 127.0.0.1 at a port of its own. Returns once the master runs (and
   * the server listens).
   */
  public static PostfixInstance start(String name, Map<String, String> settings, boolean smtpd) throws Exception {
    ExternalTool.POSTFIX.path(); // fails with one line when Postfix is not installed
    ExternalTool.POSTFIX_SENDMAIL.path();
    String failure = "";
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      Path dir = reachableDir("postfix-" + name + "-");
      int port = smtpd ? freePort() : 0;
      PostfixInstance p = new PostfixInstance(dir, port);
      p.configure(name, settings);
      Result r = p.postfix("start");
      if (r.exit() == 0 && p.awaitRunning(Duration.ofSeconds(30))) {
        return p;
      }
      failure = r.output() + "\n" + p.log();
      p.close();
    }
    throw new AssertionError("Postfix did not start in " + ATTEMPTS + " attempts:\n" + failure);
  }

  /**
   * A directory of its own that Postfix's daemons, which run as user postfix, can reach: under target/test-data when
   * every directory above it lets others through (a checkout in a mode-700 directory, such as one made by mktemp -d
   * or root's home, does not), else under the system's temporary directory. A temporary directory is root's alone
   * until it is opened to others.
   */
  private static Path reachableDir(String prefix) throws IOException {
    Path dir = GatewayHarness.tempDir(prefix);
    if (!othersCanTraverse(dir.getParent())) {
      dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "ledgerpost-" + prefix);
    }
    Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    return dir;
  }

  private static boolean othersCanTraverse(Path dir) throws IOException {
    for (Path p = dir.toAbsolutePath(); p != null; p = p.getParent()) {
      if (!Files.getPosixFilePermissions(p).contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
        return false;
      }
    }
    return true;
  }

  private void configure(String name, Map<String, String> settings) throws IOException {
    Path queue = Files.createDirectories(dir.resolve("queue"));
    Path data = Files.createDirectories(dir.resolve("data"));
    run(List.of("chown", "postfix", data.toString())); // the master's lock file and the TLS caches live there
    Map<String, String> main = new LinkedHashMap<>();
    main.put("compatibility_level", "3.6");
    main.put("queue_directory", queue.toString());
    main.put("data_directory", data.toString());
    main.put("mail_owner", "postfix");
    main.put("setgid_group", "postdrop");
    main.put("inet_interfaces", "127.0.0.1");
    main.put("inet_protocols", "ipv4");
    main.put("myhostname", name + ".test");
    main.put("mydomain", "test");
    main.put("myorigin", name + ".test");
    main.put("mydestination", "");
    main.put("mynetworks", "127.0.0.0/8");
    main.put("alias_maps", "");
    main.put("alias_database", "");
    main.put("smtputf8_enable", "yes");
    main.put("maillog_file", dir.resolve("maillog").toString());
    main.put("maillog_file_prefixes", dir.toString());
    main.put("biff", "no");
    main.putAll(settings);
    StringBuilder cf = new StringBuilder();
    main.forEach((k, v) -> cf.append(k).append(" = ").append(v).append('\n'));
    Files.writeString(dir.resolve("main.cf"), cf.toString(), StandardCharsets.UTF_8);
    // No chroot: the private queue is not set up as a chroot jail.
    StringBuilder master = new StringBuilder("""
        pickup    unix  n       -       n       60      1       pickup
        cleanup   unix  n       -       n       -       0       cleanup
        qmgr      unix  n       -       n       300     1       qmgr
        tlsmgr    unix  -       -       n       1000?   1       tlsmgr
        rewrite   unix  -       -       n       -       -       trivial-rewrite
        bounce    unix  -       -       n       -       0       bounce
        defer     unix  -       -       n       -       0       bounce
        trace     unix  -       -       n       -       0       bounce
        verify    unix  -       -       n       -       1       verify
        flush     unix  n       -       n       1000?   0       flush
        proxymap  unix  -       -       n       -       -       proxymap
        smtp      unix  -       -       n       -       -       smtp
        relay     unix  -       -       n       -       -       smtp
        showq     unix  n       -       n       -       -       showq
        error     unix  -       -       n       -       -       error
        retry     unix  -       -       n       -       -       error
        discard   unix  -       -       n       -       -       discard
        anvil     unix  -       -       n       -       1       anvil
        scache    unix  -       -       n       -       1       scache
        postlog   unix-dgram n  -       n       -       1       postlogd
        """);
    if (port > 0) {
      master.append("127.0.0.1:").append(port).append(" inet  n  -  n  -  -  smtpd\n");
    }
    Files.writeString(dir.resolve("master.cf"), master.toString(), StandardCharsets.UTF_8);
  }

  /**
   * Has the running instance read main.cf and its lookup tables again ({@code postfix reload}): for a table that names a
   * port known only once something else started (a transport map to a gateway started after this instance).
   */
  public void reload() throws Exception {
    Result r = postfix("reload");
    if (r.exit() != 0) {
      throw new AssertionError("postfix reload failed:\n" + r.output());
    }
  }

  /** The configuration directory (main.cf, master.cf). */
  public Path dir() {
    return dir;
  }

  /** The SMTP server's port (0 without one). */
  public int port() {
    return port;
  }

  /** Postfix's own log so far. */
  public String log() {
    try {
      Path log = dir.resolve("maillog");
      return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      return "(log unreadable: " + e.getMessage() + ")";
    }
  }

  /** Postfix's sendmail with this instance's configuration: the message goes into its queue (pickup does the rest). */
  public void sendmail(byte[] message, List<String> options, String from, List<String> to) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(SENDMAIL, "-C", dir.toString(), "-i", "-f", from));
    cmd.addAll(options);
    cmd.add("--");
    cmd.addAll(to);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    p.getOutputStream().write(message);
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError("sendmail " + cmd + " failed: " + out);
    }
  }

  /** How many messages wait in its queue ({@code postqueue -j}: one JSON line each). */
  public int queued() throws Exception {
    Result r = run(List.of("/usr/sbin/postqueue", "-c", dir.toString(), "-j"));
    return (int) r.output().lines().filter(l -> l.startsWith("{")).count();
  }

  /** How many of them are on hold ({@code "queue_name": "hold"} in {@code postqueue -j}): put there by a HOLD check. */
  public int held() throws Exception {
    Result r = run(List.of("/usr/sbin/postqueue", "-c", dir.toString(), "-j"));
    return (int) r.output().lines().filter(l -> l.contains("\"queue_name\": \"hold\"")).count();
  }

  /**
   * Releases every message on hold ({@code postsuper -H ALL}) into the deferred queue, from which the queue manager takes
   * them all at its next scan ({@code queue_run_delay}): a test that needs many messages delivered at once queues them
   * on hold first.
   */
  public void releaseHeld() throws Exception {
    Result r = run(List.of("/usr/sbin/postsuper", "-c", dir.toString(), "-H", "ALL"));
    if (r.exit() != 0) {
      throw new AssertionError("postsuper -H ALL failed: " + r.output());
    }
  }

  private record Result(int exit, String output) {}

  private Result postfix(String command) throws IOException {
    return run(List.of(POSTFIX, "-c", dir.toString(), command));
  }

  private static Result run(List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new Result(-1, out + "\n(timed out)");
      }
      return new Result(p.exitValue(), out);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /** The master's PID from its pid file, or -1. */
  private long masterPid() {
    try {
      Path pid = dir.resolve("queue").resolve("pid").resolve("master.pid");
      return Files.exists(pid) ? Long.parseLong(Files.readString(pid).trim()) : -1;
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  private boolean awaitRunning(Duration within) throws Exception {
    Poll.within(within, () -> running() || log().contains("fatal:"));
    return running();
  }

  /** The master process is alive and, when it has a port, listening on it. */
  private boolean running() throws IOException {
    long pid = masterPid();
    boolean master = pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    return master && (port == 0 || listening(port));
  }

  /** Whether the kernel lists 127.0.0.1:port as listening (/proc/net/tcp), without connecting to it. */
  private static boolean listening(int port) throws IOException {
    String want = String.format(Locale.ROOT, "0100007F:%04X", port);
    for (String line : Files.readAllLines(Path.of("/proc/net/tcp"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length > 3 && f[3].equals("0A") && f[1].equals(want)) {
        return true;
      }
    }
    return false;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** {@code postfix stop}; the master's PID is killed if it has not gone within 20 s. */
  @Override
  public void close() throws Exception {
    long pid = masterPid();
    postfix("stop");
    if (pid > 0) {
      ProcessHandle.of(pid).ifPresent(h -> {
        try {
          h.onExit().get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
          h.destroyForcibly();
        }
      });
    }
  }
}
