package dev.ledgerpost.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A real HAProxy (Debian's {@code haproxy}, which scripts/test.sh installs) in TCP mode, started as a child
 * process ({@code haproxy -f cfg -db}) for a test: one {@code listen} section per {@link Route}, each
 * bound to 127.0.0.1 on a free port picked just before the start (HAProxy needs a concrete port), each
 * forwarding to one server with the route's options ({@code send-proxy-v2 source 127.0.0.3}...). Stopped
 * by its PID at {@link #close}.
 */
public final class Haproxy implements AutoCloseable {
  /**
   * One frontend: its name, the servers it balances over (host:port, round robin; a server that refuses the
   * connection is skipped: {@code option redispatch}), and the options of each server line.
   */
  public record Route(String name, List<String> servers, String serverOptions) {
    public Route(String name, String host, int port, String serverOptions) {
      this(name, List.of(host + ":" + port), serverOptions);
    }
  }

  private static final int ATTEMPTS = 3;

  private final Process process;
  private final Map<String, Integer> ports;
  private final List<String> output = new CopyOnWriteArrayList<>();

  private Haproxy(Process process, Map<String, Integer> ports) {
    this.process = process;
    this.ports = ports;
    Thread reader = new Thread(this::readOutput, "haproxy-output-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts HAProxy and returns once every frontend listens. A port taken between picking and binding
   * (another process was quicker) makes HAProxy exit: then new ports are picked, a few times at most.
   */
  public static Haproxy start(List<Route> routes) throws Exception {
    return start(routes.stream().map(Route::name).toList(), ports -> config(routes, ports));
  }

  /**
   * Starts HAProxy with a configuration of the caller's (a shipped file, adapted), which {@code config} writes for the
   * free ports it is given, one per name in {@code frontends}; returns once each of those ports listens.
   */
  public static Haproxy start(List<String> frontends, java.util.function.Function<Map<String, Integer>, String> config)
      throws Exception {
    Path dir = GatewayHarness.tempDir("haproxy-");
    String failure = "";
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      Map<String, Integer> ports = new LinkedHashMap<>();
      for (String name : frontends) {
        ports.put(name, freePort());
      }
      Path cfg = dir.resolve("haproxy-" + attempt + ".cfg");
      Files.writeString(cfg, config.apply(ports), StandardCharsets.UTF_8);
      Process p = new ProcessBuilder(executable(), "-f", cfg.toString(), "-db").redirectErrorStream(true).start();
      Haproxy h = new Haproxy(p, ports);
      if (h.awaitListening(Duration.ofSeconds(15))) {
        return h;
      }
      failure = String.join("\n", h.output);
      h.close();
    }
    throw new AssertionError("HAProxy did not start in " + ATTEMPTS + " attempts:\n" + failure);
  }

  private static String config(List<Route> routes, Map<String, Integer> ports) {
    StringBuilder cfg = new StringBuilder("""
        global
          nbthread 1
          maxconn 256
        defaults
          mode tcp
          timeout connect 5s
          timeout client 60s
          timeout server 60s
        """);
    for (Route r : routes) {
      cfg.append("listen ").append(r.name()).append('\n')
          .append("  bind 127.0.0.1:").append(ports.get(r.name())).append('\n')
          .append("  balance roundrobin\n  option redispatch\n  retries 3\n");
      for (int i = 0; i < r.servers().size(); i++) {
        cfg.append("  server gateway").append(i + 1).append(' ').append(r.servers().get(i)).append(' ')
            .append(r.serverOptions()).append('\n');
      }
    }
    return cfg.toString();
  }

  /** {@code haproxy -c -f cfg}: what HAProxy says of a configuration file, and whether it would start with it. */
  public static String check(Path cfg) throws Exception {
    Process p = new ProcessBuilder(executable(), "-c", "-f", cfg.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError("haproxy -c -f " + cfg + " refused it:\n" + out);
    }
    return out;
  }

  private static String executable() {
    return ExternalTool.HAPROXY.path();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /**
   * Waits until the kernel lists every frontend port as listening on 127.0.0.1 (/proc/net/tcp), without
   * connecting: a probe connection would reach the gateway behind and be counted there. False if HAProxy
   * exits first or the time runs out.
   */
  private boolean awaitListening(Duration within) throws Exception {
    Poll.within(within, () -> !process.isAlive() || listening());
    return process.isAlive() && listening();
  }

  /** Whether every route's port is listening on loopback now. */
  private boolean listening() throws IOException {
    List<String> listening = listeningOnLoopback();
    return ports.values().stream().allMatch(p -> listening.contains(String.format(Locale.ROOT, "0100007F:%04X", p)));
  }

  /** local_address of every socket in state 0A (LISTEN) in /proc/net/tcp. */
  private static List<String> listeningOnLoopback() throws IOException {
    List<String> result = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of("/proc/net/tcp"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length > 3 && f[3].equals("0A")) {
        result.add(f[1]);
      }
    }
    return result;
  }

  public int port(String route) {
    return java.util.Optional.ofNullable(ports.get(route)).orElseThrow(() -> new IllegalArgumentException("no route " + route));
  }

  public long pid() {
    return process.pid();
  }

  /** What HAProxy printed (warnings, errors), for a failing test's message. */
  public List<String> output() {
    return List.copyOf(output);
  }

  private void readOutput() {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        output.add(line);
      }
    } catch (IOException e) {
      // the process ended
    }
  }

  /** SIGTERM to its PID, then SIGKILL if it has not gone within 10 s. */
  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
